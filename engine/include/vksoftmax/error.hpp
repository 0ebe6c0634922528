// Errors: every failed Vulkan call becomes a vksoftmax::Error naming the
// call and the object it was made on.
#pragma once
#include <vulkan/vulkan.h>

#include <stdexcept>
#include <string>

namespace vksoftmax {

enum class ErrorKind {
    invalid_argument,  // a shape, option or buffer the operation cannot take
    unsupported,       // the device lacks a feature or limit the operation needs
    out_of_memory,     // VK_ERROR_OUT_OF_{HOST,DEVICE}_MEMORY
    device_lost,       // VK_ERROR_DEVICE_LOST
    vulkan,            // any other failed Vulkan call
};

class Error : public std::runtime_error {
public:
    Error(ErrorKind kind, const std::string& what, VkResult result = VK_SUCCESS)
        : std::runtime_error(what), kind_(kind), result_(result) {}
    ErrorKind kind() const noexcept { return kind_; }
    VkResult result() const noexcept { return result_; }

private:
    ErrorKind kind_;
    VkResult result_;
};

const char* result_name(VkResult r);

// Throws an Error for any result other than VK_SUCCESS:
// "vkCreateBuffer(input buffer) failed: VK_ERROR_OUT_OF_DEVICE_MEMORY".
void check(VkResult r, const char* call, const std::string& object);

}  // namespace vksoftmax
