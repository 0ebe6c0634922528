// A pipeline barrier of one global memory barrier, as the engine, the
// bench and the tests record between their transfers, shaders and host
// reads.
#pragma once
#include <vulkan/vulkan.h>

#include "vksoftmax/functions.hpp"

namespace vksoftmax {

// One side of a dependency: pipeline stages and the accesses made in them.
struct BarrierScope {
    VkPipelineStageFlags stages;
    VkAccessFlags access;
};

// Records into `cb` a barrier that makes the accesses of `before` (its
// writes) available and visible to the accesses of `after`.
void memory_barrier(const DeviceFunctions& vk, VkCommandBuffer cb, BarrierScope before, BarrierScope after);

}  // namespace vksoftmax
