#include "vksoftmax/context.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "vksoftmax/error.hpp"
#include "vksoftmax/pipeline.hpp"

namespace vksoftmax {
namespace {

void load_loader() {
    // volk keeps the loader's entry points itself; loading twice is harmless.
    if (vkGetInstanceProcAddr != nullptr) return;
    if (volkInitialize() != VK_SUCCESS)
        throw Error(ErrorKind::unsupported, "no Vulkan loader found (libvulkan.so.1): install libvulkan1");
}

bool has_extension(const std::vector<VkExtensionProperties>& exts, const char* name) {
    return std::any_of(exts.begin(), exts.end(),
                       [&](const VkExtensionProperties& e) { return std::strcmp(e.extensionName, name) == 0; });
}

std::vector<VkExtensionProperties> device_extensions(VkPhysicalDevice pd) {
    uint32_t n = 0;
    check(vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr), "vkEnumerateDeviceExtensionProperties",
          "physical device");
    std::vector<VkExtensionProperties> exts(n);
    check(vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, exts.data()), "vkEnumerateDeviceExtensionProperties",
          "physical device");
    return exts;
}

bool layer_available(const char* name) {
    uint32_t n = 0;
    check(vkEnumerateInstanceLayerProperties(&n, nullptr), "vkEnumerateInstanceLayerProperties", "loader");
    std::vector<VkLayerProperties> layers(n);
    check(vkEnumerateInstanceLayerProperties(&n, layers.data()), "vkEnumerateInstanceLayerProperties", "loader");
    return std::any_of(layers.begin(), layers.end(),
                       [&](const VkLayerProperties& l) { return std::strcmp(l.layerName, name) == 0; });
}

uint32_t instance_api_version() {
    uint32_t v = VK_API_VERSION_1_0;
    if (vkEnumerateInstanceVersion != nullptr)
        check(vkEnumerateInstanceVersion(&v), "vkEnumerateInstanceVersion", "loader");
    if (v < VK_API_VERSION_1_1) throw Error(ErrorKind::unsupported, "the Vulkan loader is older than Vulkan 1.1");
    return std::min(v, static_cast<uint32_t>(VK_API_VERSION_1_3));
}

