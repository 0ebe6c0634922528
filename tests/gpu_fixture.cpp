#include "gpu_fixture.hpp"

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

namespace vkstest {

std::unique_ptr<Context> Gpu::ctx_;

void Gpu::SetUpTestSuite() {
    if (!ctx_) {
        ContextOptions o;
        o.validation = true;
        if (const char* dev = std::getenv("VKSOFTMAX_DEVICE")) o.device = dev;
        ctx_ = std::make_unique<Context>(o);
        std::printf("GPU tests on %s (%s), subgroup size %u, validation layer %s, %s\n", ctx_->info().name.c_str(),
                    ctx_->info().driver_info.c_str(), ctx_->info().subgroup_size,
                    ctx_->validation_enabled() ? "on" : "OFF (not installed)",
                    full_sweeps() ? "full sweeps" : "sweeps of one combination per shader variant");
    }
}

void Gpu::TearDown() {
    const uint64_t now = ctx_->validation_errors();
    if (now != errors_before_) {
        std::string all;
        for (const std::string& m : ctx_->validation_messages()) all += "\n  " + m;
        ADD_FAILURE() << (now - errors_before_) << " validation message(s):" << all;
    }
}

bool full_sweeps() {
    if (const char* env = std::getenv("VKSOFTMAX_FULL_SWEEPS")) return std::string(env) != "0";
    return Gpu::ctx().info().type != VK_PHYSICAL_DEVICE_TYPE_CPU;
}

bool sweep_runs(uint32_t variant, uint32_t choice, uint32_t choices) {
    if (full_sweeps()) return true;
    uint32_t rotation = 0;  // log2 of the subgroup size: another choice at each size
    for (uint32_t size = Gpu::ctx().info().subgroup_size; size > 1; size /= 2) ++rotation;
    return (variant + rotation) % choices == choice;
}

bool has_single_pass(const DeviceInfo& d) { return single_pass_rule(d, SinglePass::allowed).allowed; }

PlanOptions single_pass(uint32_t chunk, Reduction reduction, uint32_t patience) {
    PlanOptions o;
    o.path = Path::single_pass;
    o.single_pass = SinglePass::allowed;
    o.single_pass_patience = patience;
    o.chunk_elements = chunk;
    o.reduction = reduction;
    return o;
}

uint32_t fresh_seed() { return std::random_device{}(); }

const char* const kOddEnds =
    "row 1 starts with a NaN, row 2 ends with +inf, row 3 is all -inf, row 4's only finite element is its first, "
    "row 6's its last";

std::vector<float> rows_with_non_finite_ends(const Problem& p, uint64_t cols) {
    const float inf = std::numeric_limits<float>::infinity();
    auto x = random_logits(p.shape.elements(), fresh_seed());
    x[1 * cols] = std::numeric_limits<float>::quiet_NaN();
    x[2 * cols + cols - 1] = inf;
    for (uint64_t i = 0; i < cols; ++i) x[3 * cols + i] = -inf;
    for (uint64_t i = 1; i < cols; ++i) x[4 * cols + i] = -inf;
    for (uint64_t i = 0; i + 1 < cols; ++i) x[6 * cols + i] = -inf;
    return x;
}

std::vector<float> integer_key_edge_rows(const KeyEdgeRows& rows, Dtype dtype, uint32_t seed) {
    const uint64_t cols = rows.cols;
    const float big = dtype == Dtype::f16 ? 65504.f : dtype == Dtype::bf16 ? 3.3895314e38f : FLT_MAX;
    const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> x = random_logits(8 * cols, seed);
    auto row = [&](uint64_t r) { return x.begin() + static_cast<long>(r * cols); };
    for (uint64_t i = 0; i < cols; ++i) {
        row(0)[i] = -std::fabs(row(0)[i]) - 20.f;
        if (i < rows.late) row(1)[i] -= 60.f;
        row(2)[i] = (i % 3 == 0) ? big : -big;
        row(3)[i] = -inf;
        row(6)[i] = (i % 4 == 0) ? 0.f : (i % 4 == 1) ? -0.f : (i % 4 == 2) ? 1e-40f : -1e-42f;
    }
    row(3)[cols - 3] = 1.5f;
    row(4)[rows.nan_at[0]] = -nan;
    row(5)[rows.nan_at[1]] = nan;
    return x;
}

void expect_integer_key_edge_outputs(const Outcome& o, const KeyEdgeRows& rows, const Problem& p, const std::string& what) {
    const uint64_t cols = rows.cols;
    EXPECT_EQ(o.acc.nonfinite_mismatches, 0u) << what << ": " << o.acc.describe();
    for (uint64_t r : {4u, 5u})
        for (uint64_t i = 0; i < cols; ++i)
            ASSERT_TRUE(std::isnan(o.got[r * cols + i])) << what << ": row " << r << " element " << i;
    EXPECT_EQ(o.got[3 * cols + cols - 3], p.log ? 0.0 : 1.0) << what << ": row 3's one finite element";
    EXPECT_TRUE(o.acc.within(accuracy_bound(p.dtype, p.log).rel, 0.0)) << what << ": " << o.acc.describe();
}

std::vector<float> random_logits(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.f, 4.f);
    std::vector<float> x(n);
    for (float& v : x) v = d(rng);
    return x;
}

