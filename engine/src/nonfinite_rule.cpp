// How the forward shaders find a row's NaN and +inf (nonfinite_rule()),
// from what is known of each driver's exp2.
#include <string>

#include "driver_table.hpp"
#include "vksoftmax/plan.hpp"

namespace vksoftmax {

const char* nonfinite_check_name(NonfiniteCheck c) {
    switch (c) {
        case NonfiniteCheck::automatic: return "automatic";
        case NonfiniteCheck::each_element: return "each-element";
        case NonfiniteCheck::by_sum: return "by-sum";
    }
    return "?";
}

namespace {

// Drivers whose exp2 gives exactly 0 for -inf and NaN for NaN (Vulkan
// leaves both undefined), and whose arithmetic carries a NaN through, so
// that a row's sum of exps is NaN exactly where the row holds a NaN or
// +inf. Each was checked by the conformance catalogue's non-finite rows
// on every path with the check by sum (tests/conformance/).
constexpr DriverReason kBySumDrivers[] = {
    // bench/NOTES.md (v49, H200, 580.159.04): the quick catalogue passes
    // with it (f32, f16, bf16); against each element tested, masked
    // (8, 32, 512, 512) f16 74.8 -> 71.8 us and bf16 78.9 -> 74.2, f16
    // 65536x128 14.0 -> 13.4, bf16 4096x1024 6.5 -> 5.9.
    {VK_DRIVER_ID_NVIDIA_PROPRIETARY,
     "NVIDIA's driver: exp2(-inf) is 0 and exp2(NaN) NaN, so a row's NaN and +inf are found by its sum (H200, "
     "580.159.04)"},
};

}  // namespace

NonfiniteRule nonfinite_rule(const DeviceInfo& d, NonfiniteCheck c) {
    if (c == NonfiniteCheck::each_element) return {false, "each element tested (each-element)"};
    if (c == NonfiniteCheck::by_sum) return {true, "found by the row's sum (by-sum)"};
    if (const char* reason = driver_reason(d, kBySumDrivers)) return {true, reason};
    return {false, "exp2 of -inf and NaN not known on " + d.name + "'s driver: each element tested"};
}

}  // namespace vksoftmax
