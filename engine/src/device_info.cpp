#include <algorithm>
#include <cctype>
#include <cstring>

#include "instance.hpp"
#include "vksoftmax/error.hpp"

namespace vksoftmax {
namespace {

bool has_extension(const std::vector<VkExtensionProperties>& exts, const char* name) {
    return std::any_of(exts.begin(), exts.end(),
                       [&](const VkExtensionProperties& e) { return std::strcmp(e.extensionName, name) == 0; });
}

std::vector<VkExtensionProperties> device_extensions(const InstanceFunctions& vk, VkPhysicalDevice pd) {
    uint32_t n = 0;
    check(vk.vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr), "vkEnumerateDeviceExtensionProperties",
          "physical device");
    std::vector<VkExtensionProperties> exts(n);
    check(vk.vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, exts.data()), "vkEnumerateDeviceExtensionProperties",
          "physical device");
    return exts;
}

// What the device's version and extensions offer to query.
struct Offered {
    bool size_control = false, driver_properties = false, float16 = false;
    bool executable_properties = false, uniform_control_flow = false, push_descriptor = false;
    bool synchronization2 = false, memory_model = false;
    bool sm_builtins = false;  // VK_NV_shader_sm_builtins: the multiprocessor count
};

Offered offered(const InstanceFunctions& vk, VkPhysicalDevice pd, uint32_t api_version) {
    const auto exts = device_extensions(vk, pd);
    const bool v12 = api_version >= VK_API_VERSION_1_2, v13 = api_version >= VK_API_VERSION_1_3;
    Offered o;
    o.size_control = v13 || has_extension(exts, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
    o.driver_properties = v12 || has_extension(exts, VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME);
    o.float16 = v12 || has_extension(exts, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
    o.executable_properties = has_extension(exts, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
    o.uniform_control_flow = has_extension(exts, VK_KHR_SHADER_SUBGROUP_UNIFORM_CONTROL_FLOW_EXTENSION_NAME);
    o.push_descriptor = has_extension(exts, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
    o.synchronization2 = v13;
    o.memory_model = v12 || has_extension(exts, VK_KHR_VULKAN_MEMORY_MODEL_EXTENSION_NAME);
    o.sm_builtins = has_extension(exts, VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME);
    return o;
}

// Names, subgroup properties and limits; the subgroup size control range
// goes to `size_control` (it counts only with the feature, read next).
void read_properties(const InstanceFunctions& vk, VkPhysicalDevice pd, const Offered& o, DeviceInfo& info,
                     VkPhysicalDeviceSubgroupSizeControlProperties& size_control) {
    VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    VkPhysicalDeviceSubgroupProperties sg{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceDriverProperties drv{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceShaderSMBuiltinsPropertiesNV sm{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV};
    size_control = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES};
    props.pNext = &sg;
    void** tail = &sg.pNext;
    if (o.size_control) { *tail = &size_control; tail = &size_control.pNext; }
    if (o.driver_properties) { *tail = &drv; tail = &drv.pNext; }
    if (o.sm_builtins) { *tail = &sm; tail = &sm.pNext; }
    vk.vkGetPhysicalDeviceProperties2(pd, &props);
    if (o.sm_builtins) info.multiprocessors = sm.shaderSMCount;

    info.name = props.properties.deviceName;
    info.vendor_id = props.properties.vendorID;
    info.device_id = props.properties.deviceID;
    info.driver_version = props.properties.driverVersion;
    info.type = props.properties.deviceType;
    if (o.driver_properties) {
        info.driver_name = drv.driverName;
        info.driver_info = drv.driverInfo;
        info.driver_id = drv.driverID;
    }
    info.subgroup_size = sg.subgroupSize;
    info.subgroup_ops = sg.supportedOperations;
    info.subgroup_in_compute = (sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0;
    const VkPhysicalDeviceLimits& L = props.properties.limits;
    info.timestamp_period = L.timestampPeriod;
    info.max_storage_buffer_range = L.maxStorageBufferRange;
    info.min_storage_buffer_offset_alignment = L.minStorageBufferOffsetAlignment;
    for (int i = 0; i < 3; ++i) info.max_workgroup_count[i] = L.maxComputeWorkGroupCount[i];
    info.max_workgroup_invocations = L.maxComputeWorkGroupInvocations;
    info.max_workgroup_size_x = L.maxComputeWorkGroupSize[0];
    info.max_shared_memory = L.maxComputeSharedMemorySize;
}

void read_features(const InstanceFunctions& vk, VkPhysicalDevice pd, const Offered& o,
                   const VkPhysicalDeviceSubgroupSizeControlProperties& size_control, DeviceInfo& info) {
    VkPhysicalDeviceFeatures2 feats{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    VkPhysicalDevice16BitStorageFeatures s16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
    VkPhysicalDeviceSubgroupSizeControlFeatures sgcf{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES};
    VkPhysicalDeviceShaderFloat16Int8Features f16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR pexe{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
    VkPhysicalDeviceShaderSubgroupUniformControlFlowFeaturesKHR ucf{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SUBGROUP_UNIFORM_CONTROL_FLOW_FEATURES_KHR};
    VkPhysicalDeviceSynchronization2Features sync2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SYNCHRONIZATION_2_FEATURES};
    VkPhysicalDeviceVulkanMemoryModelFeatures vmm{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES};
    feats.pNext = &s16;
    void** tail = &s16.pNext;
    if (o.size_control) { *tail = &sgcf; tail = &sgcf.pNext; }
    if (o.float16) { *tail = &f16; tail = &f16.pNext; }
    if (o.executable_properties) { *tail = &pexe; tail = &pexe.pNext; }
    if (o.uniform_control_flow) { *tail = &ucf; tail = &ucf.pNext; }
    if (o.synchronization2) { *tail = &sync2; tail = &sync2.pNext; }
    if (o.memory_model) { *tail = &vmm; tail = &vmm.pNext; }
    vk.vkGetPhysicalDeviceFeatures2(pd, &feats);

    if (o.size_control && sgcf.subgroupSizeControl && (size_control.requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT)) {
        info.subgroup_size_control = true;
        info.compute_full_subgroups = sgcf.computeFullSubgroups;
        info.min_subgroup_size = size_control.minSubgroupSize;
        info.max_subgroup_size = size_control.maxSubgroupSize;
        info.max_workgroup_subgroups = size_control.maxComputeWorkgroupSubgroups;
    }
    info.storage_16bit = s16.storageBuffer16BitAccess;
    info.shader_float16 = o.float16 && f16.shaderFloat16;
    info.pipeline_statistics = o.executable_properties && pexe.pipelineExecutableInfo;
    info.subgroup_uniform_control_flow = o.uniform_control_flow && ucf.shaderSubgroupUniformControlFlow;
    info.synchronization2 = o.synchronization2 && sync2.synchronization2;
    info.memory_model = o.memory_model && vmm.vulkanMemoryModel && vmm.vulkanMemoryModelDeviceScope;
}

std::vector<VkQueueFamilyProperties> queue_families(const InstanceFunctions& vk, VkPhysicalDevice pd) {
    uint32_t count = 0;
    vk.vkGetPhysicalDeviceQueueFamilyProperties(pd, &count, nullptr);
    std::vector<VkQueueFamilyProperties> families(count);
    vk.vkGetPhysicalDeviceQueueFamilyProperties(pd, &count, families.data());
    return families;
}

// Makes `family` of `families` the queue family of `info`, with its
// timestamp bits; false where there is no such family or it has no compute.
bool take_queue_family(const std::vector<VkQueueFamilyProperties>& families, uint32_t family, DeviceInfo& info) {
    if (family >= families.size() || !(families[family].queueFlags & VK_QUEUE_COMPUTE_BIT)) return false;
    info.queue_family = family;
    info.timestamp_valid_bits = families[family].timestampValidBits;
    return true;
}

// Every queue family with compute; the first, and its timestamp bits.
void read_compute_queue(const InstanceFunctions& vk, VkPhysicalDevice pd, DeviceInfo& info) {
    const std::vector<VkQueueFamilyProperties> families = queue_families(vk, pd);
    info.queue_family = UINT32_MAX;
    for (uint32_t i = 0; i < families.size(); ++i)
        if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) info.compute_queue_families.push_back(i);
    if (!info.compute_queue_families.empty()) take_queue_family(families, info.compute_queue_families.front(), info);
}

}  // namespace

bool use_queue_family(const InstanceFunctions& vk, VkPhysicalDevice pd, uint32_t family, DeviceInfo& info) {
    return take_queue_family(queue_families(vk, pd), family, info);
}

DeviceInfo query_info(const InstanceFunctions& vk, VkPhysicalDevice pd, uint32_t index) {
    DeviceInfo info;
    info.index = index;
    VkPhysicalDeviceProperties base{};
    vk.vkGetPhysicalDeviceProperties(pd, &base);
    info.api_version = base.apiVersion;
    const Offered o = offered(vk, pd, base.apiVersion);
    info.push_descriptor = o.push_descriptor;
    VkPhysicalDeviceSubgroupSizeControlProperties size_control{};
    read_properties(vk, pd, o, info, size_control);
    read_features(vk, pd, o, size_control, info);
    read_compute_queue(vk, pd, info);
    return info;
}

namespace {

// Why a device cannot run vksoftmax, or "" if it can.
std::string unusable_reason(const DeviceInfo& d) {
    if (d.api_version < VK_API_VERSION_1_1) return "it supports only Vulkan 1.0";
    if (d.queue_family == UINT32_MAX) return "it has no compute queue";
    if (!d.push_descriptor) return "it lacks VK_KHR_push_descriptor";
    return "";
}

int type_rank(VkPhysicalDeviceType t) {
    switch (t) {
        case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 0;
        case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 1;
        case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
        case VK_PHYSICAL_DEVICE_TYPE_CPU: return 3;
        default: return 4;
    }
}

int default_device(const std::vector<DeviceInfo>& devices) {
    int best = -1;
    for (size_t i = 0; i < devices.size(); ++i) {
        if (!unusable_reason(devices[i]).empty()) continue;
        if (best < 0 || type_rank(devices[i].type) < type_rank(devices[best].type)) best = static_cast<int>(i);
    }
    return best;
}

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

}  // namespace

int select_device(const std::vector<DeviceInfo>& devices, const std::string& selector) {
    if (devices.empty()) throw Error(ErrorKind::unsupported, "no Vulkan device found");
    if (selector.empty()) {
        int i = default_device(devices);
        if (i < 0)
            throw Error(ErrorKind::unsupported,
                        "no usable Vulkan device: " + devices[0].name + ": " + unusable_reason(devices[0]));
        return i;
    }
    int found = -1;
    if (std::all_of(selector.begin(), selector.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
        unsigned long i = std::stoul(selector);
        if (i >= devices.size())
            throw Error(ErrorKind::unsupported, "device index " + selector + " out of range: " +
                                                    std::to_string(devices.size()) + " device(s) found");
        found = static_cast<int>(i);
    } else {
        for (size_t i = 0; i < devices.size() && found < 0; ++i)
            if (lower(devices[i].name).find(lower(selector)) != std::string::npos) found = static_cast<int>(i);
        if (found < 0) throw Error(ErrorKind::unsupported, "no Vulkan device whose name contains '" + selector + "'");
    }
    std::string why = unusable_reason(devices[found]);
    if (!why.empty()) throw Error(ErrorKind::unsupported, "device '" + devices[found].name + "' is unusable: " + why);
    return found;
}

std::vector<VkPhysicalDevice> physical_devices(const InstanceFunctions& vk, VkInstance instance) {
    uint32_t n = 0;
    check(vk.vkEnumeratePhysicalDevices(instance, &n, nullptr), "vkEnumeratePhysicalDevices", "instance");
    std::vector<VkPhysicalDevice> pds(n);
    check(vk.vkEnumeratePhysicalDevices(instance, &n, pds.data()), "vkEnumeratePhysicalDevices", "instance");
    return pds;
}

bool DeviceInfo::subgroup_arithmetic() const {
    return subgroup_in_compute && (subgroup_ops & VK_SUBGROUP_FEATURE_BASIC_BIT) &&
           (subgroup_ops & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);
}

bool DeviceInfo::subgroup_shuffle() const {
    return subgroup_arithmetic() && (subgroup_ops & VK_SUBGROUP_FEATURE_SHUFFLE_BIT);
}

std::string DeviceInfo::type_name() const {
    switch (type) {
        case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete GPU";
        case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated GPU";
        case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual GPU";
        case VK_PHYSICAL_DEVICE_TYPE_CPU: return "CPU";
        default: return "other";
    }
}

std::string DeviceInfo::vendor_name() const {
    switch (vendor_id) {
        case 0x10DE: return "NVIDIA";
        case 0x1002: return "AMD";
        case 0x8086: return "Intel";
        case 0x13B5: return "Arm";
        case 0x5143: return "Qualcomm";
        case 0x1010: return "Imagination";
        case 0x106B: return "Apple";
        case 0x10005: return "Mesa";
        default: return "unknown";
    }
}

std::string DeviceInfo::api_string() const {
    return std::to_string(VK_API_VERSION_MAJOR(api_version)) + "." + std::to_string(VK_API_VERSION_MINOR(api_version)) +
           "." + std::to_string(VK_API_VERSION_PATCH(api_version));
}

std::string DeviceInfo::subgroup_ops_string() const {
    static const std::pair<VkSubgroupFeatureFlagBits, const char*> op_names[] = {
        {VK_SUBGROUP_FEATURE_BASIC_BIT, "basic"},
        {VK_SUBGROUP_FEATURE_VOTE_BIT, "vote"},
        {VK_SUBGROUP_FEATURE_ARITHMETIC_BIT, "arithmetic"},
        {VK_SUBGROUP_FEATURE_BALLOT_BIT, "ballot"},
        {VK_SUBGROUP_FEATURE_SHUFFLE_BIT, "shuffle"},
        {VK_SUBGROUP_FEATURE_SHUFFLE_RELATIVE_BIT, "shuffle_relative"},
        {VK_SUBGROUP_FEATURE_CLUSTERED_BIT, "clustered"},
        {VK_SUBGROUP_FEATURE_QUAD_BIT, "quad"},
    };
    std::string s;
    for (const auto& [bit, op] : op_names)
        if (subgroup_ops & bit) s += (s.empty() ? "" : ",") + std::string(op);
    return s;
}

DeviceList list_devices() {
    // Drivers kept mapped as a Context's are by default (drivers_loaded.hpp):
    // a listing may run on a thread that ends soon after.
    Instance instance = create_instance(false, false, true);
    DeviceList list;
    auto pds = physical_devices(instance.vk, instance.handle.get());
    for (uint32_t i = 0; i < pds.size(); ++i) list.devices.push_back(query_info(instance.vk, pds[i], i));
    list.default_index = default_device(list.devices);
    return list;
}

}  // namespace vksoftmax
