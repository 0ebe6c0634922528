// Tensors larger than one storage-buffer binding, cut into ranges of whole
// outer slices (Plan::ranges): forced small ranges on every path, with
// strided rows, fp16 rows not a multiple of 4, the split and single-pass
// workspaces in slices, the attention options and the backward pass's
// sink gradient numbered across ranges;
// and one tensor past the device's own maxStorageBufferRange.
#include <cmath>
#include <cstdlib>
#include <string>

#include "gpu_fixture.hpp"
#include "vksoftmax/attention.hpp"
#include "vksoftmax/cpu.hpp"

using namespace vkstest;

namespace {

class RangesTest : public Gpu {};

PlanOptions ranges_of(uint64_t bytes, std::optional<Path> path = std::nullopt) {
    PlanOptions o;
    o.max_range_bytes = bytes;
    o.path = path;
    o.single_pass = SinglePass::allowed;
    if (path == Path::split || path == Path::single_pass) o.chunk_elements = 64;
    return o;
}

std::vector<Path> forced_paths() {
    std::vector<Path> paths = {Path::workgroup_row, Path::split};
    if (Gpu::ctx().info().subgroup_arithmetic()) paths.push_back(Path::subgroup_row);
    if (has_single_pass(Gpu::ctx().info())) paths.push_back(Path::single_pass);
    return paths;
}

}  // namespace

// 1000 rows of 300 (and strided (50, 33, 9) along axis 1, and fp16 rows of
// 301) in ranges of at most 16 KiB: each range's rows at their offset, every
// output checked against the reference.
TEST_F(RangesTest, EveryPathInSmallRanges) {
    struct Shape3 {
        Shape shape;
        Dtype dtype;
    };
    const std::vector<Shape3> shapes = {{{1000, 300, 1}, Dtype::f32}, {{50, 33, 9}, Dtype::f32}, {{700, 301, 1}, Dtype::f16}};
    uint32_t variant = 0;
    for (const Shape3& s : shapes) {
        const std::vector<Path> paths = forced_paths();
        for (uint32_t k = 0; k < paths.size(); ++k) {
            if (!sweep_runs(variant, k, static_cast<uint32_t>(paths.size()))) continue;
            if (paths[k] == Path::subgroup_row && s.shape.axis > 4u * 8u * ctx().info().subgroup_size) continue;
            Problem p;
            p.shape = s.shape;
            p.dtype = s.dtype;
            const Outcome o = run_and_compare(p, random_logits(p.shape.elements(), fresh_seed()), ranges_of(16384, paths[k]));
            EXPECT_GT(o.plan.ranges, 1u) << describe(p, ranges_of(16384, paths[k]));
            const Bound b = accuracy_bound(p.dtype, p.log);
            EXPECT_TRUE(o.acc.within(b.rel, 0.0)) << describe(p, ranges_of(16384, paths[k])) << " in " << o.plan.ranges
                                                  << " ranges: " << o.acc.describe();
        }
        ++variant;
    }
}

// The attention options across ranges: heads and query rows, the mask row,
// the causal limit, the sink and the log-sum-exp of each row are those of
// its place in the whole tensor, not in its range.
TEST_F(RangesTest, AttentionAcrossRanges) {
    Problem p;
    p.shape = {2 * 3 * 40, 64, 1};
    p.attention.heads = 3;
    p.attention.query_rows = 40;
    p.attention.mask = true;
    p.attention.mask_heads = 3;
    p.attention.causal = true;
    p.attention.causal_offset = 20;
    p.attention.sinks = true;
    p.attention.lse = true;
    const AttentionLayout layout = attention_layout(p);
    std::vector<float> mask(layout.mask_elements);
    std::mt19937 rng(fresh_seed());
    std::uniform_real_distribution<float> value(-4.0f, 0.0f);
    for (float& v : mask) v = value(rng);
    const std::vector<float> sinks = {9.0f, -1.0f, 11.0f};
    std::vector<float> lse(layout.lse), lse_ref(layout.lse);
    const AttentionData gpu{mask.data(), sinks.data(), lse.data()}, ref{mask.data(), sinks.data(), lse_ref.data()};
    for (Path path : forced_paths()) {
        const PlanOptions opts = ranges_of(3 * 64 * 4 + 16, path);  // 3 rows a range: ranges cross heads and queries
        const Outcome o = run_and_compare(p, random_logits(p.shape.elements(), fresh_seed()), opts, gpu, ref);
        EXPECT_EQ(o.plan.ranges, 80u) << path_name(path);
        EXPECT_TRUE(o.acc.within(1e-5, 0.0)) << path_name(path) << ": " << o.acc.describe();
        for (size_t r = 0; r < lse.size(); ++r)
            ASSERT_NEAR(lse[r], lse_ref[r], 1e-5 * std::max(1.0f, std::fabs(lse_ref[r]))) << path_name(path) << " row " << r;
    }
}

