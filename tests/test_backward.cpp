// The backward pass against the float64 CPU reference on every GPU path,
// storage type and kind of dispatch, and its closed forms: a gradient
// constant along the row gives dx = 0 (softmax), a one-hot gradient gives
// k y_j (1 - y_j) and -k y_i y_j, a log-softmax element of -inf gives
// exactly k dy, and a NaN anywhere in a row makes the row's dx NaN.
#include <cmath>
#include <limits>
#include <random>

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

// Every kind of dispatch: short rows one per slot (a few lanes each where
// the device has shuffles), subgroup rows, workgroup rows in registers and
// in tiles (one slot: a tile shorter than the row), rows not a multiple of
// the vector width (windows), strided rows where `strided`, the split
// path with chunks of 64 (several per row), and where the device has the
// single-pass path: chunks of one tile held in registers (5 of 8 chunks
// used), and chunks of three tiles re-read (4 chunks, the last empty) with
// patience 1, where workgroups compute their row's partials themselves
// (two geometries, not three: each is a pipeline per case, which a CPU
// device compiles cold in every CI run).
std::vector<Geometry> every_kind(const DeviceInfo& d, bool strided) {
    const bool subgroups = d.subgroup_arithmetic();
    std::vector<Geometry> geometries = {
        {"rows per slot", 64, 7, 1, {}, ShaderKind::rows_per_slot},
        // Longer than a slot row (4 x subgroup size), shorter than a subgroup's tile.
        {"subgroup rows", 12, 12ull * d.subgroup_size + 3, 1, subgroups ? on_path(Path::subgroup_row) : on_path(Path::workgroup_row),
         ShaderKind::row_in_registers},
        {"workgroup rows", 6, 1009, 1, on_path(Path::workgroup_row), ShaderKind::row_in_registers},
        {"workgroup rows in tiles", 4, 4096, 1, on_path(Path::workgroup_row, 1), ShaderKind::row_in_tiles},
        {"split", 3, 5000, 1, on_path(Path::split, 0, 64), ShaderKind::split_statistics},
    };
    if (strided) geometries.push_back({"strided rows", 6, 300, 3, on_path(Path::workgroup_row), ShaderKind::row_in_registers});
    if (has_single_pass(d)) {
        geometries.push_back({"single pass, held chunks", 3, 5000, 1, single_pass(1), ShaderKind::single_pass});
        geometries.push_back({"single pass, chunks re-read, partials computed by the waiting", 3, 30001, 1,
                              single_pass(9000, Reduction::automatic, 1), ShaderKind::single_pass});
    }
    return geometries;
}

// Runs `check(g, dtype, log, scale)` on each geometry x fp32/fp16/bf16 x
// softmax/log-softmax (on a CPU device softmax or log-softmax by rotation:
// full_sweeps()), with scale 0.5 on every other geometry and type; returns
// how many ran.
template <typename Check>
uint32_t on_every_case(const std::vector<Geometry>& geometries, Check check) {
    uint32_t variant = 0, runs = 0;
    for (const Geometry& g : geometries)
        for (Dtype dtype : {Dtype::f32, Dtype::f16, Dtype::bf16}) {
            ++variant;
            for (bool log : {false, true}) {
                if (!sweep_runs(variant, log ? 1 : 0, 2)) continue;
                check(g, dtype, log, variant % 2 ? 0.5 : 1.0);
                ++runs;
            }
        }
    return runs;
}

// The plan's first dispatch is of the kind the geometry is for (rows per
// slot only where the device has subgroup arithmetic).
void expect_kind(const Geometry& g, const Plan& plan) {
    if (g.kind != ShaderKind::rows_per_slot || Gpu::ctx().info().subgroup_arithmetic()) {
        EXPECT_EQ(plan.key[0].kind, g.kind) << g.what << ": not the kind this case is for";
    }
}

// A backward problem the plan holds in single-pass chunks on a device
// that counts its multiprocessors.
struct HeldCase {
    uint64_t rows, cols;
    Dtype dtype;
    bool log;
};