DeviceInfo query_info(VkPhysicalDevice pd, uint32_t index) {
    DeviceInfo info;
    info.index = index;
    auto exts = device_extensions(pd);

    VkPhysicalDeviceProperties base{};
    vkGetPhysicalDeviceProperties(pd, &base);
    info.api_version = base.apiVersion;
    bool v12 = base.apiVersion >= VK_API_VERSION_1_2, v13 = base.apiVersion >= VK_API_VERSION_1_3;
    bool size_control_ext = v13 || has_extension(exts, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
    bool driver_props = v12 || has_extension(exts, VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME);
    bool float16_ext = v12 || has_extension(exts, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);

    VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    VkPhysicalDeviceSubgroupProperties sg{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceSubgroupSizeControlProperties sgc{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES};
    VkPhysicalDeviceDriverProperties drv{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    props.pNext = &sg;
    void** tail = &sg.pNext;
    if (size_control_ext) { *tail = &sgc; tail = &sgc.pNext; }
    if (driver_props) { *tail = &drv; tail = &drv.pNext; }
    vkGetPhysicalDeviceProperties2(pd, &props);

    VkPhysicalDeviceFeatures2 feats{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    VkPhysicalDevice16BitStorageFeatures s16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
    VkPhysicalDeviceSubgroupSizeControlFeatures sgcf{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES};
    VkPhysicalDeviceShaderFloat16Int8Features f16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR pexe{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
    const bool pexe_ext = has_extension(exts, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
    VkPhysicalDeviceShaderSubgroupUniformControlFlowFeaturesKHR ucf{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SUBGROUP_UNIFORM_CONTROL_FLOW_FEATURES_KHR};
    const bool ucf_ext = has_extension(exts, VK_KHR_SHADER_SUBGROUP_UNIFORM_CONTROL_FLOW_EXTENSION_NAME);
    feats.pNext = &s16;
    tail = &s16.pNext;
    if (size_control_ext) { *tail = &sgcf; tail = &sgcf.pNext; }
    if (float16_ext) { *tail = &f16; tail = &f16.pNext; }
    if (pexe_ext) { *tail = &pexe; tail = &pexe.pNext; }
    if (ucf_ext) { *tail = &ucf; tail = &ucf.pNext; }
    vkGetPhysicalDeviceFeatures2(pd, &feats);

    const VkPhysicalDeviceLimits& L = props.properties.limits;
    info.name = props.properties.deviceName;
    info.vendor_id = props.properties.vendorID;
    info.device_id = props.properties.deviceID;
    info.driver_version = props.properties.driverVersion;
    info.type = props.properties.deviceType;
    if (driver_props) {
        info.driver_name = drv.driverName;
        info.driver_info = drv.driverInfo;
    }
    info.subgroup_size = sg.subgroupSize;
    info.subgroup_ops = sg.supportedOperations;
    info.subgroup_in_compute = (sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0;
    if (size_control_ext && sgcf.subgroupSizeControl &&
        (sgc.requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT)) {
        info.subgroup_size_control = true;
        info.compute_full_subgroups = sgcf.computeFullSubgroups;
        info.min_subgroup_size = sgc.minSubgroupSize;
        info.max_subgroup_size = sgc.maxSubgroupSize;
        info.max_workgroup_subgroups = sgc.maxComputeWorkgroupSubgroups;
    }
    info.storage_16bit = s16.storageBuffer16BitAccess;
    info.shader_float16 = float16_ext && f16.shaderFloat16;
    info.push_descriptor = has_extension(exts, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
    info.pipeline_statistics = pexe_ext && pexe.pipelineExecutableInfo;
    info.subgroup_uniform_control_flow = ucf_ext && ucf.shaderSubgroupUniformControlFlow;
    info.timestamp_period = L.timestampPeriod;
    info.max_storage_buffer_range = L.maxStorageBufferRange;
    info.min_storage_buffer_offset_alignment = L.minStorageBufferOffsetAlignment;
    for (int i = 0; i < 3; ++i) info.max_workgroup_count[i] = L.maxComputeWorkGroupCount[i];
    info.max_workgroup_invocations = L.maxComputeWorkGroupInvocations;
    info.max_workgroup_size_x = L.maxComputeWorkGroupSize[0];
    info.max_shared_memory = L.maxComputeSharedMemorySize;

    uint32_t nq = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, nullptr);
    std::vector<VkQueueFamilyProperties> families(nq);
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, families.data());
    info.queue_family = UINT32_MAX;
    for (uint32_t i = 0; i < nq; ++i)
        if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
            info.queue_family = i;
            info.timestamp_valid_bits = families[i].timestampValidBits;
            break;
        }
    return info;
}

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

// The device that `selector` names: an index, or a part of the name.
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

Handle<VkInstance> create_instance(bool validation, bool sync_validation, bool& debug_utils) {
    load_loader();
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "vksoftmax";
    app.pEngineName = "vksoftmax";
    app.apiVersion = instance_api_version();

    std::vector<const char*> layers, extensions;
    debug_utils = false;
    const char* layer = "VK_LAYER_KHRONOS_validation";
    if (validation && layer_available(layer)) {
        layers.push_back(layer);
        extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
        debug_utils = true;
    }
    VkValidationFeatureEnableEXT enables[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
    VkValidationFeaturesEXT features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
    features.enabledValidationFeatureCount = 1;
    features.pEnabledValidationFeatures = enables;

    VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    ci.pApplicationInfo = &app;
    ci.enabledLayerCount = static_cast<uint32_t>(layers.size());
    ci.ppEnabledLayerNames = layers.data();
    ci.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
    ci.ppEnabledExtensionNames = extensions.data();
    if (debug_utils && sync_validation) ci.pNext = &features;
    VkInstance instance = VK_NULL_HANDLE;
    check(vkCreateInstance(&ci, nullptr, &instance), "vkCreateInstance", "vksoftmax instance");
    volkLoadInstanceOnly(instance);
    return Handle<VkInstance>(instance, [](VkInstance i) { vkDestroyInstance(i, nullptr); });
}

std::vector<VkPhysicalDevice> physical_devices(VkInstance instance) {
    uint32_t n = 0;
    check(vkEnumeratePhysicalDevices(instance, &n, nullptr), "vkEnumeratePhysicalDevices", "instance");
    std::vector<VkPhysicalDevice> pds(n);
    check(vkEnumeratePhysicalDevices(instance, &n, pds.data()), "vkEnumeratePhysicalDevices", "instance");
    return pds;
}

}  // namespace

bool DeviceInfo::subgroup_arithmetic() const {
    return subgroup_in_compute && (subgroup_ops & VK_SUBGROUP_FEATURE_BASIC_BIT) &&
           (subgroup_ops & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);
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
    bool debug_utils = false;
    Handle<VkInstance> instance = create_instance(false, false, debug_utils);
    DeviceList list;
    auto pds = physical_devices(instance.get());
    for (uint32_t i = 0; i < pds.size(); ++i) list.devices.push_back(query_info(pds[i], i));
    list.default_index = default_device(list.devices);
    return list;
}

Context::Context(const ContextOptions& options) {
    bool debug_utils = false;
    instance_ = create_instance(options.validation, options.synchronization_validation, debug_utils);
    if (debug_utils) {
        VkDebugUtilsMessengerCreateInfoEXT mci{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
        mci.messageSeverity =
            VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT;
        mci.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT;
        mci.pfnUserCallback = &Context::on_debug_message;
        mci.pUserData = this;
        VkDebugUtilsMessengerEXT m = VK_NULL_HANDLE;
        check(vkCreateDebugUtilsMessengerEXT(instance_.get(), &mci, nullptr, &m), "vkCreateDebugUtilsMessengerEXT",
              "validation messenger");
        VkInstance inst = instance_.get();
        messenger_ = Handle<VkDebugUtilsMessengerEXT>(
            m, [inst](VkDebugUtilsMessengerEXT x) { vkDestroyDebugUtilsMessengerEXT(inst, x, nullptr); });
    }

    auto pds = physical_devices(instance_.get());
    std::vector<DeviceInfo> infos;
    for (uint32_t i = 0; i < pds.size(); ++i) infos.push_back(query_info(pds[i], i));
    int chosen = select_device(infos, options.device);
    physical_ = pds[chosen];
    info_ = infos[chosen];
    info_.subgroup_uniform_control_flow = info_.subgroup_uniform_control_flow && options.subgroup_uniform_control_flow;
    vkGetPhysicalDeviceMemoryProperties(physical_, &memory_);

    std::vector<const char*> extensions = {VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME};
    bool v13 = info_.api_version >= VK_API_VERSION_1_3;
    if (info_.subgroup_size_control && !v13) extensions.push_back(VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
    capture_statistics_ = options.capture_statistics && info_.pipeline_statistics;
    if (capture_statistics_) extensions.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
    if (info_.subgroup_uniform_control_flow)
        extensions.push_back(VK_KHR_SHADER_SUBGROUP_UNIFORM_CONTROL_FLOW_EXTENSION_NAME);

    VkPhysicalDeviceFeatures2 feats{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    VkPhysicalDevice16BitStorageFeatures s16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
    VkPhysicalDeviceSubgroupSizeControlFeatures sgcf{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES};
    s16.storageBuffer16BitAccess = info_.storage_16bit;
    feats.pNext = &s16;
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR pexe{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
    void** next = &s16.pNext;
    if (info_.subgroup_size_control) {
        sgcf.subgroupSizeControl = VK_TRUE;
        sgcf.computeFullSubgroups = info_.compute_full_subgroups;
        *next = &sgcf;
        next = &sgcf.pNext;
    }
    if (capture_statistics_) {
        pexe.pipelineExecutableInfo = VK_TRUE;
        *next = &pexe;
        next = &pexe.pNext;
    }
    VkPhysicalDeviceShaderSubgroupUniformControlFlowFeaturesKHR ucf{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SUBGROUP_UNIFORM_CONTROL_FLOW_FEATURES_KHR};
    if (info_.subgroup_uniform_control_flow) {
        ucf.shaderSubgroupUniformControlFlow = VK_TRUE;
        *next = &ucf;
    }

    float priority = 1.f;
    VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    qci.queueFamilyIndex = info_.queue_family;
    qci.queueCount = 1;
    qci.pQueuePriorities = &priority;
    VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    dci.pNext = &feats;
    dci.queueCreateInfoCount = 1;
    dci.pQueueCreateInfos = &qci;
    dci.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
    dci.ppEnabledExtensionNames = extensions.data();
    VkDevice device = VK_NULL_HANDLE;
    check(vkCreateDevice(physical_, &dci, nullptr, &device), "vkCreateDevice", info_.name);
    volkLoadDeviceTable(&vk_, device);
    auto destroy_device = vk_.vkDestroyDevice;
    device_ = Handle<VkDevice>(device, [destroy_device](VkDevice d) { destroy_device(d, nullptr); });
    vk_.vkGetDeviceQueue(device, info_.queue_family, 0, &queue_);

    create_pipeline_cache({});

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
    // The host's loader entry: volk's copy of the entry points lives inside
    // this library (hidden in libvksoftmax.so), so the host's own loader or
    // volk is not touched.
    volkInitializeCustom(host.get_instance_proc_addr);
    volkLoadInstanceOnly(host.instance);
    instance_ = Handle<VkInstance>(host.instance, nullptr);  // borrowed: never destroyed here
    physical_ = host.physical_device;

    auto pds = physical_devices(host.instance);
    uint32_t index = 0;
    for (uint32_t i = 0; i < pds.size(); ++i)
        if (pds[i] == host.physical_device) index = i;
    info_ = query_info(host.physical_device, index);
    info_.queue_family = host.queue_family;
    uint32_t nq = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(physical_, &nq, nullptr);
    std::vector<VkQueueFamilyProperties> families(nq);
    vkGetPhysicalDeviceQueueFamilyProperties(physical_, &nq, families.data());
    std::string missing;
    if (host.queue_family >= nq || !(families[host.queue_family].queueFlags & VK_QUEUE_COMPUTE_BIT))
        missing += "; queue family " + std::to_string(host.queue_family) + " has no compute";
    else
        info_.timestamp_valid_bits = families[host.queue_family].timestampValidBits;
    if (info_.api_version < VK_API_VERSION_1_1) missing += "; Vulkan 1.1";
    if (!host.push_descriptor)
        missing += info_.push_descriptor ? "; VK_KHR_push_descriptor (supported: enable it on the VkDevice)"
                                         : "; VK_KHR_push_descriptor (not supported by this device)";
    if (!missing.empty())
        throw Error(ErrorKind::unsupported, "vksoftmax needs on " + info_.name + ":" + missing.substr(1));
    // Only what the host enabled counts; the rest is reported as absent.
    info_.storage_16bit = info_.storage_16bit && host.storage_buffer_16bit;
    if (!host.subgroup_size_control) {
        info_.subgroup_size_control = false;
        info_.compute_full_subgroups = false;
        info_.max_workgroup_subgroups = 0;
    }
    info_.subgroup_uniform_control_flow = info_.subgroup_uniform_control_flow && host.subgroup_uniform_control_flow;
    vkGetPhysicalDeviceMemoryProperties(physical_, &memory_);
    device_ = Handle<VkDevice>(host.device, nullptr);  // borrowed
    volkLoadDeviceTable(&vk_, host.device);
    create_pipeline_cache(host.pipeline_cache);
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
    if (device_ && !adopted_) vk_.vkDeviceWaitIdle(device_.get());
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

}  // namespace vksoftmax
