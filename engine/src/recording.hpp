// What record() and record_batch() share: the checked descriptor ranges
// of one problem, and the barrier between a split plan's passes.
#pragma once
#include <vulkan/vulkan.h>

#include "vksoftmax/functions.hpp"
#include "vksoftmax/plan.hpp"

#include <vector>

namespace vksoftmax {

// Input, output, workspace, and for attention plans mask, sinks and
// log-sum-exp; the input stands in for any the plan does not use.
using Bindings = DescriptorBuffers;

// The plan's bindings, or Error(invalid_argument) for a missing buffer, a
// range smaller than the plan needs or a misaligned offset.
Bindings checked_bindings(const Context& ctx, const Plan& plan, const BufferRange& in, const BufferRange& out,
                          const BufferRange& workspace, const AttentionBuffers& attention);

// One range of a plan's dispatches (Plan::ranges): the windows of its rows
// in the input, output and workspace (the attention buffers whole), and
// its push constants.
struct RangeCall {
    Bindings bindings;
    PushConstants push;
};
std::vector<RangeCall> range_calls(const Plan& plan, const Bindings& whole);

// The descriptor set that holds the bindings, from the host's pool, where
// the context has no push descriptors; VK_NULL_HANDLE where it has them.
// One per problem, for both of a split plan's passes (their set layouts
// are identically defined).
VkDescriptorSet descriptor_set_for(const Context& ctx, const Plan& plan, const Bindings& bindings);

// Timestamp `index` of `timestamps` at the bottom of the pipe, where the
// caller gave a query pool.
void write_timestamp(const DeviceFunctions& vk, VkCommandBuffer cb, const Timestamps& timestamps, uint32_t index);

// Split pass 2 reads the partials pass 1 wrote into the workspace.
VkBufferMemoryBarrier partials_barrier(const Plan& plan, const BufferRange& workspace);

}  // namespace vksoftmax
