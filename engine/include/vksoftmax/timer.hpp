// Timer: GPU timestamps in a query pool, read back as nanoseconds using the
// device's timestampPeriod and masked to its timestampValidBits.
#pragma once
#include <vulkan/vulkan.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "vksoftmax/handle.hpp"

namespace vksoftmax {

class Context;
struct DeviceFunctions;

class Timer {
public:
    // Throws Error(unsupported) where the compute queue has no timestamps;
    // check DeviceInfo::timestamps() first to report "no timing" instead.
    Timer(Context& ctx, uint32_t slots);
    uint32_t slots() const { return slots_; }
    VkQueryPool pool() const { return pool_.get(); }
    // Must be recorded before the first stamp of each use.
    void reset(VkCommandBuffer cb) const;
    void stamp(VkCommandBuffer cb, uint32_t slot) const;
    // Nanoseconds between slot a and slot b, once the work has completed.
    std::vector<uint64_t> read_ticks() const;
    double ns_between(const std::vector<uint64_t>& ticks, uint32_t a, uint32_t b) const;

private:
    const DeviceFunctions* vk_;
    VkDevice device_;
    uint32_t slots_;
    double period_ns_;
    uint64_t mask_;
    Handle<VkQueryPool> pool_;
};

}  // namespace vksoftmax
