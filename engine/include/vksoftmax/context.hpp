// Context: a Vulkan instance, one physical device, its logical device and a
// compute queue, with the device's capabilities read once.
#pragma once
#include <volk.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "vksoftmax/handle.hpp"

namespace vksoftmax {

class Pipeline;
struct PipelineKey;

// What a physical device offers that the plan and the shaders depend on.
struct DeviceInfo {
    uint32_t index = 0;  // position in vkEnumeratePhysicalDevices
    std::string name;
    std::string driver_name;  // VkPhysicalDeviceDriverProperties, where known
    std::string driver_info;
    uint32_t vendor_id = 0, device_id = 0, driver_version = 0, api_version = 0;
    VkPhysicalDeviceType type = VK_PHYSICAL_DEVICE_TYPE_OTHER;
    uint32_t queue_family = 0;  // a family with compute

    uint32_t subgroup_size = 0;  // as reported: shaders read gl_SubgroupSize themselves
    uint32_t min_subgroup_size = 0, max_subgroup_size = 0;  // size control range; 0 without it
    bool subgroup_size_control = false;  // requiredSubgroupSize for compute
    bool compute_full_subgroups = false;
    uint32_t max_workgroup_subgroups = 0;  // maxComputeWorkgroupSubgroups; 0 without size control
    VkSubgroupFeatureFlags subgroup_ops = 0;
    bool subgroup_in_compute = false;
    bool subgroup_arithmetic() const;  // basic + arithmetic in compute
    // shaderSubgroupUniformControlFlow: a subgroup that diverged is whole
    // again where the control flow merges, before the next reduction. The
    // shaders rely on it where offered (the core spec does not promise it).
    bool subgroup_uniform_control_flow = false;

    bool storage_16bit = false;  // storageBuffer16BitAccess: fp16 tensors
    bool shader_float16 = false;
    bool push_descriptor = false;
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

    std::string type_name() const;
    std::string vendor_name() const;
    std::string api_string() const;
    std::string subgroup_ops_string() const;
};

struct ContextOptions {
    // A device index, or a case-insensitive part of its name. Empty: the
    // first discrete GPU, else integrated, virtual, CPU (in that order).
    std::string device;
    // Enable VK_LAYER_KHRONOS_validation (when installed) and count the
    // errors it reports; see Context::validation_errors().
    bool validation = false;
    bool synchronization_validation = false;
    // Capture the driver's per-pipeline statistics (registers, spills...)
    // where VK_KHR_pipeline_executable_properties is offered; see
    // Pipeline::statistics(). For tuning: it may slow pipeline creation.
    bool capture_statistics = false;
    // Enable VK_KHR_shader_subgroup_uniform_control_flow where offered (the
    // shaders are then promised whole subgroups after a branch). false:
    // run the modules meant for devices without it, e.g. to check them.
    bool subgroup_uniform_control_flow = true;
};

// A host application's own Vulkan objects, for a Context that records into
// its command buffers (see vksoftmax.h). The host keeps ownership: the
// Context never destroys them and creates no queue, pool or fence.
struct HostDevice {
    VkInstance instance = VK_NULL_HANDLE;
    VkPhysicalDevice physical_device = VK_NULL_HANDLE;
    VkDevice device = VK_NULL_HANDLE;
    uint32_t queue_family = 0;  // where the host will submit the recorded work
    PFN_vkGetInstanceProcAddr get_instance_proc_addr = nullptr;  // the host's loader entry
    // What the host enabled on `device` (vksoftmax cannot see it):
    bool push_descriptor = false;         // VK_KHR_push_descriptor: required
    bool storage_buffer_16bit = false;    // storageBuffer16BitAccess: fp16 tensors
    bool subgroup_size_control = false;   // subgroupSizeControl (+ computeFullSubgroups)
    bool subgroup_uniform_control_flow = false;  // VK_KHR_shader_subgroup_uniform_control_flow: recommended
    // A blob from Context::pipeline_cache_data() of an earlier run, or empty.
    std::vector<uint8_t> pipeline_cache;
};

// The devices Vulkan sees, in enumeration order, and the index that
// Context picks by default (or -1 if none is usable).
struct DeviceList {
    std::vector<DeviceInfo> devices;
    int default_index = -1;
};
DeviceList list_devices();

class Context {
public:
    explicit Context(const ContextOptions& options = {});
    // Adopts the host's device. Throws Error(unsupported) naming every
    // feature vksoftmax needs that the host did not enable.
    explicit Context(const HostDevice& host);
    ~Context();
    Context(const Context&) = delete;
    Context& operator=(const Context&) = delete;

    const DeviceInfo& info() const { return info_; }
    const VolkDeviceTable& vk() const { return vk_; }
    VkInstance instance() const { return instance_.get(); }
    VkPhysicalDevice physical_device() const { return physical_; }
    VkDevice device() const { return device_.get(); }
    VkQueue queue() const { return queue_; }

    // The pipeline of one shader variant, created on first use and kept.
    // Safe to call from several threads.
    const Pipeline& pipeline(const PipelineKey& key);

    // Records with `record`, submits to the queue and waits for it. Only on
    // a Context that owns its device: an adopted one submits nothing.
    void submit_and_wait(const std::function<void(VkCommandBuffer)>& record);
    bool adopted() const { return adopted_; }

    // The pipeline cache's contents, to hand back through
    // HostDevice::pipeline_cache next time.
    std::vector<uint8_t> pipeline_cache_data() const;
    VkPipelineCache pipeline_cache() const { return cache_.get(); }

    // Validation-layer errors (and warnings about synchronization) seen so
    // far, with the text of the first few.
    uint64_t validation_errors() const { return validation_errors_.load(); }
    bool validation_enabled() const { return static_cast<bool>(messenger_); }
    bool capturing_statistics() const { return capture_statistics_; }
    std::vector<std::string> validation_messages() const;

    // A memory type with all of `want`, preferring one that also has all of
    // `prefer` and none of `avoid`: tensors avoid host-visible (BAR) types,
    // staging avoids device-local ones.
    uint32_t memory_type(uint32_t type_bits, VkMemoryPropertyFlags want, VkMemoryPropertyFlags prefer = 0,
                         VkMemoryPropertyFlags avoid = 0) const;
    const VkPhysicalDeviceMemoryProperties& memory_properties() const { return memory_; }

private:
    void create_pipeline_cache(const std::vector<uint8_t>& initial);
    static VKAPI_ATTR VkBool32 VKAPI_CALL on_debug_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                           VkDebugUtilsMessageTypeFlagsEXT type,
                                                           const VkDebugUtilsMessengerCallbackDataEXT* data,
                                                           void* user);

    Handle<VkInstance> instance_;
    Handle<VkDebugUtilsMessengerEXT> messenger_;
    VkPhysicalDevice physical_ = VK_NULL_HANDLE;
    Handle<VkDevice> device_;
    VolkDeviceTable vk_{};
    VkQueue queue_ = VK_NULL_HANDLE;
    DeviceInfo info_;
    VkPhysicalDeviceMemoryProperties memory_{};
    bool adopted_ = false;
    Handle<VkPipelineCache> cache_;
    Handle<VkCommandPool> pool_;
    Handle<VkFence> fence_;
    std::mutex submit_mutex_;

    std::mutex pipelines_mutex_;
    std::map<std::string, std::unique_ptr<Pipeline>> pipelines_;

    bool capture_statistics_ = false;
    std::atomic<uint64_t> validation_errors_{0};
    mutable std::mutex messages_mutex_;
    std::vector<std::string> messages_;
};

}  // namespace vksoftmax
