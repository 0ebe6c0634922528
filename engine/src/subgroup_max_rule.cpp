// Whether a single-pass or workgroup-row module takes a subgroup's max on
// integer keys (subgroup_max_rule()), from what was measured and checked on
// each driver.
#include <string>

#include "driver_table.hpp"
#include "vksoftmax/plan.hpp"

namespace vksoftmax {

const char* subgroup_max_name(SubgroupMax m) {
    switch (m) {
        case SubgroupMax::automatic: return "automatic";
        case SubgroupMax::float_max: return "float";
        case SubgroupMax::integer_keys: return "integer-keys";
    }
    return "?";
}

namespace {

// Drivers whose single-pass and workgroup-row modules with integer keys
// passed every GPU test and the whole conformance catalogue, and on which
// single rows ran faster with them. Only single rows: on batches they were
// level to 5% slower (log-softmax), and in a subgroup-row module of the
// same driver such keys gave wrong maxima (bench/NOTES.md, v67).
constexpr DriverReason kKeyDrivers[] = {
    // bench/NOTES.md (H200, 580.159.04), single-pass rows (v67): f32
    // 1x131072 5.30 -> 5.01 us, 1x524288 6.05 -> 5.80; f16 1x131072 5.12 ->
    // 4.97; bf16 1x32768 5.15 -> 4.91. Workgroup rows (v68): f32 1x2048
    // 3.97 -> 3.80, bf16 1x8192 4.46 -> 4.28, log-softmax f32 1x8192 4.56
    // -> 4.44.
    {VK_DRIVER_ID_NVIDIA_PROPRIETARY,
     "NVIDIA's driver: a single row's subgroup maxima on integer keys, one instruction each (H200, 580.159.04)"},
};

}  // namespace

SubgroupMaxRule subgroup_max_rule(const DeviceInfo& d, uint64_t rows, SubgroupMax m) {
    if (m == SubgroupMax::float_max) return {false, "float maxima (float)"};
    if (m == SubgroupMax::integer_keys) return {true, "integer keys (integer-keys)"};
    if (rows != 1) return {false, "float maxima: integer keys are taken for single rows only"};
    if (const char* reason = driver_reason(d, kKeyDrivers)) return {true, reason};
    return {false, "integer keys not measured on " + d.name + "'s driver: float maxima"};
}

}  // namespace vksoftmax