std::string describe(const Problem& p, const PlanOptions& opts) {
    std::string s = std::string(dtype_name(p.dtype)) + (p.log ? " log-softmax " : " softmax ") + to_string(p.shape) +
                    " T=" + std::to_string(p.temperature) +
                    (p.precision == Precision::accurate ? " accurate" : "");
    if (opts.path) s += std::string(" path=") + path_name(*opts.path);
    if (opts.reduction == Reduction::shared) s += " reduction=shared";
    if (opts.reduction == Reduction::subgroup) s += " reduction=subgroup";
    if (opts.subgroup_size) s += " subgroup=" + std::to_string(opts.subgroup_size);
    if (opts.chunk_elements) s += " chunk=" + std::to_string(opts.chunk_elements);
    if (opts.workgroup_size) s += " wg=" + std::to_string(opts.workgroup_size);
    if (opts.slots) s += " slots=" + std::to_string(opts.slots);
    if (opts.write_shares) s += " shares=" + std::to_string(opts.write_shares);
    return s;
}

std::string describe_geometry(const Plan& plan) {
    std::string s = std::string(path_name(plan.path)) + ", " + std::to_string(plan.key[0].workgroup_size) + " x " +
                    std::to_string(plan.key[0].slots) + ", vec " + std::to_string(plan.key[0].vec);
    if (plan.path == Path::split || plan.path == Path::single_pass) s += ", chunks of " + std::to_string(plan.push.chunk);
    return s;
}

Outcome run_and_compare(const Problem& p, const std::vector<float>& x, const PlanOptions& opts, const AttentionData& gpu,
                        const AttentionData& ref) {
    Outcome out;
    const size_t n = x.size();
    RunOptions ro;
    ro.plan = opts;
    // The inputs as stored in the problem's type, and as the reference sees them.
    std::vector<double> xd(x.begin(), x.end());
    round_to(p.dtype, xd);
    std::vector<uint8_t> y(n * dtype_size(p.dtype));
    out.plan = run(Gpu::ctx(), p, to_storage(xd, p.dtype).data(), y.data(), ro, gpu).plan;
    out.got = to_double(y.data(), n, p.dtype);
    out.ref.resize(n);
    cpu::softmax(p, xd.data(), out.ref.data(), ref);
    // Round the reference to the output's type: a log-softmax of -FLT_MAX
    // beside FLT_MAX is -6.8e38 in float64 and -inf in fp32, correctly.
    out.exact = out.ref;
    round_to(p.dtype, out.ref);
    out.acc = compare(p, out.got, out.ref);
    return out;
}

}  // namespace vkstest
