#include "vksoftmax/functions.hpp"

#include <dlfcn.h>

#include <cstring>
#include <string>

#include "vksoftmax/error.hpp"

namespace vksoftmax {
namespace {

// Extension commands may be absent, and so may the Vulkan 1.3 commands
// (the instance or device may be older); a missing Vulkan 1.0/1.1 command
// is an error.
bool may_be_absent(const char* name) {
    const size_t n = std::strlen(name);
    if (n > 3 && (std::strcmp(name + n - 3, "KHR") == 0 || std::strcmp(name + n - 3, "EXT") == 0)) return true;
    return std::strcmp(name, "vkCmdPipelineBarrier2") == 0;
}

template <typename Pfn>
void load(Pfn& slot, PFN_vkVoidFunction found, const char* name, const char* from) {
    slot = reinterpret_cast<Pfn>(found);
    if (!slot && !may_be_absent(name))
        throw Error(ErrorKind::unsupported, std::string(from) + " gave no " + name);
}

}  // namespace

PFN_vkGetInstanceProcAddr system_loader() {
    // Opened once, by whichever thread comes first (a function-local static
    // is initialized exactly once), and never closed: contexts may outlive
    // any one caller.
    static const PFN_vkGetInstanceProcAddr entry = []() -> PFN_vkGetInstanceProcAddr {
        void* library = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!library) library = dlopen("libvulkan.so", RTLD_NOW | RTLD_LOCAL);
        if (!library) return nullptr;
        return reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(library, "vkGetInstanceProcAddr"));
    }();
    if (!entry) throw Error(ErrorKind::unsupported, "no Vulkan loader found (libvulkan.so.1): install libvulkan1");
    return entry;
}

LoaderFunctions load_loader_functions(PFN_vkGetInstanceProcAddr get_instance_proc_addr) {
    LoaderFunctions f;
    f.vkGetInstanceProcAddr = get_instance_proc_addr;
    f.vkEnumerateInstanceVersion = reinterpret_cast<PFN_vkEnumerateInstanceVersion>(
        get_instance_proc_addr(VK_NULL_HANDLE, "vkEnumerateInstanceVersion"));
#define VKSOFTMAX_LOAD(name) load(f.name, get_instance_proc_addr(VK_NULL_HANDLE, #name), #name, "the Vulkan loader");
    VKSOFTMAX_LOADER_FUNCTIONS(VKSOFTMAX_LOAD)
#undef VKSOFTMAX_LOAD
    return f;
}

InstanceFunctions load_instance_functions(PFN_vkGetInstanceProcAddr get_instance_proc_addr, VkInstance instance) {
    InstanceFunctions f;
#define VKSOFTMAX_LOAD(name) load(f.name, get_instance_proc_addr(instance, #name), #name, "vkGetInstanceProcAddr");
    VKSOFTMAX_INSTANCE_FUNCTIONS(VKSOFTMAX_LOAD)
#undef VKSOFTMAX_LOAD
    return f;
}

DeviceFunctions load_device_functions(const InstanceFunctions& instance_functions, VkDevice device) {
    DeviceFunctions f;
#define VKSOFTMAX_LOAD(name) load(f.name, instance_functions.vkGetDeviceProcAddr(device, #name), #name, "vkGetDeviceProcAddr");
    VKSOFTMAX_DEVICE_FUNCTIONS(VKSOFTMAX_LOAD)
#undef VKSOFTMAX_LOAD
    return f;
}

}  // namespace vksoftmax