// Runs each case on the plan's own path against the reference; where the
// plan takes the single-pass path on a device that counts its
// multiprocessors, its grid is at most `waves` workgroups a multiprocessor
// and each chunk is held in one tile.
void expect_held_chunks_against_reference(std::initializer_list<HeldCase> cases, uint64_t waves) {
    for (const HeldCase& c : cases) {
        const Problem p = backward_problem(c.rows, c.cols, c.dtype, c.log);
        const BackwardOutcome o = run_backward_and_compare(p, random_inputs(p));
        const std::string what = describe(p, {}) + " (" + path_name(o.plan.path) + ", " +
                                 std::to_string(o.plan.groups) + " workgroups, " +
                                 std::to_string(o.plan.push.chunks) + " chunks of " + std::to_string(o.plan.push.chunk) + ")";
        const uint32_t multiprocessors = Gpu::ctx().info().multiprocessors;
        if (o.plan.path == Path::single_pass && multiprocessors != 0) {
            EXPECT_LE(o.plan.groups, waves * multiprocessors)
                << what << ": more than " << waves << " workgroups a multiprocessor";
            EXPECT_LE(o.plan.push.chunk, 4 * o.plan.key[0].slots * o.plan.key[0].workgroup_size)
                << what << ": a chunk not held in one tile";
        }
        EXPECT_TRUE(o.acc.within(accuracy_bound(p.dtype, p.log).rel, 0.0)) << what << ": " << o.acc.describe();
    }
}

}  // namespace

// Every kind of dispatch (every_kind(), strided rows too), softmax and
// log-softmax, fp32, fp16 and bf16, with scale 0.5 on every other case.
TEST_F(BackwardTest, EveryKindAgainstTheReference) {
    auto check = [](const Geometry& g, Dtype dtype, bool log, double scale) {
        Problem p = backward_problem(g.rows, g.cols, dtype, log, g.inner);
        p.scale = scale;
        const BackwardOutcome o = run_backward_and_compare(p, random_inputs(p), g.options);
        expect_kind(g, o.plan);
        EXPECT_TRUE(o.plan.key[0].backward) << g.what;
        const Bound b = accuracy_bound(p.dtype, p.log);
        EXPECT_TRUE(o.acc.within(b.rel, 0.0)) << g.what << ", " << describe(p, g.options) << ": " << o.acc.describe();
    };
    const std::vector<Geometry> kinds = every_kind(ctx().info(), true);
    EXPECT_EQ(on_every_case(kinds, check), (full_sweeps() ? 6u : 3u) * kinds.size()) << "cases run";
}

// Batches, fewer rows and single rows the plan spreads over one wave on a
// device that counts its multiprocessors (wave_chunk() in
// single_pass_plan.cpp: chunks of 4096-16384, or the count's share of rows
// that are not a multiple of it, each held in one tile; single rows of
// half a wave to one of chunks of 4096 in half as many of 8192,
// backward_single_row_chunk(); 16-bit batches of
// one wave of whole chunks of 16384, held_wave_batch()), with the plan's
// own path and geometry, against the reference; elsewhere the same shapes
// on that device's plan.
TEST_F(BackwardTest, ProblemsOfOneWave) {
    expect_held_chunks_against_reference(
        {HeldCase{8, 65536, Dtype::f32, false}, HeldCase{16, 65536, Dtype::f16, true},
         HeldCase{8, 50000, Dtype::bf16, false}, HeldCase{12, 40000, Dtype::f16, false},
         HeldCase{16, 100000, Dtype::f16, false}, HeldCase{2, 524288, Dtype::f32, false},
         HeldCase{3, 300000, Dtype::f32, true}, HeldCase{7, 100000, Dtype::bf16, false},
         HeldCase{2, 524288, Dtype::f16, false}, HeldCase{3, 262144, Dtype::bf16, true},
         HeldCase{16, 131072, Dtype::f16, false}, HeldCase{32, 65536, Dtype::bf16, true},
         HeldCase{1, 1u << 20, Dtype::f32, true}, HeldCase{1, 1100000, Dtype::bf16, false},
         // single rows in half as many chunks as their chunks of 4096 (backward_single_row_chunk())
         HeldCase{1, 524288, Dtype::f16, true}, HeldCase{1, 300001, Dtype::bf16, false}},
        1);
}

