#include "vksoftmax/run.hpp"

#include <cstring>
#include <memory>

#include "vksoftmax/buffer.hpp"
#include "vksoftmax/context.hpp"
#include "vksoftmax/timer.hpp"

namespace vksoftmax {

RunResult run(Context& ctx, const Problem& problem, const void* input, void* output, const RunOptions& options) {
    RunResult result;
    result.plan = make_plan(ctx, problem, options.plan);
    const Plan& plan = result.plan;
    if (plan.passes == 0) return result;
    const DeviceFunctions& vk = ctx.vk();
    const VkDeviceSize bytes = plan.tensor_bytes;

    Buffer in(ctx, bytes, MemoryKind::device, "input tensor");
    Buffer out(ctx, bytes, MemoryKind::device, "output tensor");
    std::unique_ptr<Buffer> workspace;
    if (plan.workspace_bytes) workspace = std::make_unique<Buffer>(ctx, plan.workspace_bytes, MemoryKind::device, "workspace");
    Buffer up(ctx, bytes, MemoryKind::upload, "input staging");
    Buffer down(ctx, bytes, MemoryKind::readback, "output staging");
    std::memcpy(up.mapped(), input, bytes);
    up.flush(ctx);

    std::unique_ptr<Timer> timer;
    if (ctx.info().timestamps()) timer = std::make_unique<Timer>(ctx, plan.passes + 1);

    ctx.submit_and_wait([&](VkCommandBuffer cb) {
        VkBufferCopy region{0, 0, bytes};
        vk.vkCmdCopyBuffer(cb, up.buffer(), in.buffer(), 1, &region);
        // The single-pass path's counters start at zero.
        if (plan.workspace_zeroed) vk.vkCmdFillBuffer(cb, workspace->buffer(), 0, VK_WHOLE_SIZE, 0);
        if (options.poison_output) vk.vkCmdFillBuffer(cb, out.buffer(), 0, VK_WHOLE_SIZE, nan_fill_word(problem.dtype));
        VkMemoryBarrier to_shader{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, VK_ACCESS_TRANSFER_WRITE_BIT,
                                  VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT};
        vk.vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1,
                                &to_shader, 0, nullptr, 0, nullptr);
        if (timer) timer->reset(cb);
        BufferRange ws = workspace ? BufferRange{workspace->buffer(), 0, plan.workspace_bytes} : BufferRange{};
        record(ctx, plan, cb, {in.buffer(), 0, bytes}, {out.buffer(), 0, bytes}, ws,
               timer ? Timestamps{timer->pool(), 0} : Timestamps{});
        VkMemoryBarrier to_copy{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, VK_ACCESS_SHADER_WRITE_BIT,
                                VK_ACCESS_TRANSFER_READ_BIT};
        vk.vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1,
                                &to_copy, 0, nullptr, 0, nullptr);
        vk.vkCmdCopyBuffer(cb, out.buffer(), down.buffer(), 1, &region);
        VkMemoryBarrier to_host{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, VK_ACCESS_TRANSFER_WRITE_BIT,
                                VK_ACCESS_HOST_READ_BIT};
        vk.vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &to_host, 0,
                                nullptr, 0, nullptr);
    });
    down.invalidate(ctx);
    std::memcpy(output, down.mapped(), bytes);

    if (timer) {
        auto ticks = timer->read_ticks();
        result.timed = true;
        for (uint32_t p = 0; p < plan.passes; ++p) result.pass_ns.push_back(timer->ns_between(ticks, p, p + 1));
        result.gpu_ns = timer->ns_between(ticks, 0, plan.passes);
    }
    return result;
}

}  // namespace vksoftmax
