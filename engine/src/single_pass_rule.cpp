// The single-pass path's rule: whether a device takes long rows in one
// dispatch (single_pass_rule()), from its features and what is known of
// its vendor.
#include <string>

#include "vksoftmax/plan.hpp"

namespace vksoftmax {

const char* single_pass_name(SinglePass s) {
    switch (s) {
        case SinglePass::automatic: return "automatic";
        case SinglePass::allowed: return "allowed";
        case SinglePass::never: return "never";
    }
    return "?";
}

namespace {

// Where a vendor's devices take the path under the automatic rule.
enum class Takes { never, resident_batches };

// What is known of the single-pass path on each vendor's devices, for the
// automatic rule: it is taken only where a measurement found it faster
// than the two-dispatch split path. Its waits are bounded (a workgroup
// that waits too long computes the missing partials itself), so on a
// device that gives no forward progress between workgroups it is slow,
// never hung; the conformance suite's stress case checks that under a
// watchdog.
struct SinglePassVendor {
    uint32_t vendor_id;
    Takes takes;
    const char* reason;
};
constexpr SinglePassVendor kSinglePassVendors[] = {
    // bench/NOTES.md (v18, H100, 580.159.04): with self-describing partials
    // the path beats two dispatches on batches whose grid is resident at
    // once (f32 32x128256 15.1 vs 16.8 us, 16x524288 34.5 vs 37.0; f16
    // 32x128256 12.7 vs 13.5); single rows, and grids the GPU cannot hold
    // at once (whose workgroups then wait on ones not yet started), are
    // slower (f32 1x524288 9.4 vs 8.8, 1x16M 75.9 vs 72.8; f16 128x151936
    // 47.1 vs 44.1). A single row of 30000 to 32768 elements, which one
    // workgroup would hold, is faster in 8 chunks of one wave (H200, v23:
    // f32 1x32768 7.0 vs 7.7; backward 5.8 vs 7.6), and since the faster
    // gathering of v35 so are fewer rows than a batch in up to 64 chunks
    // against two dispatches (H100, v37, v38: f32 1x131072 7.7 vs 8.3,
    // 4x65536 7.7 vs 8.4); 128 chunks are level. One wave of held chunks
    // covers rows and batches alike (H100, v40: f32 16x100000 9.8 vs 11.0,
    // 4x524288 11.1 vs 12.0). Since polling rounds visit only the pending
    // partials (v64), rows of 24576 elements or more whose chunks of at most
    // 8192 make one wave are faster in one dispatch than a workgroup a row,
    // however many (H200: f32 4x32768 5.5 vs 7.4 us, 32x32768 6.5 vs 8.4),
    // and since a held chunk's statistic takes one exchange (v65), forward
    // rows from 16384 elements and over 32 KB in at least 3 chunks (f32
    // 8x16384 5.4 vs 5.6, f16 32x20480 5.5 vs 6.9; f16 1x18000 4.8 vs 6.7,
    // v68); held chunks of 8192 in grids of up to two waves (f32 48x32000
    // 7.1 vs 8.3, f16 64x32000 6.5 vs 7.3, v72), backward batches of such
    // rows too (bf16 64x32000 6.5 vs 7.8, v72); fewer than 8 rows in up to
    // two waves of held chunks, up to 128 a row (fp32: 256), are 9-30%
    // faster than two dispatches (H200, v82: f16 2x1048576 7.3 vs 10.0,
    // f32 1x2097152 10.0 vs 11.8).
    {0x10DE, Takes::resident_batches,
     "NVIDIA: faster than two dispatches on rows that one wave of held chunks covers, at most 64 chunks a row "
     "(H100, 580.159.04), and fewer than 8 rows in up to two such waves, up to 128 chunks a row (fp32 256; "
     "H200), and on other batches of at least 8 long rows of 6 to 40 MiB "
     "in all, with a grid of at most 4 workgroups per multiprocessor and chunks at least 3/4 full (H100; past "
     "32 MiB, H200), and than a "
     "workgroup a row on rows whose chunks of at most 8192 make one wave (chunks of 8192: two): forward "
     "from 16384 elements and over 32 KB in at least 3 chunks, backward from 24576 elements and backward batches "
     "as forward rows (H200); two dispatches elsewhere"},
    // Metal promises no forward progress between threadgroups; Apple M1 and
    // M3 were shown to lack it (Smith, Levien, Owens, SPAA 2025): partials
    // would often come from the waiting workgroup itself.
    {0x106B, Takes::never, "Apple GPUs give no forward progress between workgroups"},
    {0x13B5, Takes::never, "Arm Mali: not measured; workgroups not shown to run beside waiting ones"},
    {0x5143, Takes::never, "Qualcomm Adreno: not measured; workgroups not shown to run beside waiting ones"},
};

}  // namespace

SinglePassRule single_pass_rule(const DeviceInfo& d, SinglePass s) {
    if (s == SinglePass::never) return {false, false, "single-pass path turned off (never)"};
    if (!d.memory_model)
        return {false, false,
                d.name + " has no vulkanMemoryModel with device scope enabled: long rows take two dispatches"};
    if (s == SinglePass::allowed) return {true, false, "allowed: the Vulkan memory model at device scope"};
    for (const SinglePassVendor& v : kSinglePassVendors) {
        if (v.vendor_id != d.vendor_id) continue;
        if (v.takes == Takes::never) return {false, false, std::string(v.reason) + ": long rows take two dispatches"};
        return {true, true, v.reason};
    }
    return {false, false, "not measured on " + d.vendor_name() + " devices: long rows take two dispatches"};
}

}  // namespace vksoftmax
