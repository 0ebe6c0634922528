#include "vksoftmax/run.hpp"

#include <cstring>
#include <memory>
#include <string>

#include "vksoftmax/attention.hpp"
#include "vksoftmax/barrier.hpp"
#include "vksoftmax/buffer.hpp"
#include "vksoftmax/context.hpp"
#include "vksoftmax/error.hpp"
#include "vksoftmax/timer.hpp"

namespace vksoftmax {

namespace {

// An fp32 output besides the tensor (the log-sum-exp, the sink gradient):
// written on the device, poisoned with NaN first where asked, read back.
struct SideOutput {
    std::unique_ptr<Buffer> device, down;
    uint64_t bytes = 0;
    SideOutput(Context& ctx, uint64_t size, const char* what) : bytes(size) {
        if (!bytes) return;
        device = std::make_unique<Buffer>(ctx, bytes, MemoryKind::device, what);
        down = std::make_unique<Buffer>(ctx, bytes, MemoryKind::readback, std::string(what) + " staging");
    }
    BufferRange range() const { return range_or_empty(device.get(), bytes); }
    void poison(const DeviceFunctions& vk, VkCommandBuffer cb) const {
        if (device) vk.vkCmdFillBuffer(cb, device->buffer(), 0, VK_WHOLE_SIZE, nan_fill_word(Dtype::f32));
    }
    void copy_down(const DeviceFunctions& vk, VkCommandBuffer cb) const {
        if (!device) return;
        VkBufferCopy region{0, 0, bytes};
        vk.vkCmdCopyBuffer(cb, device->buffer(), down->buffer(), 1, &region);
    }
    void read(Context& ctx, float* to) const {
        if (!device) return;
        down->invalidate(ctx);
        std::memcpy(to, down->mapped(), bytes);
    }
};

// The attention options' buffers on the device: the mask and sinks
// uploaded from host memory, the log-sum-exp read back.
struct AttentionStaging {
    std::unique_ptr<Buffer> mask, sinks;
    SideOutput lse;
    AttentionStaging(Context& ctx, const Plan& plan, const AttentionData& data)
        : lse(ctx, plan.lse_bytes, "log-sum-exp") {
        // A backward plan's sinks option asks for their gradient, not for sink logits.
        if (!plan.problem.backward) check_attention_data(plan.problem.attention, data);
        // Host-visible buffers the shaders read directly: each is read once.
        if (plan.mask_bytes) {
            const Attention& a = plan.problem.attention;
            const uint64_t elements = attention_layout(plan.problem).mask_elements;
            mask = upload(ctx, data.mask, elements * dtype_size(a.mask_dtype), plan.mask_bytes, "attention mask");
        }
        if (plan.sinks_bytes) sinks = upload(ctx, data.sinks, plan.sinks_bytes, plan.sinks_bytes, "attention sinks");
    }
    // `bytes` of host memory into a buffer of `buffer_bytes` (at least as
    // many; the rest zeroed: a 16-bit mask's last word, mask_buffer_bytes()).
    static std::unique_ptr<Buffer> upload(Context& ctx, const void* data, uint64_t bytes, uint64_t buffer_bytes,
                                          const char* what) {
        auto b = std::make_unique<Buffer>(ctx, buffer_bytes, MemoryKind::upload, what);
        std::memcpy(b->mapped(), data, bytes);
        std::memset(static_cast<char*>(b->mapped()) + bytes, 0, buffer_bytes - bytes);
        b->flush(ctx);
        return b;
    }
    AttentionBuffers buffers(const Plan& plan) const {
        return {range_or_empty(mask.get(), plan.mask_bytes), range_or_empty(sinks.get(), plan.sinks_bytes),
                lse.range()};
    }
};

// A backward plan's gradient dy on the device, uploaded with the input,
// and its sink gradient, read back.
struct GradientStaging {
    std::unique_ptr<Buffer> device, up;
    SideOutput sink_gradient;
    GradientStaging(Context& ctx, const Plan& plan, const void* gradient, const float* sink_gradient_out)
        : sink_gradient(ctx, plan.sink_gradient_bytes, "sink gradient") {
        if (!plan.problem.backward) return;
        if (!gradient) throw Error(ErrorKind::invalid_argument, "run_backward() needs the gradient dy");
        if (plan.sink_gradient_bytes && !sink_gradient_out)
            throw Error(ErrorKind::invalid_argument,
                        "the backward pass of sinks needs memory for the sink gradient (one float per row)");
        device = std::make_unique<Buffer>(ctx, plan.tensor_bytes, MemoryKind::device, "gradient dy");
        up = std::make_unique<Buffer>(ctx, plan.tensor_bytes, MemoryKind::upload, "gradient staging");
        std::memcpy(up->mapped(), gradient, plan.tensor_bytes);
        up->flush(ctx);
    }
};

// One run's tensors on the device and their staging, with the attention
// options' buffers and the gradient's; the input is uploaded to staging.
struct RunBuffers {
    Buffer in, out, up, down;
    std::unique_ptr<Buffer> workspace;
    AttentionStaging staging;
    GradientStaging grad;
    RunBuffers(Context& ctx, const Plan& plan, const void* input, const void* gradient, const AttentionData& attention,
               const float* sink_gradient)
        : in(ctx, plan.tensor_bytes, MemoryKind::device, "input tensor"),
          out(ctx, plan.tensor_bytes, MemoryKind::device, "output tensor"),
          up(ctx, plan.tensor_bytes, MemoryKind::upload, "input staging"),
          down(ctx, plan.tensor_bytes, MemoryKind::readback, "output staging"),
          staging(ctx, plan, attention),
          grad(ctx, plan, gradient, sink_gradient) {
        if (plan.workspace_bytes)
            workspace = std::make_unique<Buffer>(ctx, plan.workspace_bytes, MemoryKind::device, "workspace");
        std::memcpy(up.mapped(), input, plan.tensor_bytes);
        up.flush(ctx);
    }
};

// Before the shaders: the input (and dy) copied from staging, the
// single-pass counters zeroed, the outputs poisoned with NaN where asked;
// then the barrier that makes those transfers visible to the shaders.
void record_uploads(const DeviceFunctions& vk, VkCommandBuffer cb, const Plan& plan, const RunBuffers& b,
                    bool poison_output) {
    VkBufferCopy region{0, 0, plan.tensor_bytes};
    vk.vkCmdCopyBuffer(cb, b.up.buffer(), b.in.buffer(), 1, &region);
    if (b.grad.device) vk.vkCmdCopyBuffer(cb, b.grad.up->buffer(), b.grad.device->buffer(), 1, &region);
    // The single-pass path's counters start at zero.
    if (plan.workspace_zeroed) vk.vkCmdFillBuffer(cb, b.workspace->buffer(), 0, VK_WHOLE_SIZE, 0);
    if (poison_output) {
        vk.vkCmdFillBuffer(cb, b.out.buffer(), 0, VK_WHOLE_SIZE, nan_fill_word(plan.problem.dtype));
        b.staging.lse.poison(vk, cb);
        b.grad.sink_gradient.poison(vk, cb);
    }
    memory_barrier(vk, cb, {VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT},
                   {VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT});
}

// The plan's passes, forward or backward, between the timer's stamps.
void record_passes(Context& ctx, VkCommandBuffer cb, const Plan& plan, const RunBuffers& b, Timer* timer) {
    const VkDeviceSize bytes = plan.tensor_bytes;
    if (timer) timer->reset(cb);
    BufferRange ws = range_or_empty(b.workspace.get(), plan.workspace_bytes);
    const Timestamps timestamps = timer ? Timestamps{timer->pool(), 0} : Timestamps{};
    if (b.grad.device)
        record_backward(ctx, plan, cb, b.in.range(0, bytes), b.grad.device->range(0, bytes), b.out.range(0, bytes), ws,
                        b.grad.sink_gradient.range(), timestamps);
    else
        record(ctx, plan, cb, b.in.range(0, bytes), b.out.range(0, bytes), ws, b.staging.buffers(plan), timestamps);
}

// After the shaders: the barrier to the copies, the outputs copied to
// their staging, and the barrier to the host's reads.
void record_downloads(const DeviceFunctions& vk, VkCommandBuffer cb, const Plan& plan, const RunBuffers& b) {
    memory_barrier(vk, cb, {VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT},
                   {VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT});
    VkBufferCopy region{0, 0, plan.tensor_bytes};
    vk.vkCmdCopyBuffer(cb, b.out.buffer(), b.down.buffer(), 1, &region);
    b.staging.lse.copy_down(vk, cb);
    b.grad.sink_gradient.copy_down(vk, cb);
    memory_barrier(vk, cb, {VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT},
                   {VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT});
}

// run() and run_backward(): `gradient` is dy for a backward problem,
// `sink_gradient` its rows' sink gradient where the forward had sinks.
RunResult run_plan(Context& ctx, const Problem& problem, const void* input, const void* gradient, void* output,
                   const RunOptions& options, const AttentionData& attention, float* sink_gradient = nullptr) {
    RunResult result;
    result.plan = make_plan(ctx, problem, options.plan);
    const Plan& plan = result.plan;
    if (plan.passes == 0) return result;
    RunBuffers buffers(ctx, plan, input, gradient, attention, sink_gradient);
    std::unique_ptr<Timer> timer;
    if (ctx.info().timestamps()) timer = std::make_unique<Timer>(ctx, plan.passes + 1);

    ctx.submit_and_wait([&](VkCommandBuffer cb) {
        record_uploads(ctx.vk(), cb, plan, buffers, options.poison_output);
        record_passes(ctx, cb, plan, buffers, timer.get());
        record_downloads(ctx.vk(), cb, plan, buffers);
    });
    buffers.down.invalidate(ctx);
    std::memcpy(output, buffers.down.mapped(), plan.tensor_bytes);
    buffers.staging.lse.read(ctx, attention.lse);
    buffers.grad.sink_gradient.read(ctx, sink_gradient);

    if (timer) {
        auto ticks = timer->read_ticks();
        result.timed = true;
        for (uint32_t p = 0; p < plan.passes; ++p) result.pass_ns.push_back(timer->ns_between(ticks, p, p + 1));
        result.gpu_ns = timer->ns_between(ticks, 0, plan.passes);
    }
    return result;
}

}  // namespace

RunResult run(Context& ctx, const Problem& problem, const void* input, void* output, const RunOptions& options,
              const AttentionData& attention) {
    if (problem.backward) throw Error(ErrorKind::invalid_argument, "a backward problem runs with run_backward()");
    return run_plan(ctx, problem, input, nullptr, output, options, attention);
}

RunResult run_backward(Context& ctx, const Problem& problem, const void* y, const void* dy, void* dx,
                       const RunOptions& options, float* sink_gradient) {
    if (!problem.backward) throw Error(ErrorKind::invalid_argument, "run_backward() takes a Problem::backward problem");
    return run_plan(ctx, problem, y, dy, dx, options, AttentionData{}, sink_gradient);
}

}  // namespace vksoftmax
