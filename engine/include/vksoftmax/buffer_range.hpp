// BufferRange: a window of a VkBuffer, as record() binds it. The host's
// buffers come as ranges of their own; Buffer::range() makes one of an
// engine Buffer, checked against its size.
#pragma once
#include <vulkan/vulkan.h>

namespace vksoftmax {

struct BufferRange {
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceSize offset = 0;  // a multiple of minStorageBufferOffsetAlignment
    VkDeviceSize range = 0;
};

}  // namespace vksoftmax