// Batches of rows a workgroup row holds, from 16384 elements and over 32
// KB, which the plan holds in single-pass chunks of 8192 at 256 x 8 in
// grids of up to two workgroups a multiprocessor on a device that counts
// them (held_backward_batch_chunk() in single_pass_plan.cpp), with the
// plan's own path and geometry, against the reference (one row length not
// a multiple of 4); elsewhere the same shapes on that device's plan.
TEST_F(BackwardTest, BatchesOfWorkgroupRowsInHeldChunks) {
    expect_held_chunks_against_reference({HeldCase{40, 20480, Dtype::f32, false},
                                           HeldCase{64, 32000, Dtype::f16, false},
                                           HeldCase{48, 24577, Dtype::bf16, true}},
                                          2);
}

// Rows not a multiple of 4 long (ODD_ROWS modules), whose first and last
// vectors they share with their neighbours: those are read and written
// element by element (in 16-bit modules after the tile's whole vectors,
// in their own loops; softmax_tiles.glsl). 9 rows start at every
// offset within a 16-byte vector; each row's logits are 0 but its first
// and last, 12, so that y is about one half at each end and each row's
// sum of dy y comes from its ends: an end element left out, or one of a
// neighbour's read in, moves every dx of the row far past the bound. Rows
// on a subgroup, on a workgroup in registers (rows of 1009, and of 8189
// at 8 slots) and in single-pass chunks held at 256 x 8 (the row's head in
// its first chunk, its tail in its last), softmax and log-softmax (on a
// CPU device one of the two by rotation: full_sweeps()).
TEST_F(BackwardTest, OddRowsHeadAndTail) {
    const DeviceInfo& d = ctx().info();
    struct Case {
        const char* what;
        uint64_t cols;
        PlanOptions options;
    };
    PlanOptions held = single_pass(8192);
    held.workgroup_size = 256;
    held.slots = 8;
    std::vector<Case> cases = {{"subgroup rows", 12ull * d.subgroup_size + 3,
                                d.subgroup_arithmetic() ? on_path(Path::subgroup_row) : on_path(Path::workgroup_row)},
                               {"workgroup rows", 1009, on_path(Path::workgroup_row)},
                               {"workgroup rows of 8 slots", 8189, on_path(Path::workgroup_row, 8)}};
    if (has_single_pass(d)) cases.push_back({"single-pass chunks held at 256 x 8", 20003, held});
    const uint64_t rows = 9;
    uint32_t variant = 0;
    for (const Case& c : cases)
        for (Dtype dtype : {Dtype::f32, Dtype::f16, Dtype::bf16}) {
            ++variant;
            if (dtype != Dtype::f32 && !d.storage_16bit) continue;
            for (bool log : {false, true}) {
                if (!sweep_runs(variant, log ? 1 : 0, 2)) continue;
                const Problem p = backward_problem(rows, c.cols, dtype, log);
                std::vector<double> logits(rows * c.cols, 0.0);
                for (uint64_t r = 0; r < rows; ++r) logits[r * c.cols] = logits[r * c.cols + c.cols - 1] = 12.0;
                const BackwardOutcome o = run_backward_and_compare(p, backward_inputs(p, logits, fresh_seed()), c.options);
                const std::string what = std::string(c.what) + ", " + describe(p, c.options) + " (" +
                                         describe_geometry(o.plan) + "; the ends of each row hold y's mass)";
                EXPECT_EQ(o.plan.key[0].odd_rows, o.plan.key[0].vec > 1) << what << ": not an odd-row module";
                EXPECT_TRUE(o.acc.within(accuracy_bound(p.dtype, p.log).rel, 0.0)) << what << ": " << o.acc.describe();
            }
        }
}

