#include "vksoftmax/error.hpp"

namespace vksoftmax {

const char* result_name(VkResult r) {
    switch (r) {
#define VKS_CASE(x) \
    case x: return #x;
        VKS_CASE(VK_SUCCESS)
        VKS_CASE(VK_NOT_READY)
        VKS_CASE(VK_TIMEOUT)
        VKS_CASE(VK_INCOMPLETE)
        VKS_CASE(VK_ERROR_OUT_OF_HOST_MEMORY)
        VKS_CASE(VK_ERROR_OUT_OF_DEVICE_MEMORY)
        VKS_CASE(VK_ERROR_INITIALIZATION_FAILED)
        VKS_CASE(VK_ERROR_DEVICE_LOST)
        VKS_CASE(VK_ERROR_MEMORY_MAP_FAILED)
        VKS_CASE(VK_ERROR_LAYER_NOT_PRESENT)
        VKS_CASE(VK_ERROR_EXTENSION_NOT_PRESENT)
        VKS_CASE(VK_ERROR_FEATURE_NOT_PRESENT)
        VKS_CASE(VK_ERROR_INCOMPATIBLE_DRIVER)
        VKS_CASE(VK_ERROR_TOO_MANY_OBJECTS)
        VKS_CASE(VK_ERROR_FORMAT_NOT_SUPPORTED)
        VKS_CASE(VK_ERROR_FRAGMENTED_POOL)
        VKS_CASE(VK_ERROR_UNKNOWN)
        VKS_CASE(VK_ERROR_OUT_OF_POOL_MEMORY)
        VKS_CASE(VK_ERROR_INVALID_EXTERNAL_HANDLE)
        VKS_CASE(VK_ERROR_FRAGMENTATION)
        VKS_CASE(VK_PIPELINE_COMPILE_REQUIRED)
#undef VKS_CASE
        default: return "VK_ERROR_(unnamed)";
    }
}

void check(VkResult r, const char* call, const std::string& object) {
    if (r == VK_SUCCESS) return;
    ErrorKind kind = ErrorKind::vulkan;
    if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY) kind = ErrorKind::out_of_memory;
    if (r == VK_ERROR_DEVICE_LOST) kind = ErrorKind::device_lost;
    if (r == VK_ERROR_FEATURE_NOT_PRESENT || r == VK_ERROR_EXTENSION_NOT_PRESENT ||
        r == VK_ERROR_INCOMPATIBLE_DRIVER)
        kind = ErrorKind::unsupported;
    throw Error(kind, std::string(call) + "(" + object + ") failed: " + result_name(r), r);
}

}  // namespace vksoftmax
