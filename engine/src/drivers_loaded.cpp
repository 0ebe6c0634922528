#include "drivers_loaded.hpp"

#include <dlfcn.h>
#include <link.h>

#include <string>
#include <vector>

#include "vksoftmax/device_info.hpp"

namespace vksoftmax {
namespace {

// The file names of every shared object mapped in the process (the
// program itself, which has none, left out). They are only gathered here:
// dl_iterate_phdr()'s callback runs under the dynamic linker's lock, so the
// dlopen() calls that examine them come after.
std::vector<std::string> loaded_objects() {
    std::vector<std::string> names;
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* out) {
            if (info->dlpi_name && info->dlpi_name[0] != '\0')
                static_cast<std::vector<std::string>*>(out)->emplace_back(info->dlpi_name);
            return 0;
        },
        &names);
    return names;
}

// Whether the mapped object `name` is a Vulkan driver: an ICD exports
// vk_icdGetInstanceProcAddr, which neither the loader nor a layer does.
// RTLD_NOLOAD opens only what is mapped already.
bool is_vulkan_driver(const std::string& name) {
    void* handle = dlopen(name.c_str(), RTLD_LAZY | RTLD_NOLOAD);
    if (!handle) return false;
    const bool driver = dlsym(handle, "vk_icdGetInstanceProcAddr") != nullptr;
    dlclose(handle);
    return driver;
}

}  // namespace

std::vector<std::string> loaded_vulkan_drivers() {
    std::vector<std::string> drivers;
    for (const std::string& name : loaded_objects())
        if (is_vulkan_driver(name)) drivers.push_back(name);
    return drivers;
}

void keep_vulkan_drivers_loaded() {
    for (const std::string& name : loaded_vulkan_drivers()) {
        // RTLD_NODELETE on an object already mapped marks it never to be
        // unmapped; the reference this takes is dropped again, the mark stays.
        if (void* handle = dlopen(name.c_str(), RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE)) dlclose(handle);
    }
}

}  // namespace vksoftmax