// The single-pass backward module gathers a row's sums as the forward one
// gathers its partials: by subgroup 0 alone up to 32 a lane of a
// subgroup, by every invocation past that. Rows of 16 x and 64 x the
// subgroup size in chunks of one tile, softmax and log-softmax, with
// subgroup arithmetic and with the shared-memory tree.
TEST_F(BackwardTest, SinglePassGatheredBySubgroupAndByWorkgroup) {
    const DeviceInfo& d = ctx().info();
    if (!has_single_pass(d)) GTEST_SKIP() << single_pass_rule(d, SinglePass::allowed).reason;
    std::vector<Reduction> reductions = {Reduction::shared};
    if (d.subgroup_arithmetic()) reductions.push_back(Reduction::subgroup);
    const uint64_t chunk = plan_geometry(d, backward_problem(1, 50000, Dtype::f32, false), single_pass(1)).push.chunk;
    for (Reduction red : reductions)
        for (uint64_t chunks : {16ull * d.subgroup_size, 64ull * d.subgroup_size})
            for (bool log : {false, true}) {
                const Problem p = backward_problem(2, (chunks - 1) * chunk + 1, Dtype::f32, log);
                const PlanOptions opts = single_pass(1, red);
                const BackwardOutcome o = run_backward_and_compare(p, random_inputs(p), opts);
                ASSERT_EQ(o.plan.path, Path::single_pass);
                ASSERT_EQ(o.plan.push.chunks, chunks) << "expected " << chunks << " chunks of " << chunk;
                EXPECT_TRUE(o.acc.within(accuracy_bound(p.dtype, p.log).rel, 0.0))
                    << describe(p, opts) << " (" << chunks << " chunks of " << chunk << ", subgroups of "
                    << d.subgroup_size << "): " << o.acc.describe();
            }
}

