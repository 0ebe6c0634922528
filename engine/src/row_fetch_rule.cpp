// Whether masked 16-bit attention rows held by a workgroup fetch the next
// row before reducing the current one (row_fetch_rule()), from what was
// measured on each driver.
#include <string>

#include "driver_table.hpp"
#include "vksoftmax/plan.hpp"

namespace vksoftmax {

const char* row_fetch_name(RowFetch f) {
    switch (f) {
        case RowFetch::automatic: return "automatic";
        case RowFetch::in_turn: return "in-turn";
        case RowFetch::next_row_first: return "next-row-first";
    }
    return "?";
}

namespace {

// Drivers on which such rows ran faster with the next row fetched first,
// and whose attention catalogue passed so. Elsewhere a workgroup keeps
// one row at a time: the next row's words take registers (72 against 55
// a workgroup of 64 x 8 on NVIDIA's compiler), which a driver that
// already hides the reduction behind other workgroups would pay for.
constexpr DriverReason kNextRowFirstDrivers[] = {
    // bench/NOTES.md (H100, 580.159.04, v118), us, in turn -> next row
    // first: masked f16 (1, 32, 2048, 2048) at 64 x 8 196.9 -> 192.7, bf16
    // at 64 x 8 200.0 -> 192.8; f16 (1, 8, 4096, 4096) at 128 x 8 204.2 ->
    // 198.8, bf16 206.6 -> 198.7. A mask per head, read from memory once,
    // 0.5% slower (267.1 -> 268.5): the plan leaves such masks in turn.
    // H200 (v120): f16 (1, 32, 2048, 2048) 162.8 -> 144.7 (79% -> 89% of
    // the copy), (1, 8, 4096, 4096) 176.0 -> 152.6, bf16 177.8 -> 156.7.
    {VK_DRIVER_ID_NVIDIA_PROPRIETARY,
     "NVIDIA's driver: masked 16-bit workgroup rows fetch the next row first, 2-4% faster on an H100, 11-13% on an "
     "H200 (580.159.04)"},
};

}  // namespace

RowFetchRule row_fetch_rule(const DeviceInfo& d, RowFetch f) {
    if (f == RowFetch::in_turn) return {false, "a row at a time (in-turn)"};
    if (f == RowFetch::next_row_first) return {true, "the next row fetched first (next-row-first)"};
    if (const char* reason = driver_reason(d, kNextRowFirstDrivers)) return {true, reason};
    return {false, "the next row fetched first not measured on " + d.name + "'s driver: a row at a time"};
}

}  // namespace vksoftmax
