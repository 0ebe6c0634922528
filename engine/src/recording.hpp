// What record() and record_batch() share: the checked descriptor ranges
// of one problem, and the barrier between a split plan's passes.
#pragma once
#include <vulkan/vulkan.h>

#include "vksoftmax/functions.hpp"
#include "vksoftmax/plan.hpp"

#include <vector>

namespace vksoftmax {

// Input, output, workspace, and for attention plans mask, sinks and
// log-sum-exp, for backward plans the gradient dy and the sink gradient;
// the input stands in for any the plan does not use.
using Bindings = DescriptorBuffers;

// A backward plan's own buffers: dy (binding 3) and, for a forward with
// sinks, the sink gradient (binding 4).
struct BackwardBuffers {
    BufferRange gradient, sink_gradient;
};

// The plan's bindings, or Error(invalid_argument) for a missing buffer, a
// range smaller than the plan needs or a misaligned offset.
Bindings checked_bindings(const Context& ctx, const Plan& plan, const BufferRange& in, const BufferRange& out,
                          const BufferRange& workspace, const AttentionBuffers& attention,
                          const BackwardBuffers& backward);

// Bytes the plan binds at binding i (DescriptorBuffers' order); 0 where
// the input stands in for a binding the plan does not use.
uint64_t binding_bytes(const Plan& plan, uint32_t i);

// One range of a plan's dispatches (Plan::ranges): the windows of its rows
// in the input, output and workspace (the attention buffers whole), its
// push constants and its descriptor set (VK_NULL_HANDLE with push
// descriptors).
struct RangeCall {
    Bindings bindings;
    PushConstants push;
    VkDescriptorSet set = VK_NULL_HANDLE;
};
std::vector<RangeCall> range_calls(const Context& ctx, const Plan& plan, const Bindings& whole);

// Records pass `pass` of the plan over all its ranges.
void dispatch_pass(const DeviceFunctions& vk, VkCommandBuffer cb, const Plan& plan, uint32_t pass,
                   const std::vector<RangeCall>& calls);

// Timestamp `index` of `timestamps` at the bottom of the pipe, where the
// caller gave a query pool.
void write_timestamp(const DeviceFunctions& vk, VkCommandBuffer cb, const Timestamps& timestamps, uint32_t index);

// Split pass 2 reads the partials pass 1 wrote into the workspace.
VkBufferMemoryBarrier partials_barrier(const Plan& plan, const BufferRange& workspace);

}  // namespace vksoftmax
