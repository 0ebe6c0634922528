// A Vulkan instance with its function tables, and the queries made on it
// before a device is chosen. Internal to the engine.
#pragma once
#include <vector>

#include "vksoftmax/device_info.hpp"
#include "vksoftmax/functions.hpp"
#include "vksoftmax/handle.hpp"

namespace vksoftmax {

struct Instance {
    InstanceFunctions vk;
    Handle<VkInstance> handle;
    bool debug_utils = false;  // VK_EXT_debug_utils enabled (with the validation layer)
};

// An instance of the system loader, with the validation layer (and its
// synchronization checks) where asked for and installed; with
// keep_drivers_loaded, the drivers it mapped stay mapped after it
// (drivers_loaded.hpp says why).
Instance create_instance(bool validation, bool synchronization_validation, bool keep_drivers_loaded);

std::vector<VkPhysicalDevice> physical_devices(const InstanceFunctions& vk, VkInstance instance);
DeviceInfo query_info(const InstanceFunctions& vk, VkPhysicalDevice physical_device, uint32_t index);
// Makes `family` the queue family of `info` (its timestamp bits too);
// false where the device has no such family or it has no compute.
bool use_queue_family(const InstanceFunctions& vk, VkPhysicalDevice physical_device, uint32_t family, DeviceInfo& info);
// The device that `selector` names (an index or a part of its name; empty:
// the default), or Error(unsupported) saying why none is usable.
int select_device(const std::vector<DeviceInfo>& devices, const std::string& selector);

}  // namespace vksoftmax
