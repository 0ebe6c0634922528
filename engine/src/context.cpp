#include "vksoftmax/context.hpp"

#include <cstring>

#include "instance.hpp"
#include "vksoftmax/error.hpp"
#include "vksoftmax/pipeline.hpp"

namespace vksoftmax {

Context::Context(const ContextOptions& options) {
    Instance instance = create_instance(options.validation, options.synchronization_validation, options.keep_drivers_loaded);
    instance_vk_ = instance.vk;
    instance_ = std::move(instance.handle);
    if (instance.debug_utils) create_messenger();
    debug_utils_ = instance.debug_utils;

    auto pds = physical_devices(instance_vk_, instance_.get());
    std::vector<DeviceInfo> infos;
    for (uint32_t i = 0; i < pds.size(); ++i) infos.push_back(query_info(instance_vk_, pds[i], i));
    int chosen = select_device(infos, options.device);
    physical_ = pds[chosen];
    info_ = infos[chosen];
    info_.subgroup_uniform_control_flow = info_.subgroup_uniform_control_flow && options.subgroup_uniform_control_flow;
    if (options.queue_family && !use_queue_family(instance_vk_, physical_, *options.queue_family, info_))
        throw Error(ErrorKind::invalid_argument,
                    info_.name + " has no queue family " + std::to_string(*options.queue_family) + " with compute");
    instance_vk_.vkGetPhysicalDeviceMemoryProperties(physical_, &memory_);
    create_device(options);
    create_pipeline_cache({});
    create_submission_objects();
}

void Context::create_messenger() {
    VkDebugUtilsMessengerCreateInfoEXT mci{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    mci.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT;
    mci.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT;
    mci.pfnUserCallback = &Context::on_debug_message;
    mci.pUserData = this;
    if (!instance_vk_.vkCreateDebugUtilsMessengerEXT)
        throw Error(ErrorKind::unsupported, "VK_EXT_debug_utils is enabled but vkCreateDebugUtilsMessengerEXT is missing");
    VkDebugUtilsMessengerEXT m = VK_NULL_HANDLE;
    check(instance_vk_.vkCreateDebugUtilsMessengerEXT(instance_.get(), &mci, nullptr, &m),
          "vkCreateDebugUtilsMessengerEXT", "validation messenger");
    VkInstance inst = instance_.get();
    auto destroy = instance_vk_.vkDestroyDebugUtilsMessengerEXT;
    messenger_ = Handle<VkDebugUtilsMessengerEXT>(m, [inst, destroy](VkDebugUtilsMessengerEXT x) {
        if (destroy) destroy(inst, x, nullptr);
    });
}

namespace {

// The extensions and features a device created by vksoftmax gets, each
// where the device offers it, chained for vkCreateDevice (the chain points
// into the object, which therefore stays where it is made).
struct EnabledFeatures {
    std::vector<const char*> extensions = {VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME};
    VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    VkPhysicalDevice16BitStorageFeatures storage_16bit{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
    VkPhysicalDeviceSubgroupSizeControlFeatures size_control{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES};
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR executable_properties{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
    VkPhysicalDeviceShaderSubgroupUniformControlFlowFeaturesKHR uniform_control_flow{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SUBGROUP_UNIFORM_CONTROL_FLOW_FEATURES_KHR};
    VkPhysicalDeviceSynchronization2Features synchronization2{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SYNCHRONIZATION_2_FEATURES};
    VkPhysicalDeviceVulkanMemoryModelFeatures memory_model{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES};

    EnabledFeatures(const DeviceInfo& info, bool capture_statistics) {
        const bool v13 = info.api_version >= VK_API_VERSION_1_3;
        storage_16bit.storageBuffer16BitAccess = info.storage_16bit;
        features.pNext = &storage_16bit;
        next_ = &storage_16bit.pNext;
        if (info.subgroup_size_control) {
            if (!v13) extensions.push_back(VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
            size_control.subgroupSizeControl = VK_TRUE;
            size_control.computeFullSubgroups = info.compute_full_subgroups;
            chain(&size_control, &size_control.pNext);
        }
        if (capture_statistics) {
            extensions.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
            executable_properties.pipelineExecutableInfo = VK_TRUE;
            chain(&executable_properties, &executable_properties.pNext);
        }
        if (info.subgroup_uniform_control_flow) {
            extensions.push_back(VK_KHR_SHADER_SUBGROUP_UNIFORM_CONTROL_FLOW_EXTENSION_NAME);
            uniform_control_flow.shaderSubgroupUniformControlFlow = VK_TRUE;
            chain(&uniform_control_flow, &uniform_control_flow.pNext);
        }
        // Not used by recording (record() keeps vkCmdPipelineBarrier, which
        // every host has); enabled so that the bench can time its barriers
        // against the ones it records (bench/NOTES.md).
        if (info.synchronization2) {
            synchronization2.synchronization2 = VK_TRUE;
            chain(&synchronization2, &synchronization2.pNext);
        }
        // The single-pass path's workgroups hand each other partials.
        if (info.memory_model) {
            if (info.api_version < VK_API_VERSION_1_2) extensions.push_back(VK_KHR_VULKAN_MEMORY_MODEL_EXTENSION_NAME);
            memory_model.vulkanMemoryModel = VK_TRUE;
            memory_model.vulkanMemoryModelDeviceScope = VK_TRUE;
            chain(&memory_model, &memory_model.pNext);
        }
    }
    EnabledFeatures(const EnabledFeatures&) = delete;
    EnabledFeatures& operator=(const EnabledFeatures&) = delete;

private:
    void** next_ = nullptr;  // the chain's last pNext
    void chain(void* feature, void** its_next) {
        *next_ = feature;
        next_ = its_next;
    }
};

}  // namespace

// The logical device with one compute queue and what the plan uses of the
// device's features.
void Context::create_device(const ContextOptions& options) {
    capture_statistics_ = options.capture_statistics && info_.pipeline_statistics;
    const EnabledFeatures enabled(info_, capture_statistics_);

    float priority = 1.f;
    VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    qci.queueFamilyIndex = info_.queue_family;
    qci.queueCount = 1;
    qci.pQueuePriorities = &priority;
    VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    dci.pNext = &enabled.features;
    dci.queueCreateInfoCount = 1;
    dci.pQueueCreateInfos = &qci;
    dci.enabledExtensionCount = static_cast<uint32_t>(enabled.extensions.size());
    dci.ppEnabledExtensionNames = enabled.extensions.data();
    VkDevice device = VK_NULL_HANDLE;
    check(instance_vk_.vkCreateDevice(physical_, &dci, nullptr, &device), "vkCreateDevice", info_.name);
    // Owned before anything else can throw: vkDestroyDevice comes from the
    // same instance table the device's other functions are loaded from.
    auto destroy_device = reinterpret_cast<PFN_vkDestroyDevice>(instance_vk_.vkGetDeviceProcAddr(device, "vkDestroyDevice"));
    device_ = Handle<VkDevice>(device, [destroy_device](VkDevice d) {
        if (destroy_device) destroy_device(d, nullptr);
    });
    vk_ = load_device_functions(instance_vk_, device);
    vk_.vkGetDeviceQueue(device, info_.queue_family, 0, &queue_);
}

// The command pool and fence of submit_and_wait().
void Context::create_submission_objects() {
    VkDevice device = device_.get();
    VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT | VK_COMMAND_POOL_CREATE_TRANSIENT_BIT;
    pci.queueFamilyIndex = info_.queue_family;
    VkCommandPool pool = VK_NULL_HANDLE;
    check(vk_.vkCreateCommandPool(device, &pci, nullptr, &pool), "vkCreateCommandPool", "context command pool");
    auto destroy_pool = vk_.vkDestroyCommandPool;
    pool_ = Handle<VkCommandPool>(pool, [device, destroy_pool](VkCommandPool p) { destroy_pool(device, p, nullptr); });
    VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkFence fence = VK_NULL_HANDLE;
    check(vk_.vkCreateFence(device, &fci, nullptr, &fence), "vkCreateFence", "context fence");
    auto destroy_fence = vk_.vkDestroyFence;
    fence_ = Handle<VkFence>(fence, [device, destroy_fence](VkFence f) { destroy_fence(device, f, nullptr); });
}

Context::Context(const HostDevice& host) : adopted_(true) {
    if (!host.instance || !host.physical_device || !host.device || !host.get_instance_proc_addr)
        throw Error(ErrorKind::invalid_argument,
                    "a host device needs its VkInstance, VkPhysicalDevice, VkDevice and vkGetInstanceProcAddr");
    // The host's loader entry, into this context's own tables: neither the
    // system loader nor any other context is touched.
    instance_vk_ = load_instance_functions(host.get_instance_proc_addr, host.instance);
    instance_ = Handle<VkInstance>(host.instance, nullptr);  // borrowed: never destroyed here
    if (host.debug_utils && !(instance_vk_.vkSetDebugUtilsObjectNameEXT && instance_vk_.vkCmdBeginDebugUtilsLabelEXT &&
                              instance_vk_.vkCmdEndDebugUtilsLabelEXT))
        throw Error(ErrorKind::unsupported,
                    "debug_utils is set, but the instance's vkGetInstanceProcAddr gives no VK_EXT_debug_utils commands");
    debug_utils_ = host.debug_utils;
    physical_ = host.physical_device;
    adopt_device(host);
    device_ = Handle<VkDevice>(host.device, nullptr);  // borrowed
    vk_ = load_device_functions(instance_vk_, host.device);
    create_pipeline_cache(host.pipeline_cache);
}

// The host's device as its DeviceInfo: only what the host enabled counts.
// Throws Error(unsupported) naming every required feature it lacks.
void Context::adopt_device(const HostDevice& host) {
    auto pds = physical_devices(instance_vk_, host.instance);
    uint32_t index = 0;
    for (uint32_t i = 0; i < pds.size(); ++i)
        if (pds[i] == host.physical_device) index = i;
    info_ = query_info(instance_vk_, host.physical_device, index);
    std::string missing;
    if (!use_queue_family(instance_vk_, physical_, host.queue_family, info_))
        missing += "; queue family " + std::to_string(host.queue_family) + " has no compute";
    if (info_.api_version < VK_API_VERSION_1_1) missing += "; Vulkan 1.1";
    if (!host.push_descriptor && host.descriptor_pool == VK_NULL_HANDLE)
        missing += info_.push_descriptor
                       ? "; VK_KHR_push_descriptor (supported: enable it on the VkDevice), or a descriptor pool"
                       : "; a descriptor pool for its descriptor sets (VK_KHR_push_descriptor is not supported by this device)";
    if (!host.push_descriptor) descriptor_pool_ = host.descriptor_pool;
    if (!missing.empty())
        throw Error(ErrorKind::unsupported, "vksoftmax needs on " + info_.name + ":" + missing.substr(1));
    info_.storage_16bit = info_.storage_16bit && host.storage_buffer_16bit;
    if (!host.subgroup_size_control) {
        info_.subgroup_size_control = false;
        info_.compute_full_subgroups = false;
        info_.max_workgroup_subgroups = 0;
    }
    info_.subgroup_uniform_control_flow = info_.subgroup_uniform_control_flow && host.subgroup_uniform_control_flow;
    info_.synchronization2 = false;  // the host's to enable; recording never uses it
    info_.memory_model = info_.memory_model && host.vulkan_memory_model;
    instance_vk_.vkGetPhysicalDeviceMemoryProperties(physical_, &memory_);
}

void Context::create_pipeline_cache(const std::vector<uint8_t>& initial) {
    VkPipelineCacheCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
    ci.initialDataSize = initial.size();
    ci.pInitialData = initial.empty() ? nullptr : initial.data();
    VkPipelineCache cache = VK_NULL_HANDLE;
    // A blob from another driver or device is ignored by the driver (the
    // header check), which then starts empty: not an error.
    check(vk_.vkCreatePipelineCache(device_.get(), &ci, nullptr, &cache), "vkCreatePipelineCache", "vksoftmax pipeline cache");
    VkDevice dev = device_.get();
    auto destroy = vk_.vkDestroyPipelineCache;
    cache_ = Handle<VkPipelineCache>(cache, [dev, destroy](VkPipelineCache c) { destroy(dev, c, nullptr); });
}

std::vector<uint8_t> Context::pipeline_cache_data() const {
    size_t size = 0;
    check(vk_.vkGetPipelineCacheData(device_.get(), cache_.get(), &size, nullptr), "vkGetPipelineCacheData",
          "vksoftmax pipeline cache");
    std::vector<uint8_t> data(size);
    check(vk_.vkGetPipelineCacheData(device_.get(), cache_.get(), &size, data.data()), "vkGetPipelineCacheData",
          "vksoftmax pipeline cache");
    data.resize(size);
    return data;
}

Context::~Context() {
    // An adopted device is the host's to synchronize: no wait behind its back.
    // The wait's result is left unread: a destructor cannot throw, and a
    // lost device is torn down all the same.
    if (device_ && !adopted_) (void)vk_.vkDeviceWaitIdle(device_.get());
    // Members are destroyed in reverse order: pipelines, fence and pool go
    // before the device, the device before the instance.
    pipelines_.clear();
    cache_.reset();
    fence_.reset();
    pool_.reset();
    device_.reset();
}

const Pipeline& Context::pipeline(const PipelineKey& key) {
    std::lock_guard<std::mutex> lock(pipelines_mutex_);
    std::string id = key.id();
    auto it = pipelines_.find(id);
    if (it == pipelines_.end()) it = pipelines_.emplace(id, std::make_unique<Pipeline>(*this, key)).first;
    return *it->second;
}

void Context::submit_and_wait(const std::function<void(VkCommandBuffer)>& record) {
    if (adopted_)
        throw Error(ErrorKind::invalid_argument, "a Context on a host's device submits nothing: record into the host's command buffer");
    std::lock_guard<std::mutex> lock(submit_mutex_);
    VkDevice dev = device_.get();
    VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ai.commandPool = pool_.get();
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    VkCommandBuffer cb = VK_NULL_HANDLE;
    check(vk_.vkAllocateCommandBuffers(dev, &ai, &cb), "vkAllocateCommandBuffers", "context command pool");
    VkCommandPool pool = pool_.get();
    auto free_cb = vk_.vkFreeCommandBuffers;
    Handle<VkCommandBuffer> owned(cb, [dev, pool, free_cb](VkCommandBuffer c) { free_cb(dev, pool, 1, &c); });

    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    check(vk_.vkBeginCommandBuffer(cb, &bi), "vkBeginCommandBuffer", "context command buffer");
    record(cb);
    check(vk_.vkEndCommandBuffer(cb), "vkEndCommandBuffer", "context command buffer");

    VkFence fence = fence_.get();
    check(vk_.vkResetFences(dev, 1, &fence), "vkResetFences", "context fence");
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cb;
    check(vk_.vkQueueSubmit(queue_, 1, &si, fence), "vkQueueSubmit", "compute queue");
    check(vk_.vkWaitForFences(dev, 1, &fence, VK_TRUE, UINT64_MAX), "vkWaitForFences", "context fence");
}

std::vector<std::string> Context::validation_messages() const {
    std::lock_guard<std::mutex> lock(messages_mutex_);
    return messages_;
}

uint32_t Context::memory_type(uint32_t type_bits, VkMemoryPropertyFlags want, VkMemoryPropertyFlags prefer,
                              VkMemoryPropertyFlags avoid) const {
    // Score: has `prefer` (2) + lacks `avoid` (1); the first best type wins.
    uint32_t best = UINT32_MAX;
    int best_score = -1;
    for (uint32_t i = 0; i < memory_.memoryTypeCount; ++i) {
        const VkMemoryPropertyFlags f = memory_.memoryTypes[i].propertyFlags;
        if (!(type_bits & (1u << i)) || (f & want) != want) continue;
        const int score = ((f & prefer) == prefer ? 2 : 0) + ((f & avoid) == 0 ? 1 : 0);
        if (score > best_score) {
            best = i;
            best_score = score;
        }
    }
    if (best == UINT32_MAX) throw Error(ErrorKind::unsupported, "no memory type with the properties needed on " + info_.name);
    return best;
}

VKAPI_ATTR VkBool32 VKAPI_CALL Context::on_debug_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                         VkDebugUtilsMessageTypeFlagsEXT,
                                                         const VkDebugUtilsMessengerCallbackDataEXT* data,
                                                         void* user) {
    auto* self = static_cast<Context*>(user);
    // Warnings count too when they are synchronization hazards.
    bool counts = (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) ||
                  (data->pMessageIdName && std::strstr(data->pMessageIdName, "SYNC-"));
    if (counts) {
        self->validation_errors_++;
        std::lock_guard<std::mutex> lock(self->messages_mutex_);
        if (self->messages_.size() < 16) self->messages_.push_back(data->pMessage ? data->pMessage : "");
    }
    return VK_FALSE;
}

void Context::name_object(VkObjectType type, uint64_t handle, const std::string& name) const {
    if (!debug_utils_) return;
    VkDebugUtilsObjectNameInfoEXT info{VK_STRUCTURE_TYPE_DEBUG_UTILS_OBJECT_NAME_INFO_EXT};
    info.objectType = type;
    info.objectHandle = handle;
    info.pObjectName = name.c_str();
    check(instance_vk_.vkSetDebugUtilsObjectNameEXT(device_.get(), &info), "vkSetDebugUtilsObjectNameEXT", name);
}

void Context::begin_label(VkCommandBuffer cb, const std::string& label) const {
    if (!debug_utils_) return;
    VkDebugUtilsLabelEXT info{VK_STRUCTURE_TYPE_DEBUG_UTILS_LABEL_EXT};
    info.pLabelName = label.c_str();
    instance_vk_.vkCmdBeginDebugUtilsLabelEXT(cb, &info);
}

void Context::end_label(VkCommandBuffer cb) const {
    if (debug_utils_) instance_vk_.vkCmdEndDebugUtilsLabelEXT(cb);
}

VkDescriptorSet Context::descriptor_set(VkDescriptorSetLayout layout, const DescriptorBuffers& buffers,
                                        const std::string& what) const {
    VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    ai.descriptorPool = descriptor_pool_;
    ai.descriptorSetCount = 1;
    ai.pSetLayouts = &layout;
    VkDescriptorSet set = VK_NULL_HANDLE;
    {
        // vkAllocateDescriptorSets needs the pool externally synchronized:
        // records on several threads take turns here.
        std::lock_guard<std::mutex> lock(descriptor_pool_mutex_);
        check(vk_.vkAllocateDescriptorSets(device_.get(), &ai, &set), "vkAllocateDescriptorSets",
              "the host's descriptor pool, for " + what);
    }
    const auto writes = buffer_writes(buffers, set);
    vk_.vkUpdateDescriptorSets(device_.get(), buffers.count, writes.data(), 0, nullptr);
    return set;
}

}  // namespace vksoftmax
