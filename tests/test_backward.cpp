// The backward pass against the float64 CPU reference on every GPU path,
// storage type and kind of dispatch, and its closed forms: a gradient
// constant along the row gives dx = 0 (softmax), a one-hot gradient gives
// k y_j (1 - y_j) and -k y_i y_j, a log-softmax element of -inf gives
// exactly k dy, and a NaN anywhere in a row makes the row's dx NaN.
#include <cmath>
#include <limits>

#include "gpu_fixture.hpp"
#include "vksoftmax/cpu.hpp"
#include "vksoftmax/half.hpp"

using namespace vkstest;

namespace {

const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

// A fixture of its own, so that the suite's slices by name stay apart.
class BackwardTest : public Gpu {};

// y: the forward output of random logits (the CPU reference's, rounded to
// the storage type); dy: normal(0, 1) (backward_inputs()).
BackwardInputs random_inputs(const Problem& p) {
    const std::vector<float> x = random_logits(p.shape.elements(), fresh_seed());
    return backward_inputs(p, std::vector<double>(x.begin(), x.end()), fresh_seed());
}

struct BackwardOutcome {
    Plan plan;
    std::vector<double> got, ref;
    Accuracy acc;
};

// `in` in the problem's storage type, through run_backward() and the CPU
// reference (rounded as the GPU's output is).
BackwardOutcome run_backward_and_compare(const Problem& p, const BackwardInputs& in, const PlanOptions& opts = {}) {
    const size_t n = in.y.size();
    BackwardOutcome o;
    RunOptions ro;
    ro.plan = opts;
    std::vector<uint8_t> dx(n * dtype_size(p.dtype));
    o.plan = run_backward(Gpu::ctx(), p, to_storage(in.y, p.dtype).data(), to_storage(in.dy, p.dtype).data(), dx.data(),
                          ro).plan;
    o.got = to_double(dx.data(), n, p.dtype);
    o.ref.resize(n);
    cpu::softmax_backward(p, in.y.data(), in.dy.data(), o.ref.data());
    round_to(p.dtype, o.ref);
    o.acc = compare_backward(p, in.y, in.dy, o.got, o.ref);
    return o;
}

Problem backward_problem(uint64_t rows, uint64_t cols, Dtype dtype, bool log, uint64_t inner = 1) {
    Problem p;
    p.shape = {rows / inner, cols, inner};
    p.dtype = dtype;
    p.log = log;
    p.backward = true;
    return p;
}

struct Geometry {
    const char* what;
    uint64_t rows, cols, inner;
    PlanOptions options;
    ShaderKind kind;  // the kind of the plan's (first) dispatch
};

PlanOptions on_path(Path path, uint32_t slots = 0, uint32_t chunk = 0) {
    PlanOptions o;
    o.path = path;
    o.slots = slots;
    o.chunk_elements = chunk;
    return o;
}

}  // namespace

// Every kind of dispatch, softmax and log-softmax, fp32, fp16 and bf16,
// with scale 0.5 on every other case: short rows one per slot (a few lanes
// each where the device has shuffles), subgroup rows, workgroup rows in
// registers and in tiles (one slot: a tile shorter than the row), rows not
// a multiple of the vector width (windows), strided rows, and the split
// path with chunks of 64 (several per row).
TEST_F(BackwardTest, EveryKindAgainstTheReference) {
    const DeviceInfo& d = ctx().info();
    const bool subgroups = d.subgroup_arithmetic();
    const std::vector<Geometry> geometries = {
        {"rows per slot", 64, 7, 1, {}, ShaderKind::rows_per_slot},
        // Longer than a slot row (4 x subgroup size), shorter than a subgroup's tile.
        {"subgroup rows", 12, 12ull * d.subgroup_size + 3, 1, subgroups ? on_path(Path::subgroup_row) : on_path(Path::workgroup_row),
         ShaderKind::row_in_registers},
        {"workgroup rows", 6, 1009, 1, on_path(Path::workgroup_row), ShaderKind::row_in_registers},
        {"workgroup rows in tiles", 4, 4096, 1, on_path(Path::workgroup_row, 1), ShaderKind::row_in_tiles},
        {"strided rows", 6, 300, 3, on_path(Path::workgroup_row), ShaderKind::row_in_registers},
        {"split", 3, 5000, 1, on_path(Path::split, 0, 64), ShaderKind::split_statistics},
    };
    uint32_t variant = 0, runs = 0;
    for (const Geometry& g : geometries)
        for (Dtype dtype : {Dtype::f32, Dtype::f16, Dtype::bf16}) {
            // On a CPU device softmax or log-softmax by rotation (full_sweeps()).
            ++variant;
            for (bool log : {false, true}) {
                if (!sweep_runs(variant, log ? 1 : 0, 2)) continue;
                Problem p = backward_problem(g.rows, g.cols, dtype, log, g.inner);
                if (variant % 2) p.scale = 0.5;
                const BackwardOutcome o = run_backward_and_compare(p, random_inputs(p), g.options);
                if (g.kind != ShaderKind::rows_per_slot || subgroups) {
                    EXPECT_EQ(o.plan.key[0].kind, g.kind) << g.what << ": not the kind this case is for";
                }
                EXPECT_TRUE(o.plan.key[0].backward) << g.what;
                const Bound b = accuracy_bound(p.dtype, p.log);
                EXPECT_TRUE(o.acc.within(b.rel, 0.0)) << g.what << ", " << describe(p, g.options) << ": "
                                                      << o.acc.describe();
                ++runs;
            }
        }
    EXPECT_EQ(runs, full_sweeps() ? 36u : 18u) << "cases run";
}

