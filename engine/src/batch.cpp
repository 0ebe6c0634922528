// record_batch(): independent problems recorded with no barrier between them.
#include <string>
#include <vector>

#include "recording.hpp"
#include "vksoftmax/context.hpp"
#include "vksoftmax/error.hpp"
#include "vksoftmax/plan.hpp"

namespace vksoftmax {
namespace {

// One byte range of a VkBuffer that a dispatch touches.
struct Touched {
    VkBuffer buffer;
    VkDeviceSize begin, end;
    bool written;
    size_t item;
    const char* what;
};

// A problem's checked bindings, with its plan and its index in the batch.
struct Bound {
    size_t item;
    const Plan* plan;
    Bindings bindings;
};

std::vector<Touched> touched_ranges(const std::vector<Bound>& bound) {
    static const char* const kWhat[max_bindings] = {"input", "output", "workspace", "mask", "sinks", "log-sum-exp"};
    // Bindings 1 (output), 2 (workspace) and 5 (log-sum-exp) are written.
    static const bool kWritten[max_bindings] = {false, true, true, false, false, true};
    std::vector<Touched> ranges;
    for (const Bound& p : bound)
        for (uint32_t b = 0; b < p.bindings.count; ++b) {
            const VkDescriptorBufferInfo& info = p.bindings.info[b];
            // The input stands in for an unused binding: nothing touches it there.
            if (!binding_bytes(*p.plan, b)) continue;
            const bool backward = p.plan->problem.backward;
            const char* what = backward && b == 3 ? "gradient" : backward && b == 4 ? "sink gradient" : kWhat[b];
            // A backward plan's binding 4 is its sink gradient, written.
            const bool written = kWritten[b] || (backward && b == 4);
            ranges.push_back({info.buffer, info.offset, info.offset + info.range, written, p.item, what});
        }
    return ranges;
}

// Error(invalid_argument) where one problem writes bytes another touches.
void check_no_aliasing(const std::vector<Bound>& bound) {
    const std::vector<Touched> ranges = touched_ranges(bound);
    for (size_t a = 0; a < ranges.size(); ++a)
        for (size_t b = a + 1; b < ranges.size(); ++b) {
            const Touched& x = ranges[a];
            const Touched& y = ranges[b];
            if (x.item == y.item || x.buffer != y.buffer || !(x.written || y.written)) continue;
            if (x.begin < y.end && y.begin < x.end)
                throw Error(ErrorKind::invalid_argument,
                            "batch problems " + std::to_string(x.item) + " and " + std::to_string(y.item) +
                                " overlap: the " + x.what + " of one at bytes [" + std::to_string(x.begin) + ", " +
                                std::to_string(x.end) + ") and the " + y.what + " of the other at [" +
                                std::to_string(y.begin) + ", " + std::to_string(y.end) + ") of one buffer");
        }
}

}  // namespace

void record_batch(const Context& ctx, const BatchItem* items, size_t count, VkCommandBuffer cb,
                  const Timestamps& timestamps) {
    // Empty tensors record nothing, as in record().
    std::vector<Bound> bound;
    for (size_t i = 0; i < count; ++i) {
        if (!items[i].plan) throw Error(ErrorKind::invalid_argument, "batch problem " + std::to_string(i) + " has no plan");
        if (items[i].plan->passes > 0)
            bound.push_back({i, items[i].plan,
                             checked_bindings(ctx, *items[i].plan, items[i].in, items[i].out, items[i].workspace,
                                              items[i].attention, {items[i].gradient, items[i].sink_gradient})});
    }
    check_no_aliasing(bound);
    // Each problem's ranges (Plan::ranges), with their descriptor sets.
    std::vector<std::vector<RangeCall>> calls;
    for (const Bound& p : bound) calls.push_back(range_calls(ctx, *p.plan, p.bindings));

    const DeviceFunctions& vk = ctx.vk();
    ctx.begin_label(cb, "vksoftmax batch of " + std::to_string(count));
    write_timestamp(vk, cb, timestamps, 0);
    std::vector<VkBufferMemoryBarrier> partials;
    for (size_t k = 0; k < bound.size(); ++k) {
        const Plan& plan = *bound[k].plan;
        dispatch_pass(vk, cb, plan, 0, calls[k]);
        if (plan.passes > 1) partials.push_back(partials_barrier(plan, items[bound[k].item].workspace));
    }
    if (!partials.empty()) {
        vk.vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 0,
                                nullptr, static_cast<uint32_t>(partials.size()), partials.data(), 0, nullptr);
        for (size_t k = 0; k < bound.size(); ++k) {
            if (bound[k].plan->passes > 1) dispatch_pass(vk, cb, *bound[k].plan, 1, calls[k]);
        }
    }
    write_timestamp(vk, cb, timestamps, 1);
    ctx.end_label(cb);
}

}  // namespace vksoftmax
