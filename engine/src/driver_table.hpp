// A rule's table of the drivers on which a choice was measured and
// checked, each with the reason its reports give (nonfinite_rule(),
// subgroup_max_rule(), tile_loads_rule(), row_fetch_rule(),
// row_shares_rule()).
#pragma once
#include <vulkan/vulkan.h>

#include <cstddef>

#include "vksoftmax/device_info.hpp"

namespace vksoftmax {

struct DriverReason {
    VkDriverId driver;
    const char* reason;
};

// The reason `device`'s driver has in `table`, or null where it has none.
template <size_t N>
const char* driver_reason(const DeviceInfo& device, const DriverReason (&table)[N]) {
    for (const DriverReason& entry : table)
        if (entry.driver == device.driver_id) return entry.reason;
    return nullptr;
}

}  // namespace vksoftmax