// Closed forms (fp32, every path): a constant dy gives dx = 0 within the
// sum's rounding; a one-hot dy at j gives k y_j (1 - y_j) there and
// -k y_i y_j elsewhere; log-softmax, a -inf in y gives exactly k dy there;
// a NaN in y or dy makes its row NaN and leaves the others alone.
TEST_F(BackwardTest, ClosedForms) {
    const DeviceInfo& d = ctx().info();
    std::vector<PlanOptions> paths = {on_path(Path::workgroup_row), on_path(Path::split, 0, 64)};
    if (d.subgroup_arithmetic()) paths.push_back(on_path(Path::subgroup_row));
    if (has_single_pass(d)) paths.push_back(single_pass(1));
    // Longer than the single-pass chunks of one tile (1024 elements: 256
    // lanes of one vec4 slot), so that its rows take three, and row 3's NaN
    // is in one of them only.
    const uint64_t n = 2200;
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

// bf16 gradients on every kind of dispatch, rounded to nearest even from
// 2^-100 to 3e37 (the shader rounds a gradient by a split scaled so that
// nothing overflows, exact from 2^-110 up: softmax_common.glsl, where a
// form for a narrower range costs fewer operations): log-softmax, y = 0 at
// column 0 and -inf elsewhere, so that dx = k dy exactly there (exp(-inf)
// = 0), k = 0.75 (k dy needs 10 bits: exact in fp32, then rounded once to
// bf16, often at a tie). dy: 3e37, 3e35 and their negatives in a few
// columns (some lanes hold outputs past 2^111, where the unscaled split
// would overflow, the rest not, and every partial sum stays finite),
// values from 2.5e33 down to 2^-100 of both signs elsewhere.
TEST_F(BackwardTest, Bf16GradientsOfEveryMagnitude) {
    const float huge[] = {3e37f, -3e37f, 3e35f, -3e35f};
    const float spread[] = {1e30f, -1e30f, 2.5e33f, -2.5e33f, 1.5f, -1.5f, 3.3f, -7.1e-3f, 7.888609e-31f, -2.2e-20f};
    for (const Geometry& g : every_kind(ctx().info(), true)) {
        Problem p = backward_problem(g.rows, g.cols, Dtype::bf16, true, g.inner);
        p.scale = 0.75;
        BackwardInputs in;
        in.y.assign(p.shape.elements(), -kInf);
        in.dy.assign(p.shape.elements(), 0.0);
        for (uint64_t r = 0; r < p.shape.rows(); ++r) {
            auto at = [&](uint64_t i) { return p.shape.row_start(r) + i * p.shape.inner; };
            in.y[at(0)] = 0.0;
            for (uint64_t i = 1; i < g.cols; ++i) in.dy[at(i)] = spread[(i + r) % std::size(spread)];
            // The huge values near the row's start, and the last two at its end.
            for (uint64_t k = 0; k < 4; ++k) in.dy[at(k < 2 ? 1 + r % 3 + k : g.cols - 4 + k)] = huge[k];
        }
        for (double& v : in.dy) v = from_16bit(Dtype::bf16, to_16bit(Dtype::bf16, static_cast<float>(v)));
        const BackwardOutcome o = run_backward_and_compare(p, in, g.options);
        for (uint64_t r = 0; r < p.shape.rows(); ++r)
            for (uint64_t i = 1; i < g.cols; ++i) {
                const uint64_t e = p.shape.row_start(r) + i * p.shape.inner;
                const double want = from_16bit(Dtype::bf16, to_16bit(Dtype::bf16, static_cast<float>(0.75 * in.dy[e])));
                ASSERT_EQ(o.got[e], want) << g.what << ", " << describe(p, g.options) << ": row " << r << ", column " << i
                                          << ": dx of dy " << in.dy[e] << " (y -inf, k 0.75)";
            }
    }
}

// A backward problem of a forward with sinks (heads 2 where the rows
// allow, else 1), its y from those sinks, through run_backward() and the
// CPU reference: dx and each row's sink gradient.
struct SinkOutcome {
    BackwardOutcome dx;
    std::vector<double> got, ref;
    Accuracy acc;
};

SinkOutcome run_sinks_and_compare(const Problem& p, const BackwardInputs& in, const PlanOptions& opts = {}) {
    const size_t n = in.y.size(), rows = p.shape.rows();
    SinkOutcome o;
    RunOptions ro;
    ro.plan = opts;
    std::vector<uint8_t> dx(n * dtype_size(p.dtype));
    std::vector<float> sink_gradient(rows);
    o.dx.plan = run_backward(Gpu::ctx(), p, to_storage(in.y, p.dtype).data(), to_storage(in.dy, p.dtype).data(),
                             dx.data(), ro, sink_gradient.data())
                    .plan;
    o.dx.got = to_double(dx.data(), n, p.dtype);
    o.dx.ref.resize(n);
    o.ref.resize(rows);
    cpu::softmax_backward(p, in.y.data(), in.dy.data(), o.dx.ref.data(), o.ref.data());
    round_to(p.dtype, o.dx.ref);
    o.dx.acc = compare_backward(p, in.y, in.dy, o.dx.got, o.dx.ref);
    o.got.assign(sink_gradient.begin(), sink_gradient.end());
    o.acc = compare_sink_gradient(p, in.y, in.dy, o.got, o.ref);
    return o;
}

Problem sinks_problem(uint64_t rows, uint64_t cols, Dtype dtype, bool log) {
    Problem p = backward_problem(rows, cols, dtype, log);
    p.attention.sinks = true;
    p.attention.heads = rows % 2 == 0 ? 2 : 1;
    return p;
}

// The sinks' gradient on every kind of dispatch (every_kind() without
// strided rows: the sinks need the last axis), fp32, fp16 and bf16,
// softmax and log-softmax, logits normal(0, 4): head 0's sink 6 (near the
// maxima of short rows, below those of long ones), head 1's 40 (p near 1).
TEST_F(BackwardTest, SinkGradientOnEveryKind) {
    auto check = [](const Geometry& g, Dtype dtype, bool log, double scale) {
        Problem p = sinks_problem(g.rows, g.cols, dtype, log);
        p.scale = scale;
        const std::vector<float> sinks = {6.0f, 40.0f};
        const std::vector<float> x = random_logits(p.shape.elements(), fresh_seed());
        const BackwardInputs in = backward_inputs(p, std::vector<double>(x.begin(), x.end()), fresh_seed(), sinks.data());
        const SinkOutcome o = run_sinks_and_compare(p, in, g.options);
        expect_kind(g, o.dx.plan);
        EXPECT_TRUE(o.dx.plan.key[0].sinks) << g.what << ": the plan's modules write no sink gradient";
        const Bound b = accuracy_bound(p.dtype, p.log);
        const std::string what = std::string(g.what) + ", " + describe(p, g.options);
        EXPECT_TRUE(o.dx.acc.within(b.rel, 0.0)) << what << ", dx: " << o.dx.acc.describe();
        EXPECT_TRUE(o.acc.within(b.rel, 0.0)) << what << ", sink gradient: " << o.acc.describe();
    };
    const std::vector<Geometry> kinds = every_kind(ctx().info(), false);
    EXPECT_EQ(on_every_case(kinds, check), (full_sweeps() ? 6u : 3u) * kinds.size()) << "cases run";
}

// fp32 rows held at 1024 x 8 read dy again for their write
// (REREAD_GRADIENT; rereads_gradient() in plan.cpp): rows of 30720 (7
// slots would not hold them) forced to that geometry (a device that counts
// no multiprocessors reads them in tiles), softmax, and
// log-softmax with sinks, scale 0.5, against the reference. Row 2 has a
// NaN dy in lane 1's slot 5, which the second group of re-read slots
// reads: its dx must be NaN throughout.
TEST_F(BackwardTest, RowsAt1024x8RereadTheGradient) {
    const DeviceInfo& d = ctx().info();
    if (d.max_workgroup_invocations < 1024) GTEST_SKIP() << "workgroups of at most " << d.max_workgroup_invocations;
    const uint64_t cols = 30720;
    PlanOptions o = on_path(Path::workgroup_row, 8);
    o.workgroup_size = 1024;
    const std::vector<float> sink_logits = {6.0f, 40.0f};
    for (bool log : {false, true}) {
        const bool sinks = log;  // each option once: every pipeline is a cold compile on a CPU device
        Problem p = sinks ? sinks_problem(6, cols, Dtype::f32, log) : backward_problem(6, cols, Dtype::f32, log);
        p.scale = 0.5;
        const Plan plan = plan_geometry(d, p, o);
        const std::string what = std::string(sinks ? "with sinks, " : "") + describe(p, o) + ", pipeline " + plan.key[0].id();
        ASSERT_TRUE(plan.key[0].reread_gradient) << what << ": the plan holds dy";
        ASSERT_EQ(plan.key[0].slots, 8u) << what;
        const std::vector<float> x = random_logits(p.shape.elements(), fresh_seed());
        BackwardInputs in = backward_inputs(p, std::vector<double>(x.begin(), x.end()), fresh_seed(),
                                            sinks ? sink_logits.data() : nullptr);
        const uint64_t nan_at = 4 * (5 * uint64_t{o.workgroup_size} + 1) + 2;  // lane 1's slot 5
        in.dy[2 * cols + nan_at] = kNaN;
        SinkOutcome out;
        if (sinks)
            out = run_sinks_and_compare(p, in, o);
        else
            out.dx = run_backward_and_compare(p, in, o);
        uint64_t finite = 0;
        for (uint64_t i = 0; i < cols; ++i) finite += std::isnan(out.dx.got[2 * cols + i]) ? 0 : 1;
        EXPECT_EQ(finite, 0u) << what << ": row 2 (a NaN in a re-read slot of dy) must be NaN throughout";
        const Bound b = accuracy_bound(p.dtype, p.log);
        EXPECT_EQ(out.dx.acc.nonfinite_mismatches, 0u) << what << ", dx: " << out.dx.acc.describe();
        EXPECT_TRUE(out.dx.acc.within(b.rel, 0.0)) << what << ", dx: " << out.dx.acc.describe();
        if (sinks) {
            EXPECT_TRUE(out.acc.within(b.rel, 0.0)) << what << ", sink gradient: " << out.acc.describe();
        }
    }
}

// The sinks' gradient in closed form (fp32, the workgroup, split and,
// where the device has it, single-pass paths): a row the forward hid entirely (every logit -inf, the sink
// finite) has y = 0 and gives exactly 0 (log-softmax: y = -inf, p = 1,
// exactly -sum dy); a head whose sink is -inf gives about 0 (p = 1 - sum y,
// within fp32 rounding); a NaN in dy gives NaN.
TEST_F(BackwardTest, SinkGradientClosedForms) {
    const uint64_t n = 300;
    std::vector<PlanOptions> paths = {on_path(Path::workgroup_row), on_path(Path::split, 0, 64)};
    if (has_single_pass(ctx().info())) paths.push_back(single_pass(1));
    for (const PlanOptions& o : paths)
        for (bool log : {false, true}) {
            Problem p = sinks_problem(4, n, Dtype::f32, log);  // heads 2 of 2 rows
            std::vector<double> x(4 * n);
            std::mt19937 rng(fresh_seed());
            std::normal_distribution<double> logit(0.0, 2.0);
            for (double& v : x) v = logit(rng);
            for (uint64_t i = 0; i < n; ++i) x[i] = -kInf;  // row 0 hidden entirely (head 0)
            const std::vector<float> sinks = {1.0f, -kInf};     // head 1's sink: -inf
            BackwardInputs in = backward_inputs(p, x, fresh_seed(), sinks.data());
            in.dy[3 * n + 7] = kNaN;  // row 3: NaN
            const SinkOutcome out = run_sinks_and_compare(p, in, o);
            const std::string what = describe(p, o);
            double dy_sum = 0, dy_magnitude = 0;
            for (uint64_t i = 0; i < n; ++i) dy_sum += in.dy[i], dy_magnitude += std::fabs(in.dy[i]);
            const double hidden = log ? -dy_sum : 0.0;
            // An fp32 sum of 300 terms in any order: its error scales with
            // the terms, not with a sum that cancels (-0.1733 of terms
            // summing 240 in magnitude was 3.1e-6 off on lavapipe).
            EXPECT_NEAR(out.got[0], hidden, 1e-6 * (1 + dy_magnitude)) << what << ": row 0, hidden entirely";
            if (!log) {
                EXPECT_EQ(out.got[0], 0.0) << what << ": row 0, y = 0, must give exactly 0";
            }
            double magnitude = 0;
            for (uint64_t i = 0; i < n; ++i) magnitude += log ? std::fabs(in.dy[2 * n + i]) : std::fabs(in.y[2 * n + i] * in.dy[2 * n + i]);
            EXPECT_LE(std::fabs(out.got[2]), 1e-5 * magnitude) << what << ": row 2, its sink -inf, p = 0";
            EXPECT_TRUE(std::isnan(out.got[3])) << what << ": row 3 (a NaN in dy) must be NaN, got " << out.got[3];
            EXPECT_TRUE(out.acc.within(1e-5, 0.0)) << what << ": " << out.acc.describe();
            EXPECT_EQ(out.acc.nonfinite_mismatches, 0u) << what << ": " << out.acc.describe();
        }
}

// What the engine refuses: a mask, causal mask or log-sum-exp on a
// backward problem, sinks whose heads do not fit, sinks without memory
// for their gradient, record() with a backward plan and the reverse.
TEST_F(BackwardTest, Refusals) {
    Problem p = backward_problem(4, 100, Dtype::f32, false);
    p.attention.causal = true;
    EXPECT_THROW(make_plan(ctx(), p), Error) << "a causal mask with backward";
    p.attention.causal = false;
    p.attention.lse = true;
    EXPECT_THROW(make_plan(ctx(), p), Error) << "the log-sum-exp with backward";
    p.attention.lse = false;
    p.attention.sinks = true;
    p.attention.heads = 3;
    EXPECT_THROW(make_plan(ctx(), p), Error) << "sinks whose 3 heads do not divide 4 rows";
    p.attention.heads = 2;
    {
        std::vector<float> y(400, 0.01f), dy(400, 1.0f), dx(400);
        EXPECT_THROW(run_backward(ctx(), p, y.data(), dy.data(), dx.data()), Error)
            << "the backward pass of sinks without memory for their gradient";
    }
    p.attention.sinks = false;
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
