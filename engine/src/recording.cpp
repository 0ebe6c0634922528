// Recording a plan into the host's command buffer: its bindings checked,
// its ranges' windows and descriptor sets, its passes with the barrier
// between the split path's two (record(), record_backward(); batch.cpp
// records many plans with the same pieces).
#include "recording.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "vksoftmax/context.hpp"
#include "vksoftmax/error.hpp"

namespace vksoftmax {
namespace {

// Error(invalid_argument) "<needs><bytes> bytes" where the plan binds
// `bytes` of `r` (bytes > 0) and `r` is missing or smaller.
void require_buffer(const std::string& needs, const BufferRange& r, uint64_t bytes) {
    if (bytes > 0 && (r.buffer == VK_NULL_HANDLE || r.range < bytes))
        throw Error(ErrorKind::invalid_argument, needs + std::to_string(bytes) + " bytes");
}

// The descriptor set that holds the bindings, from the host's pool, where
// the context has no push descriptors; VK_NULL_HANDLE where it has them.
// One per range, for both of a split plan's passes (their set layouts are
// identically defined).
VkDescriptorSet descriptor_set_for(const Context& ctx, const Plan& plan, const Bindings& bindings) {
    if (ctx.push_descriptors()) return VK_NULL_HANDLE;
    return ctx.descriptor_set(plan.pipeline[0]->set_layout(), bindings, plan.label);
}

}  // namespace

uint64_t binding_bytes(const Plan& plan, uint32_t i) {
    const bool backward = plan.problem.backward;
    const uint64_t third = backward ? plan.tensor_bytes : plan.mask_bytes;          // dy, or the mask
    const uint64_t fourth = backward ? plan.sink_gradient_bytes : plan.sinks_bytes;  // the sink gradient, or the sinks
    const uint64_t bytes[max_bindings] = {plan.tensor_bytes, plan.tensor_bytes, plan.workspace_bytes,
                                          third,             fourth,            backward ? 0 : plan.lse_bytes};
    return bytes[i];
}

Bindings checked_bindings(const Context& ctx, const Plan& plan, const BufferRange& in, const BufferRange& out,
                          const BufferRange& workspace, const AttentionBuffers& attention,
                          const BackwardBuffers& backward) {
    require_buffer("the split path needs a workspace of ", workspace, plan.workspace_bytes);
    require_buffer("the attention mask needs a buffer of ", attention.mask, plan.mask_bytes);
    require_buffer("the attention sinks needs a buffer of ", attention.sinks, plan.sinks_bytes);
    require_buffer("the attention log-sum-exp needs a buffer of ", attention.lse, plan.lse_bytes);
    const bool is_backward = plan.problem.backward;
    if (is_backward) require_buffer("the backward pass needs a gradient dy of ", backward.gradient, plan.tensor_bytes);
    require_buffer("the backward pass of sinks needs a sink gradient of ", backward.sink_gradient,
                   plan.sink_gradient_bytes);
    const uint64_t align = ctx.info().min_storage_buffer_offset_alignment;
    const BufferRange* third = is_backward ? &backward.gradient : &attention.mask;
    const BufferRange* fourth = is_backward ? &backward.sink_gradient : &attention.sinks;
    const BufferRange* given[max_bindings] = {&in, &out, &workspace, third, fourth, &attention.lse};
    for (const BufferRange* r : given)
        if (align && r->offset % align)
            throw Error(ErrorKind::invalid_argument, "buffer offset " + std::to_string(r->offset) +
                                                         " is not a multiple of minStorageBufferOffsetAlignment (" +
                                                         std::to_string(align) + ")");
    if (in.buffer == VK_NULL_HANDLE || out.buffer == VK_NULL_HANDLE)
        throw Error(ErrorKind::invalid_argument, "the input and output need a VkBuffer each");
    if (in.range < plan.tensor_bytes || out.range < plan.tensor_bytes)
        throw Error(ErrorKind::invalid_argument, "input or output range is smaller than the tensor (" +
                                                     std::to_string(plan.tensor_bytes) + " bytes)");

    // An unused binding still needs a valid buffer: the input stands in
    // (the row paths never touch binding 2, nor a module binding 3-5 of an
    // option that is off).
    Bindings b;
    b.count = binding_count(plan.key[0]);
    for (uint32_t i = 0; i < max_bindings; ++i) {
        const uint64_t bytes = binding_bytes(plan, i);
        b.info[i] = bytes ? VkDescriptorBufferInfo{given[i]->buffer, given[i]->offset, bytes}
                          : VkDescriptorBufferInfo{in.buffer, in.offset, plan.tensor_bytes};
    }
    return b;
}

std::vector<RangeCall> range_calls(const Context& ctx, const Plan& plan, const Bindings& whole) {
    const Shape& s = plan.problem.shape;
    const uint64_t slice_bytes = s.axis * s.inner * dtype_size(plan.problem.dtype);
    std::vector<RangeCall> calls;
    for (uint32_t k = 0; k < plan.ranges; ++k) {
        RangeCall c{whole, plan.push};
        if (plan.ranges > 1) {
            const uint64_t outer0 = k * plan.range_outer, outers = std::min(plan.range_outer, s.outer - outer0);
            const VkDescriptorBufferInfo input{whole.info[0].buffer, whole.info[0].offset + outer0 * slice_bytes,
                                               outers * slice_bytes};
            // Bindings the input stands in for (never read) take the range's input window.
            for (uint32_t i = 2; i < c.bindings.count; ++i)
                if (!binding_bytes(plan, i)) c.bindings.info[i] = input;
            c.bindings.info[0] = input;
            c.bindings.info[1] = {whole.info[1].buffer, whole.info[1].offset + outer0 * slice_bytes, outers * slice_bytes};
            // A backward plan's dy is windowed as its y is.
            if (plan.problem.backward)
                c.bindings.info[3] = {whole.info[3].buffer, whole.info[3].offset + outer0 * slice_bytes, outers * slice_bytes};
            if (plan.workspace_bytes)
                c.bindings.info[2] = {whole.info[2].buffer, whole.info[2].offset + k * plan.range_workspace_bytes,
                                      plan.range_workspace_bytes};
            c.push.rows = static_cast<uint32_t>(outers * s.inner);
            c.push.attention.first_row = static_cast<uint32_t>(outer0 * s.inner);
            if (plan.key[0].query_major) set_query_slices(c.push.attention, c.push.rows);
        }
        c.set = descriptor_set_for(ctx, plan, c.bindings);
        calls.push_back(c);
    }
    return calls;
}

void dispatch_pass(const DeviceFunctions& vk, VkCommandBuffer cb, const Plan& plan, uint32_t pass,
                   const std::vector<RangeCall>& calls) {
    for (const RangeCall& c : calls) plan.pipeline[pass]->dispatch(vk, cb, c.bindings, c.set, c.push, plan.groups);
}

void write_timestamp(const DeviceFunctions& vk, VkCommandBuffer cb, const Timestamps& timestamps, uint32_t index) {
    if (timestamps.pool)
        vk.vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, timestamps.pool, timestamps.first + index);
}

