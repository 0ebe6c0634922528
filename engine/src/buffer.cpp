#include "vksoftmax/buffer.hpp"

#include <cstring>

#include "vksoftmax/barrier.hpp"
#include "vksoftmax/context.hpp"
#include "vksoftmax/error.hpp"

namespace vksoftmax {

namespace {

// The memory properties a kind of buffer must have, would rather have, and
// must not have where a type without them exists.
struct MemoryWish {
    VkMemoryPropertyFlags want = 0, prefer = 0, avoid = 0;
};

MemoryWish memory_wish(MemoryKind kind) {
    switch (kind) {
        case MemoryKind::device:
            // Not a host-visible (BAR) type where a plain one exists: tensors
            // allocated there ran up to 5x slower on an H200 (bench/NOTES.md).
            return {VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT};
        case MemoryKind::upload:
            // Staging lives in host memory, not in VRAM.
            return {VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, 0,
                    VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT};
        case MemoryKind::readback:
            return {VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT, VK_MEMORY_PROPERTY_HOST_CACHED_BIT,
                    VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT};
    }
    return {};
}

}  // namespace

Buffer::Buffer(Context& ctx, VkDeviceSize size, MemoryKind kind, const std::string& name) : name_(name), size_(size) {
    if (size == 0) throw Error(ErrorKind::invalid_argument, "buffer '" + name + "' of size 0");
    const DeviceFunctions& vk = ctx.vk();
    VkDevice dev = ctx.device();

    VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bi.size = size;
    bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    VkBuffer buffer = VK_NULL_HANDLE;
    check(vk.vkCreateBuffer(dev, &bi, nullptr, &buffer), "vkCreateBuffer", name);
    auto destroy_buffer = vk.vkDestroyBuffer;
    buffer_ = Handle<VkBuffer>(buffer, [dev, destroy_buffer](VkBuffer b) { destroy_buffer(dev, b, nullptr); });

    VkMemoryRequirements req{};
    vk.vkGetBufferMemoryRequirements(dev, buffer, &req);
    const MemoryWish wish = memory_wish(kind);
    const uint32_t type = ctx.memory_type(req.memoryTypeBits, wish.want, wish.prefer, wish.avoid);
    // One allocation per buffer, and said so: the driver may then place a
    // large tensor as it sees best.
    VkMemoryDedicatedAllocateInfo dedicated{VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO};
    dedicated.buffer = buffer;
    VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    ai.pNext = &dedicated;
    ai.allocationSize = req.size;
    ai.memoryTypeIndex = type;
    VkDeviceMemory memory = VK_NULL_HANDLE;
    check(vk.vkAllocateMemory(dev, &ai, nullptr, &memory), "vkAllocateMemory", name);
    auto free_memory = vk.vkFreeMemory;
    memory_ = Handle<VkDeviceMemory>(memory, [dev, free_memory](VkDeviceMemory m) { free_memory(dev, m, nullptr); });
    check(vk.vkBindBufferMemory(dev, buffer, memory, 0), "vkBindBufferMemory", name);

    if (kind != MemoryKind::device) {
        check(vk.vkMapMemory(dev, memory, 0, VK_WHOLE_SIZE, 0, &mapped_), "vkMapMemory", name);
        coherent_ = (ctx.memory_properties().memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) != 0;
    }
}

void Buffer::flush(Context& ctx) const {
    if (coherent_ || !mapped_) return;
    VkMappedMemoryRange r{VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE, nullptr, memory_.get(), 0, VK_WHOLE_SIZE};
    check(ctx.vk().vkFlushMappedMemoryRanges(ctx.device(), 1, &r), "vkFlushMappedMemoryRanges", name_);
}

void Buffer::invalidate(Context& ctx) const {
    if (coherent_ || !mapped_) return;
    VkMappedMemoryRange r{VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE, nullptr, memory_.get(), 0, VK_WHOLE_SIZE};
    check(ctx.vk().vkInvalidateMappedMemoryRanges(ctx.device(), 1, &r), "vkInvalidateMappedMemoryRanges", name_);
}

namespace {

// A transfer's writes made visible to what later submissions on the queue
// do with them: shaders read and write them (a single-pass workspace's
// atomics do both), transfers copy them. A fence wait orders the next
// submission after the transfer but, by the spec, makes nothing visible
// to it.
void transfer_to_later_work(Context& ctx, VkCommandBuffer cb) {
    memory_barrier(ctx.vk(), cb, {VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT},
                   {VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                    VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                        VK_ACCESS_TRANSFER_WRITE_BIT});
}

// Error(invalid_argument) where `bytes` at `offset` do not lie within `b`:
// the copy, or the range bound, would run past the buffer's end.
void require_within(const Buffer& b, VkDeviceSize offset, VkDeviceSize bytes, const char* what) {
    if (offset <= b.size() && bytes <= b.size() - offset) return;
    throw Error(ErrorKind::invalid_argument, std::string(what) + " of " + std::to_string(bytes) + " bytes at offset " +
                                                 std::to_string(offset) + " past the end of '" + b.name() + "' (" +
                                                 std::to_string(b.size()) + " bytes)");
}

}  // namespace

BufferRange Buffer::range(VkDeviceSize offset, VkDeviceSize bytes) const {
    require_within(*this, offset, bytes, "a range");
    return {buffer(), offset, bytes};
}

BufferRange range_or_empty(const Buffer* buffer, VkDeviceSize bytes) {
    return buffer ? buffer->range(0, bytes) : BufferRange{};
}

void upload(Context& ctx, const Buffer& dst, const void* data, size_t bytes, VkDeviceSize offset) {
    if (bytes == 0) return;
    require_within(dst, offset, bytes, "upload");
    Buffer staging(ctx, bytes, MemoryKind::upload, dst.name() + " (upload staging)");
    std::memcpy(staging.mapped(), data, bytes);
    staging.flush(ctx);
    ctx.submit_and_wait([&](VkCommandBuffer cb) {
        VkBufferCopy region{0, offset, bytes};
        ctx.vk().vkCmdCopyBuffer(cb, staging.buffer(), dst.buffer(), 1, &region);
        transfer_to_later_work(ctx, cb);
    });
}

void fill(Context& ctx, const Buffer& dst, uint32_t word) {
    ctx.submit_and_wait([&](VkCommandBuffer cb) {
        ctx.vk().vkCmdFillBuffer(cb, dst.buffer(), 0, VK_WHOLE_SIZE, word);
        transfer_to_later_work(ctx, cb);
    });
}

void download(Context& ctx, const Buffer& src, void* data, size_t bytes, VkDeviceSize offset) {
    if (bytes == 0) return;
    require_within(src, offset, bytes, "download");
    Buffer staging(ctx, bytes, MemoryKind::readback, src.name() + " (readback staging)");
    ctx.submit_and_wait([&](VkCommandBuffer cb) {
        // The shaders' and transfers' writes of earlier submissions, for the copy.
        memory_barrier(ctx.vk(), cb,
                       {VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                        VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT},
                       {VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT});
        VkBufferCopy region{offset, 0, bytes};
        ctx.vk().vkCmdCopyBuffer(cb, src.buffer(), staging.buffer(), 1, &region);
        memory_barrier(ctx.vk(), cb, {VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT},
                       {VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT});
    });
    staging.invalidate(ctx);
    std::memcpy(data, staging.mapped(), bytes);
}

}  // namespace vksoftmax
