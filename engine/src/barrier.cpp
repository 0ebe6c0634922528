#include "vksoftmax/barrier.hpp"

namespace vksoftmax {

void memory_barrier(const DeviceFunctions& vk, VkCommandBuffer cb, BarrierScope before, BarrierScope after) {
    const VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, before.access, after.access};
    vk.vkCmdPipelineBarrier(cb, before.stages, after.stages, 0, 1, &barrier, 0, nullptr, 0, nullptr);
}

}  // namespace vksoftmax
