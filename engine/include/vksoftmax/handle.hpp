// Handle<T>: sole owner of one Vulkan object; destroys it when dropped.
#pragma once
#include <vulkan/vulkan.h>

#include <functional>
#include <utility>

namespace vksoftmax {

template <typename T>
class Handle {
public:
    Handle() = default;
    Handle(T h, std::function<void(T)> destroy) : h_(h), destroy_(std::move(destroy)) {}
    Handle(Handle&& o) noexcept : h_(std::exchange(o.h_, T(VK_NULL_HANDLE))), destroy_(std::move(o.destroy_)) {}
    Handle& operator=(Handle&& o) noexcept {
        if (this != &o) {
            reset();
            h_ = std::exchange(o.h_, T(VK_NULL_HANDLE));
            destroy_ = std::move(o.destroy_);
        }
        return *this;
    }
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;
    ~Handle() { reset(); }

    T get() const noexcept { return h_; }
    explicit operator bool() const noexcept { return h_ != T(VK_NULL_HANDLE); }
    void reset() {
        if (h_ != T(VK_NULL_HANDLE) && destroy_) destroy_(h_);
        h_ = T(VK_NULL_HANDLE);
    }

private:
    T h_ = T(VK_NULL_HANDLE);
    std::function<void(T)> destroy_;
};

}  // namespace vksoftmax