VkBufferMemoryBarrier partials_barrier(const Plan& plan, const BufferRange& workspace) {
    VkBufferMemoryBarrier b{VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER};
    b.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
    b.dstAccessMask = VK_ACCESS_SHADER_READ_BIT;
    b.srcQueueFamilyIndex = b.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
    b.buffer = workspace.buffer;
    b.offset = workspace.offset;
    b.size = plan.workspace_bytes;
    return b;
}

namespace {

// record() and record_backward(): the plan's passes over its ranges, with
// the barrier between the split path's two.
void record_passes(const Context& ctx, const Plan& plan, VkCommandBuffer cb, const Bindings& bindings,
                   const BufferRange& workspace, const Timestamps& timestamps) {
    const DeviceFunctions& vk = ctx.vk();
    const std::vector<RangeCall> calls = range_calls(ctx, plan, bindings);
    ctx.begin_label(cb, plan.label);
    write_timestamp(vk, cb, timestamps, 0);
    for (uint32_t p = 0; p < plan.passes; ++p) {
        if (p > 0) {
            // Pass 2 reads the partials pass 1 wrote.
            const VkBufferMemoryBarrier b = partials_barrier(plan, workspace);
            vk.vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0,
                                    0, nullptr, 1, &b, 0, nullptr);
        }
        dispatch_pass(vk, cb, plan, p, calls);
        write_timestamp(vk, cb, timestamps, p + 1);
    }
    ctx.end_label(cb);
}

}  // namespace

void record(const Context& ctx, const Plan& plan, VkCommandBuffer cb, const BufferRange& in, const BufferRange& out,
            const BufferRange& workspace, const Timestamps& timestamps) {
    record(ctx, plan, cb, in, out, workspace, AttentionBuffers{}, timestamps);
}

void record(const Context& ctx, const Plan& plan, VkCommandBuffer cb, const BufferRange& in, const BufferRange& out,
            const BufferRange& workspace, const AttentionBuffers& attention, const Timestamps& timestamps) {
    if (plan.problem.backward)
        throw Error(ErrorKind::invalid_argument, "a backward plan is recorded with record_backward() (it reads dy too)");
    if (plan.passes == 0) return;
    record_passes(ctx, plan, cb, checked_bindings(ctx, plan, in, out, workspace, attention, BackwardBuffers{}),
                  workspace, timestamps);
}

void record_backward(const Context& ctx, const Plan& plan, VkCommandBuffer cb, const BufferRange& y,
                     const BufferRange& dy, const BufferRange& dx, const BufferRange& workspace,
                     const Timestamps& timestamps) {
    record_backward(ctx, plan, cb, y, dy, dx, workspace, BufferRange{}, timestamps);
}

void record_backward(const Context& ctx, const Plan& plan, VkCommandBuffer cb, const BufferRange& y,
                     const BufferRange& dy, const BufferRange& dx, const BufferRange& workspace,
                     const BufferRange& sink_gradient, const Timestamps& timestamps) {
    if (!plan.problem.backward)
        throw Error(ErrorKind::invalid_argument, "record_backward() takes a plan made for Problem::backward");
    if (plan.passes == 0) return;
    record_passes(ctx, plan, cb,
                  checked_bindings(ctx, plan, y, dx, workspace, AttentionBuffers{}, {dy, sink_gradient}), workspace,
                  timestamps);
}

}  // namespace vksoftmax
