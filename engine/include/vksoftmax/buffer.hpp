// Buffer: one VkBuffer with its own memory, for tensors (device-local) or
// for moving data in and out (host-visible, persistently mapped).
#pragma once
#include <vulkan/vulkan.h>

#include <cstddef>
#include <string>

#include "vksoftmax/buffer_range.hpp"
#include "vksoftmax/handle.hpp"

namespace vksoftmax {

class Context;

enum class MemoryKind {
    device,    // device-local, for the shaders
    upload,    // host-visible and coherent, written by the host
    readback,  // host-visible, cached where the device offers it, read by the host
};

class Buffer {
public:
    Buffer(Context& ctx, VkDeviceSize size, MemoryKind kind, const std::string& name);
    VkBuffer buffer() const { return buffer_.get(); }
    VkDeviceSize size() const { return size_; }
    // The mapping of a host-visible buffer; nullptr for device memory.
    void* mapped() const { return mapped_; }
    const std::string& name() const { return name_; }
    // `bytes` of the buffer from `offset`, to bind; Error(invalid_argument),
    // naming the buffer and the sizes, for a range past its end (which
    // Vulkan would let a shader reach without a word).
    BufferRange range(VkDeviceSize offset, VkDeviceSize bytes) const;

    // Makes host writes visible to the device / device writes visible to
    // the host for memory that is not coherent (a no-op where it is).
    void flush(Context& ctx) const;
    void invalidate(Context& ctx) const;

private:
    std::string name_;
    VkDeviceSize size_ = 0;
    bool coherent_ = true;
    Handle<VkDeviceMemory> memory_;
    Handle<VkBuffer> buffer_;
    void* mapped_ = nullptr;
};

// The first `bytes` of `buffer` to bind, or an empty range where there is
// no buffer (an option's binding left unused).
BufferRange range_or_empty(const Buffer* buffer, VkDeviceSize bytes);

// Copies `bytes` from the host into `dst` at `offset`, through a staging
// buffer; the copy is visible to the shaders and transfers of later
// submissions on the context's queue. upload() and download() refuse
// (Error(invalid_argument)) a copy that runs past the buffer's end.
void upload(Context& ctx, const Buffer& dst, const void* data, size_t bytes, VkDeviceSize offset = 0);
// Fills all of `dst` with the 32-bit `word` (vkCmdFillBuffer), submitted
// and waited for, and visible to later submissions as upload()'s copy:
// zeros for a single-pass workspace before its first use.
void fill(Context& ctx, const Buffer& dst, uint32_t word);
// Copies `bytes` of `src` at `offset` back to the host.
void download(Context& ctx, const Buffer& src, void* data, size_t bytes, VkDeviceSize offset = 0);

}  // namespace vksoftmax
