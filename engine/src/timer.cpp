#include "vksoftmax/timer.hpp"

#include "vksoftmax/context.hpp"
#include "vksoftmax/error.hpp"

namespace vksoftmax {

Timer::Timer(Context& ctx, uint32_t slots) : vk_(&ctx.vk()), device_(ctx.device()), slots_(slots) {
    const DeviceInfo& d = ctx.info();
    if (!d.timestamps()) throw Error(ErrorKind::unsupported, d.name + " has no timestamps on its compute queue");
    period_ns_ = d.timestamp_period;
    mask_ = d.timestamp_valid_bits >= 64 ? ~0ull : ((1ull << d.timestamp_valid_bits) - 1ull);
    VkQueryPoolCreateInfo ci{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    ci.queryType = VK_QUERY_TYPE_TIMESTAMP;
    ci.queryCount = slots;
    VkQueryPool pool = VK_NULL_HANDLE;
    check(vk_->vkCreateQueryPool(device_, &ci, nullptr, &pool), "vkCreateQueryPool", "timestamp pool");
    auto destroy = vk_->vkDestroyQueryPool;
    VkDevice dev = device_;
    pool_ = Handle<VkQueryPool>(pool, [dev, destroy](VkQueryPool p) { destroy(dev, p, nullptr); });
}

void Timer::reset(VkCommandBuffer cb) const { vk_->vkCmdResetQueryPool(cb, pool_.get(), 0, slots_); }

void Timer::stamp(VkCommandBuffer cb, uint32_t slot) const {
    // Bottom of pipe: the stamp is taken once all earlier work has finished.
    vk_->vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool_.get(), slot);
}

std::vector<uint64_t> Timer::read_ticks() const {
    std::vector<uint64_t> ticks(slots_);
    check(vk_->vkGetQueryPoolResults(device_, pool_.get(), 0, slots_, ticks.size() * sizeof(uint64_t), ticks.data(),
                                     sizeof(uint64_t), VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
          "vkGetQueryPoolResults", "timestamp pool");
    for (uint64_t& t : ticks) t &= mask_;
    return ticks;
}

double Timer::ns_between(const std::vector<uint64_t>& ticks, uint32_t a, uint32_t b) const {
    // Masked subtraction survives a counter that wrapped between the stamps.
    uint64_t delta = (ticks.at(b) - ticks.at(a)) & mask_;
    return static_cast<double>(delta) * period_ns_;
}

}  // namespace vksoftmax
