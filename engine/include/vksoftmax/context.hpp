// Context: a Vulkan instance, one physical device, its logical device and a
// compute queue, with the device's capabilities read once.
//
// Threads: each Context calls Vulkan through function tables of its own
// (functions.hpp), so contexts, own or adopted, on the same instance or on
// different ones, may be created, used and destroyed from any threads at
// once, as far as vksoftmax goes. Drivers may not be: on NVIDIA
// 580.159.04 (H100), four threads each creating a Context, running a
// softmax and destroying it, all at once, hung (Concurrency.AContextPerThread
// in tests/test_concurrency.cpp); threads creating and destroying Contexts
// with nothing in between crashed or hung even when the creations and
// destructions were made one at a time; creations one at a time with work
// in between, and four threads listing devices at once, ran clean. Not yet
// explained.
//
// On one Context, these are safe from several threads at once: pipeline()
// and make_plan(), record() of a plan into different command buffers,
// submit_and_wait() and run() (they take turns on the queue), and the const
// accessors. Destroying a Context while another thread uses it is not.
#pragma once
#include <vulkan/vulkan.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "vksoftmax/device_info.hpp"
#include "vksoftmax/functions.hpp"
#include "vksoftmax/handle.hpp"

namespace vksoftmax {

class Pipeline;
struct PipelineKey;
struct DescriptorBuffers;

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
    // The queue family the context's queue comes from; it must have
    // compute. Empty: the first family with compute.
    std::optional<uint32_t> queue_family;
    // Keep the Vulkan drivers this context's instance mapped in the process
    // after the context is gone (RTLD_NODELETE), as a process that keeps an
    // instance for its whole life has them. The loader otherwise unmaps a
    // driver with the last instance, and NVIDIA's (580.159.04) then crashes
    // threads that used it as they exit, and can deadlock a vkDestroyDevice
    // beside another thread's vkCreateInstance (README, "Threads"). false:
    // leave unmapping to the loader.
    bool keep_drivers_loaded = true;
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
    bool push_descriptor = false;         // VK_KHR_push_descriptor; without it, descriptor_pool
    bool storage_buffer_16bit = false;    // storageBuffer16BitAccess: fp16 tensors
    bool subgroup_size_control = false;   // subgroupSizeControl (+ computeFullSubgroups)
    bool subgroup_uniform_control_flow = false;  // VK_KHR_shader_subgroup_uniform_control_flow: recommended
    // vulkanMemoryModel and vulkanMemoryModelDeviceScope: long rows in one
    // dispatch (the single-pass path); without them, two dispatches.
    bool vulkan_memory_model = false;
    bool debug_utils = false;  // VK_EXT_debug_utils on the instance: pipelines named, recorded work labelled
    // A blob from Context::pipeline_cache_data() of an earlier run, or empty.
    std::vector<uint8_t> pipeline_cache;
    // Without push descriptors: the host's pool, from which each record
    // allocates one descriptor set (vksm_context_desc::descriptor_pool).
    VkDescriptorPool descriptor_pool = VK_NULL_HANDLE;
};

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
    const DeviceFunctions& vk() const { return vk_; }
    const InstanceFunctions& instance_functions() const { return instance_vk_; }
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

    // How recorded dispatches get their buffers: push descriptors (a
    // Context of its own, or a host that enabled them), else descriptor
    // sets from the host's pool: descriptor_set() allocates one and writes
    // `buffers` into it (serialized on this context; the host must not use
    // the pool meanwhile).
    bool push_descriptors() const { return descriptor_pool_ == VK_NULL_HANDLE; }
    VkDescriptorSet descriptor_set(VkDescriptorSetLayout layout, const DescriptorBuffers& buffers,
                                   const std::string& what) const;

    // The pipeline cache's contents, to hand back through
    // HostDevice::pipeline_cache next time.
    std::vector<uint8_t> pipeline_cache_data() const;
    VkPipelineCache pipeline_cache() const { return cache_.get(); }

    // Validation-layer errors (and warnings about synchronization) seen so
    // far, with the text of the first few.
    uint64_t validation_errors() const { return validation_errors_.load(); }
    bool validation_enabled() const { return static_cast<bool>(messenger_); }
    bool capturing_statistics() const { return capture_statistics_; }

    // Where VK_EXT_debug_utils is enabled on the instance, pipelines carry
    // names and recorded work a label, for RenderDoc, Nsight and the
    // validation layer's messages; elsewhere these do nothing.
    void name_object(VkObjectType type, uint64_t handle, const std::string& name) const;
    void begin_label(VkCommandBuffer cb, const std::string& label) const;
    void end_label(VkCommandBuffer cb) const;
    std::vector<std::string> validation_messages() const;

    // A memory type with all of `want`, preferring one that also has all of
    // `prefer` and none of `avoid`: tensors avoid host-visible (BAR) types,
    // staging avoids device-local ones.
    uint32_t memory_type(uint32_t type_bits, VkMemoryPropertyFlags want, VkMemoryPropertyFlags prefer = 0,
                         VkMemoryPropertyFlags avoid = 0) const;
    const VkPhysicalDeviceMemoryProperties& memory_properties() const { return memory_; }

private:
    void create_messenger();
    void create_device(const ContextOptions& options);
    void create_submission_objects();
    void adopt_device(const HostDevice& host);
    void create_pipeline_cache(const std::vector<uint8_t>& initial);
    static VKAPI_ATTR VkBool32 VKAPI_CALL on_debug_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                           VkDebugUtilsMessageTypeFlagsEXT type,
                                                           const VkDebugUtilsMessengerCallbackDataEXT* data,
                                                           void* user);

    InstanceFunctions instance_vk_{};
    Handle<VkInstance> instance_;
    Handle<VkDebugUtilsMessengerEXT> messenger_;
    VkPhysicalDevice physical_ = VK_NULL_HANDLE;
    Handle<VkDevice> device_;
    DeviceFunctions vk_{};
    VkQueue queue_ = VK_NULL_HANDLE;
    DeviceInfo info_;
    VkPhysicalDeviceMemoryProperties memory_{};
    bool adopted_ = false;
    Handle<VkPipelineCache> cache_;
    Handle<VkCommandPool> pool_;
    Handle<VkFence> fence_;
    std::mutex submit_mutex_;

    std::mutex pipelines_mutex_;
    VkDescriptorPool descriptor_pool_ = VK_NULL_HANDLE;  // the host's (borrowed); null: push descriptors
    mutable std::mutex descriptor_pool_mutex_;
    std::map<std::string, std::unique_ptr<Pipeline>> pipelines_;

    bool capture_statistics_ = false;
    bool debug_utils_ = false;
    std::atomic<uint64_t> validation_errors_{0};
    mutable std::mutex messages_mutex_;
    std::vector<std::string> messages_;
};

}  // namespace vksoftmax