// Closed forms (fp32, every path): a constant dy gives dx = 0 within the
// sum's rounding; a one-hot dy at j gives k y_j (1 - y_j) there and
// -k y_i y_j elsewhere; log-softmax, a -inf in y gives exactly k dy there;
// a NaN in y or dy makes its row NaN and leaves the others alone.
TEST_F(BackwardTest, ClosedForms) {
    const DeviceInfo& d = ctx().info();
    std::vector<PlanOptions> paths = {on_path(Path::workgroup_row), on_path(Path::split, 0, 64)};
    if (d.subgroup_arithmetic()) paths.push_back(on_path(Path::subgroup_row));
    const uint64_t n = 200;
    for (const PlanOptions& o : paths)
        for (bool log : {false, true}) {
            Problem p = backward_problem(4, n, Dtype::f32, log);
            p.scale = 2.0;
            BackwardInputs in = random_inputs(p);
            const uint64_t hot = 37;
            for (uint64_t i = 0; i < n; ++i) {
                in.dy[i] = 0.75;                         // row 0: constant
                in.dy[n + i] = i == hot ? 1.0 : 0.0;     // row 1: one-hot
            }
            if (log) in.y[2 * n + 5] = -kInf;            // row 2: an element the forward hid
            in.dy[3 * n + 11] = kNaN;                    // row 3: NaN
            BackwardOutcome out = run_backward_and_compare(p, in, o);
            const std::string what = describe(p, o);
            for (uint64_t i = 0; i < n; ++i) {
                // Row 0: softmax: k y (c - c sum y) = 0 up to sum y's rounding;
                // log-softmax: k (c - exp(y) n c).
                const double zero_or = log ? 2.0 * (0.75 - std::exp(in.y[i]) * 0.75 * n) : 0.0;
                EXPECT_NEAR(out.got[i], zero_or, 1e-5 * (1 + std::fabs(zero_or))) << what << ": row 0 (constant dy), " << i;
                const double yi = log ? std::exp(in.y[n + i]) : in.y[n + i];
                const double yj = log ? std::exp(in.y[n + hot]) : in.y[n + hot];
                const double want = log ? 2.0 * ((i == hot ? 1.0 : 0.0) - yi)
                                        : (i == hot ? 2.0 * yj * (1.0 - yj) : -2.0 * yi * yj);
                EXPECT_NEAR(out.got[n + i], want, 1e-5 * (std::fabs(want) + 1e-3)) << what << ": row 1 (one-hot dy), " << i;
                EXPECT_TRUE(std::isnan(out.got[3 * n + i])) << what << ": row 3 (a NaN in dy) must be NaN, " << i;
            }
            if (log) {
                EXPECT_EQ(out.got[2 * n + 5], static_cast<double>(static_cast<float>(2.0 * in.dy[2 * n + 5])))
                    << what << ": a -inf in y gives exactly k dy";
            }
            EXPECT_EQ(out.acc.nonfinite_mismatches, 0u) << what << ": " << out.acc.describe();
        }
}

// What the engine refuses: attention options on a backward problem, the
// single-pass path, record() with a backward plan and the reverse.
TEST_F(BackwardTest, Refusals) {
    Problem p = backward_problem(4, 100, Dtype::f32, false);
    p.attention.causal = true;
    EXPECT_THROW(make_plan(ctx(), p), Error) << "attention options with backward";
    p.attention.causal = false;
    EXPECT_THROW(make_plan(ctx(), p, on_path(Path::single_pass)), Error) << "single-pass backward";
    const Plan backward = make_plan(ctx(), p);
    EXPECT_NE(backward.label.find("backward"), std::string::npos) << backward.label;
    std::vector<float> y(400, 0.01f), dy(400, 1.0f), dx(400);
    EXPECT_THROW(run(ctx(), p, y.data(), dx.data()), Error) << "run() with a backward problem";
    p.backward = false;
    EXPECT_THROW(run_backward(ctx(), p, y.data(), dy.data(), dx.data()), Error) << "run_backward() with a forward problem";
    try {
        record(ctx(), backward, VK_NULL_HANDLE, {}, {}, {});
        ADD_FAILURE() << "record() took a backward plan";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("record_backward"), std::string::npos) << e.what();
    }
}
