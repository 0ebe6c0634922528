// DeviceInfo: what a physical device offers that the plan and the shaders
// depend on, read once; and the list of the devices Vulkan sees.
#pragma once
#include <vulkan/vulkan.h>

#include <cstdint>
#include <string>
#include <vector>

namespace vksoftmax {

// What a physical device offers that the plan and the shaders depend on.
struct DeviceInfo {
    uint32_t index = 0;  // position in vkEnumeratePhysicalDevices
    std::string name;
    std::string driver_name;  // VkPhysicalDeviceDriverProperties, where known
    std::string driver_info;
    VkDriverId driver_id = static_cast<VkDriverId>(0);  // 0 where not known
    uint32_t vendor_id = 0, device_id = 0, driver_version = 0, api_version = 0;
    VkPhysicalDeviceType type = VK_PHYSICAL_DEVICE_TYPE_OTHER;
    uint32_t queue_family = 0;  // a family with compute: the first, or the one asked for
    std::vector<uint32_t> compute_queue_families;  // every family with compute

    uint32_t subgroup_size = 0;  // as reported: shaders read gl_SubgroupSize themselves
    uint32_t min_subgroup_size = 0, max_subgroup_size = 0;  // size control range; 0 without it
    bool subgroup_size_control = false;  // requiredSubgroupSize for compute
    bool compute_full_subgroups = false;
    uint32_t max_workgroup_subgroups = 0;  // maxComputeWorkgroupSubgroups; 0 without size control
    VkSubgroupFeatureFlags subgroup_ops = 0;
    bool subgroup_in_compute = false;
    bool subgroup_arithmetic() const;  // basic + arithmetic in compute
    bool subgroup_shuffle() const;     // and shuffles
    // shaderSubgroupUniformControlFlow: a subgroup that diverged is whole
    // again where the control flow merges, before the next reduction. The
    // shaders rely on it where offered (the core spec does not promise it).
    bool subgroup_uniform_control_flow = false;

    bool storage_16bit = false;  // storageBuffer16BitAccess: fp16 tensors
    bool shader_float16 = false;
    bool push_descriptor = false;
    bool synchronization2 = false;  // Vulkan 1.3's feature: vkCmdPipelineBarrier2
    // vulkanMemoryModel with vulkanMemoryModelDeviceScope: workgroups of one
    // dispatch may hand each other partials (the single-pass path).
    bool memory_model = false;
    bool pipeline_statistics = false;  // VK_KHR_pipeline_executable_properties

    float timestamp_period = 0.f;  // ns per tick
    uint32_t timestamp_valid_bits = 0;  // of the compute family; 0: no timestamps
    bool timestamps() const { return timestamp_valid_bits > 0 && timestamp_period > 0.f; }

    uint64_t max_storage_buffer_range = 0;
    uint64_t min_storage_buffer_offset_alignment = 0;
    uint32_t max_workgroup_count[3] = {0, 0, 0};
    uint32_t max_workgroup_invocations = 0;
    uint32_t max_workgroup_size_x = 0;
    uint32_t max_shared_memory = 0;
    // Multiprocessors (VK_NV_shader_sm_builtins' shaderSMCount); 0 where
    // the device does not say. The single-pass rule sizes its grids by it.
    uint32_t multiprocessors = 0;

    std::string type_name() const;
    std::string vendor_name() const;
    std::string api_string() const;
    std::string subgroup_ops_string() const;
};

// The devices Vulkan sees, in enumeration order, and the index that
// Context picks by default (or -1 if none is usable).
struct DeviceList {
    std::vector<DeviceInfo> devices;
    int default_index = -1;
};
DeviceList list_devices();

// The file names of the Vulkan drivers (ICDs: shared objects that export
// vk_icdGetInstanceProcAddr) mapped in the process now: after a Context
// or list_devices(), the ones the loader found (they stay mapped:
// ContextOptions::keep_drivers_loaded).
std::vector<std::string> loaded_vulkan_drivers();

}  // namespace vksoftmax
