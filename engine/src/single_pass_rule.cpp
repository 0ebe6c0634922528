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

// What is known of the single-pass path on each vendor's devices, for the
// automatic rule: it is taken only where a measurement found it faster
// than the two-dispatch split path. Its waits are bounded (a workgroup
// that waits too long computes the missing partials itself), so on a
// device that gives no forward progress between workgroups it is slow,
// never hung; the conformance suite's stress case checks that under a
// watchdog.
struct SinglePassVendor {
    uint32_t vendor_id;
    bool faster;
    const char* reason;
};
constexpr SinglePassVendor kSinglePassVendors[] = {
    // bench/NOTES.md (v10): the handshake between workgroups (publish,
    // poll, read the partials) costs about 3.3 us on this driver, more than
    // the split path's second dispatch and barrier (2.3 us) and re-read.
    {0x10DE, false,
     "slower than two dispatches on an NVIDIA H200 (580.159.04): f32 1x131072 8.85 vs 7.86 us, 16x131072 12.4 vs "
     "11.4 us"},
    // Metal promises no forward progress between threadgroups; Apple M1 and
    // M3 were shown to lack it (Smith, Levien, Owens, SPAA 2025): partials
    // would often come from the waiting workgroup itself.
    {0x106B, false, "Apple GPUs give no forward progress between workgroups"},
    {0x13B5, false, "Arm Mali: not measured; workgroups not shown to run beside waiting ones"},
    {0x5143, false, "Qualcomm Adreno: not measured; workgroups not shown to run beside waiting ones"},
};

}  // namespace

SinglePassRule single_pass_rule(const DeviceInfo& d, SinglePass s) {
    if (s == SinglePass::never) return {false, "single-pass path turned off (never)"};
    if (!d.memory_model)
        return {false, d.name + " has no vulkanMemoryModel with device scope enabled: long rows take two dispatches"};
    if (s == SinglePass::allowed) return {true, "allowed: the Vulkan memory model at device scope"};
    for (const SinglePassVendor& v : kSinglePassVendors)
        if (v.vendor_id == d.vendor_id)
            return {v.faster, std::string(v.reason) + (v.faster ? "" : ": long rows take two dispatches")};
    return {false, "not measured on " + d.vendor_name() + " devices: long rows take two dispatches"};
}

}  // namespace vksoftmax
