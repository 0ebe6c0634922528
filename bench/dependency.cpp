#include "dependency.hpp"

#include <string>

#include "vksoftmax/barrier.hpp"
#include "vksoftmax/error.hpp"

namespace vksoftmax::bench {

const char* dependency_name(Dependency d) {
    switch (d) {
        case Dependency::memory_barrier: return "memory barrier";
        case Dependency::buffer_barrier: return "buffer barrier";
        case Dependency::memory_barrier2: return "memory barrier (synchronization2)";
        case Dependency::execution_only: return "execution only";
        case Dependency::event: return "event";
        case Dependency::none: return "none";
    }
    return "?";
}

void compute_to_compute(const Context& ctx, VkCommandBuffer cb) {
    const BarrierScope compute{VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT};
    memory_barrier(ctx.vk(), cb, compute, compute);
}

const std::vector<Dependency>& all_dependencies() {
    static const std::vector<Dependency> list = {Dependency::memory_barrier,  Dependency::buffer_barrier,
                                                 Dependency::memory_barrier2, Dependency::execution_only,
                                                 Dependency::event,           Dependency::none};
    return list;
}

bool can_record(const Context& ctx, Dependency d) {
    if (d == Dependency::memory_barrier2) return ctx.info().synchronization2 && ctx.vk().vkCmdPipelineBarrier2;
    return true;
}

Gaps::Gaps(Context& ctx, Dependency kind, uint32_t gaps, VkBuffer written) : ctx_(ctx), kind_(kind), written_(written) {
    if (!can_record(ctx, kind))
        throw Error(ErrorKind::unsupported, std::string(dependency_name(kind)) + " cannot be recorded on " + ctx.info().name);
    if (kind != Dependency::event) return;
    const DeviceFunctions& vk = ctx.vk();
    VkDevice dev = ctx.device();
    auto destroy = vk.vkDestroyEvent;
    for (uint32_t i = 0; i < gaps; ++i) {
        VkEventCreateInfo ci{VK_STRUCTURE_TYPE_EVENT_CREATE_INFO};
        VkEvent ev = VK_NULL_HANDLE;
        check(vk.vkCreateEvent(dev, &ci, nullptr, &ev), "vkCreateEvent", "bench event " + std::to_string(i));
        events_.emplace_back(ev, [dev, destroy](VkEvent e) { destroy(dev, e, nullptr); });
    }
}

void Gaps::reset_events() const {
    for (const Handle<VkEvent>& ev : events_)
        check(ctx_.vk().vkResetEvent(ctx_.device(), ev.get()), "vkResetEvent", "bench event");
}

void Gaps::record(VkCommandBuffer cb, uint32_t gap) const {
    const DeviceFunctions& vk = ctx_.vk();
    const VkPipelineStageFlags compute = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT,
                       VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT};
    switch (kind_) {
        case Dependency::memory_barrier:
            compute_to_compute(ctx_, cb);
            return;
        case Dependency::buffer_barrier: {
            VkBufferMemoryBarrier b{VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER};
            b.srcAccessMask = mb.srcAccessMask;
            b.dstAccessMask = mb.dstAccessMask;
            b.srcQueueFamilyIndex = b.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
            b.buffer = written_;
            b.size = VK_WHOLE_SIZE;
            vk.vkCmdPipelineBarrier(cb, compute, compute, 0, 0, nullptr, 1, &b, 0, nullptr);
            return;
        }
        case Dependency::memory_barrier2: {
            VkMemoryBarrier2 b{VK_STRUCTURE_TYPE_MEMORY_BARRIER_2};
            b.srcStageMask = b.dstStageMask = VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT;
            b.srcAccessMask = b.dstAccessMask = VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT | VK_ACCESS_2_SHADER_STORAGE_READ_BIT;
            VkDependencyInfo info{VK_STRUCTURE_TYPE_DEPENDENCY_INFO};
            info.memoryBarrierCount = 1;
            info.pMemoryBarriers = &b;
            vk.vkCmdPipelineBarrier2(cb, &info);
            return;
        }
        case Dependency::execution_only:
            vk.vkCmdPipelineBarrier(cb, compute, compute, 0, 0, nullptr, 0, nullptr, 0, nullptr);
            return;
        case Dependency::event: {
            const VkEvent ev = events_.at(gap).get();
            vk.vkCmdSetEvent(cb, ev, compute);
            vk.vkCmdWaitEvents(cb, 1, &ev, compute, compute, 1, &mb, 0, nullptr, 0, nullptr);
            return;
        }
        case Dependency::none: return;
    }
}

}  // namespace vksoftmax::bench
