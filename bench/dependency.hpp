// The ways one call can wait for the previous one's writes, recorded
// between back-to-back calls: the bench's cases all get one of them
// (memory_barrier); the floor is timed under each, to find the cheapest
// that is correct (bench/NOTES.md).
#pragma once
#include <vulkan/vulkan.h>

#include <cstdint>
#include <vector>

#include "vksoftmax/context.hpp"
#include "vksoftmax/handle.hpp"

namespace vksoftmax::bench {

enum class Dependency {
    memory_barrier,   // vkCmdPipelineBarrier, one VkMemoryBarrier (shader writes -> reads and writes)
    buffer_barrier,   // vkCmdPipelineBarrier, one VkBufferMemoryBarrier on the buffer the calls write
    memory_barrier2,  // vkCmdPipelineBarrier2, one VkMemoryBarrier2 (Vulkan 1.3 synchronization2)
    execution_only,   // vkCmdPipelineBarrier without a memory barrier: orders the calls, makes no write visible
    event,            // vkCmdSetEvent after a call, vkCmdWaitEvents (with the memory barrier) before the next
    none,             // nothing: the calls may overlap; not a dependency, the cost of a dispatch alone
};
const char* dependency_name(Dependency d);
// Dependency::memory_barrier, what every case gets between back-to-back
// calls: the next call's reads and writes wait for the previous call's
// writes (output and workspace).
void compute_to_compute(const Context& ctx, VkCommandBuffer cb);
// Every kind, in the order above.
const std::vector<Dependency>& all_dependencies();
// Whether the context can record `d` (memory_barrier2: synchronization2 enabled).
bool can_record(const Context& ctx, Dependency d);

// Records one kind of dependency into the gaps between `gaps` + 1 calls of
// one command buffer. `written`: the buffer the calls write (buffer_barrier).
class Gaps {
public:
    Gaps(Context& ctx, Dependency kind, uint32_t gaps, VkBuffer written);
    // Before recording a command buffer, on the host: the events an earlier
    // submission set (complete by then) reset. (Reset in the command
    // buffer, each set would need a barrier after its reset.)
    void reset_events() const;
    // After call `gap` and before call `gap` + 1.
    void record(VkCommandBuffer cb, uint32_t gap) const;

private:
    const Context& ctx_;
    Dependency kind_;
    VkBuffer written_;
    std::vector<Handle<VkEvent>> events_;  // one per gap: never reset while waited on
};

}  // namespace vksoftmax::bench
