#include "instance.hpp"

#include <algorithm>
#include <cstring>

#include "drivers_loaded.hpp"
#include "vksoftmax/error.hpp"

namespace vksoftmax {
namespace {

bool layer_available(const LoaderFunctions& loader, const char* name) {
    uint32_t n = 0;
    check(loader.vkEnumerateInstanceLayerProperties(&n, nullptr), "vkEnumerateInstanceLayerProperties", "loader");
    std::vector<VkLayerProperties> layers(n);
    check(loader.vkEnumerateInstanceLayerProperties(&n, layers.data()), "vkEnumerateInstanceLayerProperties", "loader");
    return std::any_of(layers.begin(), layers.end(),
                       [&](const VkLayerProperties& l) { return std::strcmp(l.layerName, name) == 0; });
}

uint32_t instance_api_version(const LoaderFunctions& loader) {
    uint32_t v = VK_API_VERSION_1_0;
    if (loader.vkEnumerateInstanceVersion != nullptr)
        check(loader.vkEnumerateInstanceVersion(&v), "vkEnumerateInstanceVersion", "loader");
    if (v < VK_API_VERSION_1_1) throw Error(ErrorKind::unsupported, "the Vulkan loader is older than Vulkan 1.1");
    return std::min(v, static_cast<uint32_t>(VK_API_VERSION_1_3));
}

}  // namespace

Instance create_instance(bool validation, bool synchronization_validation, bool keep_drivers_loaded) {
    const LoaderFunctions loader = load_loader_functions(system_loader());
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "vksoftmax";
    app.pEngineName = "vksoftmax";
    app.apiVersion = instance_api_version(loader);

    Instance result;
    std::vector<const char*> layers, extensions;
    const char* layer = "VK_LAYER_KHRONOS_validation";
    if (validation && layer_available(loader, layer)) {
        layers.push_back(layer);
        extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
        result.debug_utils = true;
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
    if (result.debug_utils && synchronization_validation) ci.pNext = &features;
    VkInstance instance = VK_NULL_HANDLE;
    check(loader.vkCreateInstance(&ci, nullptr, &instance), "vkCreateInstance", "vksoftmax instance");
    // Owned from here on, so that a failed load below destroys it.
    auto destroy = reinterpret_cast<PFN_vkDestroyInstance>(loader.vkGetInstanceProcAddr(instance, "vkDestroyInstance"));
    result.handle = Handle<VkInstance>(instance, [destroy](VkInstance i) {
        if (destroy) destroy(i, nullptr);
    });
    result.vk = load_instance_functions(loader.vkGetInstanceProcAddr, instance);
    if (keep_drivers_loaded) keep_vulkan_drivers_loaded();
    return result;
}

}  // namespace vksoftmax