// A slice that cannot be cut further and does not fit is refused, naming it.
// The backward pass of a forward with sinks in ranges of at most 16 KiB
// (2 heads of 100 query rows of 300): dy windowed as y is, and each row's
// sink gradient at its row of the whole tensor (first_row), on the
// workgroup and split paths.
TEST_F(RangesTest, BackwardSinkGradientAcrossRanges) {
    for (Path path : {Path::workgroup_row, Path::split}) {
        Problem p;
        p.shape = {200, 300, 1};
        p.backward = true;
        p.attention.sinks = true;
        p.attention.heads = 2;
        p.attention.query_rows = 100;
        const std::vector<float> x = random_logits(p.shape.elements(), fresh_seed());
        const std::vector<float> sinks = {2.0f, 9.0f};
        const BackwardInputs in = backward_inputs(p, std::vector<double>(x.begin(), x.end()), fresh_seed(), sinks.data());
        RunOptions ro;
        ro.plan = ranges_of(16384, path);
        std::vector<float> dx(in.y.size()), sink_gradient(200);
        const RunResult r = run_backward(ctx(), p, to_storage(in.y, p.dtype).data(), to_storage(in.dy, p.dtype).data(),
                                         dx.data(), ro, sink_gradient.data());
        EXPECT_GT(r.plan.ranges, 1u) << describe(p, ro.plan);
        std::vector<double> ref(in.y.size()), sink_ref(200);
        cpu::softmax_backward(p, in.y.data(), in.dy.data(), ref.data(), sink_ref.data());
        const Accuracy dx_acc = compare_backward(p, in.y, in.dy, std::vector<double>(dx.begin(), dx.end()), ref);
        const Accuracy sink_acc =
            compare_sink_gradient(p, in.y, in.dy, std::vector<double>(sink_gradient.begin(), sink_gradient.end()), sink_ref);
        const Bound b = accuracy_bound(p.dtype, p.log);
        EXPECT_TRUE(dx_acc.within(b.rel, 0.0)) << describe(p, ro.plan) << " in " << r.plan.ranges
                                               << " ranges, dx: " << dx_acc.describe();
        EXPECT_TRUE(sink_acc.within(b.rel, 0.0)) << describe(p, ro.plan) << " in " << r.plan.ranges
                                                 << " ranges, sink gradient: " << sink_acc.describe();
    }
}

TEST_F(RangesTest, SliceLargerThanARangeIsRefused) {
    Problem p;
    p.shape = {4, 100000, 1};
    try {
        plan_geometry(ctx().info(), p, ranges_of(65536));
        FAIL() << "a 400000-byte row planned in ranges of 65536 bytes";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::unsupported);
        EXPECT_NE(std::string(e.what()).find("a slice of 400000 bytes"), std::string::npos) << e.what();
    }
}

// A tensor past the device's own maxStorageBufferRange (lavapipe: 128 MiB)
// where that is small enough to cross in a test.
TEST_F(RangesTest, PastTheDevicesBindingRange) {
    const uint64_t range = ctx().info().max_storage_buffer_range;
    if (range > (1ull << 28)) GTEST_SKIP() << "maxStorageBufferRange " << range << " is too large to cross cheaply here";
    const uint64_t cols = 4000, rows = range / (4 * cols) + 100;
    Problem p;
    p.shape = {rows, cols, 1};
    const Outcome o = run_and_compare(p, random_logits(p.shape.elements(), fresh_seed()));
    EXPECT_EQ(o.plan.ranges, 2u) << rows << " x " << cols << " f32 against a range of " << range << " bytes";
    EXPECT_TRUE(o.acc.within(1e-5, 0.0)) << o.acc.describe();
}

// Past 4 GiB (NVIDIA's maxStorageBufferRange is 4 GiB - 1): 1100 rows of
// 2^20 fp32 with the log-sum-exp, 4.6 GB. Some 40 GB of host memory for the
// reference: only where VKSOFTMAX_LARGE_TESTS=1 (the device gate).
TEST_F(RangesTest, PastFourGiB) {
    const char* large = std::getenv("VKSOFTMAX_LARGE_TESTS");
    if (!large || std::string(large) != "1") GTEST_SKIP() << "VKSOFTMAX_LARGE_TESTS=1 runs it (40 GB of host memory)";
    Problem p;
    p.shape = {1100, 1u << 20, 1};
    p.attention.lse = true;
    std::vector<float> lse(1100), lse_ref(1100);
    const Outcome o = run_and_compare(p, random_logits(p.shape.elements(), fresh_seed()), {},
                                      AttentionData{nullptr, nullptr, lse.data()}, AttentionData{nullptr, nullptr, lse_ref.data()});
    EXPECT_GT(o.plan.tensor_bytes, 1ull << 32);
    EXPECT_GE(o.plan.ranges, 2u);
    EXPECT_TRUE(o.acc.within(1e-5, 0.0)) << o.plan.ranges << " ranges: " << o.acc.describe();
    for (size_t r = 0; r < lse.size(); ++r)
        ASSERT_NEAR(lse[r], lse_ref[r], 1e-5 * std::max(1.0f, std::fabs(lse_ref[r]))) << "row " << r;
}
