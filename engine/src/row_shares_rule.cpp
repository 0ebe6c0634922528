// Whether plain forward rows of 8193-16384 elements in small batches are
// held by several workgroups each (row_shares_rule()), from what was
// measured on each driver.
#include <string>

#include "driver_table.hpp"
#include "vksoftmax/plan.hpp"

namespace vksoftmax {

const char* row_shares_name(RowShares s) {
    switch (s) {
        case RowShares::automatic: return "automatic";
        case RowShares::whole: return "whole";
        case RowShares::shared: return "shared";
    }
    return "?";
}

namespace {

// Drivers on which such rows ran faster shared. Elsewhere a row keeps one
// workgroup (or the single-pass path's chunks): a workgroup that reads a
// whole row of 64 KiB for a share of its outputs pays for it where the
// driver's handshake between workgroups, or one workgroup's reads, cost
// less than on NVIDIA's.
constexpr DriverReason kSharedRowDrivers[] = {
    // bench/NOTES.md (H100, 580.159.04, v124), us, whole -> shared: f32
    // 1x16384 4.93 -> 4.41 (single-pass before), 8x16384 5.42 -> 4.84,
    // 1x12288 4.47 -> 4.08; f16 1x16384 4.59 -> 4.31; bf16 16x16384 5.01
    // -> 4.70 (tuning.hpp, kSharedRowMin). The plan's form, v125: 1-13%
    // faster on every such shape timed, level elsewhere.
    {VK_DRIVER_ID_NVIDIA_PROPRIETARY,
     "NVIDIA's driver: rows of 8193-16384 in small batches shared by several workgroups, 1-13% faster on an H100 "
     "(580.159.04)"},
};

}  // namespace

RowSharesRule row_shares_rule(const DeviceInfo& d, RowShares s) {
    if (s == RowShares::whole) return {false, "a row whole (whole)"};
    if (s == RowShares::shared) return {true, "rows shared by several workgroups (shared)"};
    if (const char* reason = driver_reason(d, kSharedRowDrivers)) return {true, reason};
    return {false, "shared rows not measured on " + d.name + "'s driver: a row whole"};
}

}  // namespace vksoftmax
