// The GPU paths against the float64 CPU reference, on fresh random inputs,
// with the output poisoned (NaN) before each run.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <iterator>
#include <limits>

#include "gpu_fixture.hpp"

using namespace vkstest;

namespace {

const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

// The largest tensor a grid case may have: lavapipe runs ~10M elements/s.
constexpr uint64_t kMaxGridElements = 1ull << 22;

void expect_matches(const Problem& p, const PlanOptions& opts = {}, uint32_t seed = fresh_seed()) {
    auto x = random_logits(p.shape.elements(), seed);
    Outcome o = run_and_compare(p, x, opts);
    const Bound b = accuracy_bound(p.dtype, p.log);
    EXPECT_TRUE(o.acc.within(b.rel, 0.0))
        << describe(p, opts) << " via " << path_name(o.plan.path) << " (seed " << seed << "): " << o.acc.describe()
        << "; bound: rel " << b.rel << " above " << b.floor;
}

// `rows` contiguous rows of `cols`, and plan options forcing a geometry.
Problem rows_of(uint64_t rows, uint64_t cols, Dtype dt, bool log) {
    Problem p;
    p.shape = {rows, cols, 1};
    p.dtype = dt;
    p.log = log;
    return p;
}
PlanOptions forced(Path path, uint32_t slots, uint32_t workgroup_size = 0) {
    PlanOptions o;
    o.path = path;
    o.slots = slots;
    o.workgroup_size = workgroup_size;
    return o;
}

// Runs `p` under `o` on rows_with_non_finite_ends() (kOddEnds) and expects
// the reference's non-finite outputs and the rest within the type's bound;
// returns the outcome for the caller's own checks.
Outcome expect_odd_ends_match(const Problem& p, const PlanOptions& o) {
    Outcome out = run_and_compare(p, rows_with_non_finite_ends(p, p.shape.axis), o);
    const Bound b = accuracy_bound(p.dtype, p.log);
    const std::string what = describe(p, o) + " (" + describe_geometry(out.plan) + "; " + kOddEnds + ")";
    EXPECT_EQ(out.acc.nonfinite_mismatches, 0u) << what << ": " << out.acc.describe();
    EXPECT_TRUE(out.acc.within(b.rel, 0.0)) << what << ": " << out.acc.describe();
    return out;
}

void grid(std::initializer_list<uint64_t> cols) {
    for (uint64_t c : cols)
        for (uint64_t r : {1u, 3u, 64u, 1000u}) {
            if (c * r > kMaxGridElements) continue;
            for (Dtype dt : {Dtype::f32, Dtype::f16})
                for (bool log : {false, true}) expect_matches(rows_of(r, c, dt, log));
        }
}

}  // namespace

// 36 and 1004 are multiples of 4 but not of 8: fp16 takes 8-byte accesses.
// 1500, 2045 (a window of 2048) and 2048 take workgroups of two subgroups
// where the subgroup is 32 (kNarrowRowSubgroups), but rows of 2045, four
// (kOddRowNarrowSlots).
TEST_F(Gpu, GridShortRows) { grid({1, 2, 3, 7, 31, 32, 33, 36, 127, 128, 129}); }
TEST_F(Gpu, GridMediumRows) { grid({1000, 1004, 1500, 2045, 2048, 4096, 4097}); }
TEST_F(Gpu, GridLongRows) { grid({65537, 1u << 20}); }

TEST_F(Gpu, EveryAxisOf3D) {
    for (auto dims : {std::vector<uint64_t>{5, 7, 33}, std::vector<uint64_t>{4, 129, 3}, std::vector<uint64_t>{2, 3, 40000}})
        for (int axis : {0, 1, 2, -1})
            for (Dtype dt : {Dtype::f32, Dtype::f16})
                for (bool log : {false, true}) {
                    Problem p;
                    p.shape = shape_for_axis(dims, axis);
                    p.dtype = dt;
                    p.log = log;
                    expect_matches(p);
                }
}

// The logits' multiplier, as a temperature (0.25, 3) and as attention's
// scale (1/sqrt(64), 1/sqrt(128), and a large 8), on every path's shapes.
TEST_F(Gpu, TemperatureAndScale) {
    struct Multiplier {
        double temperature, scale;
    };
    for (Multiplier k : {Multiplier{0.25, 1}, Multiplier{3, 1}, Multiplier{1, 0.125}, Multiplier{1, 1 / std::sqrt(128.0)},
                         Multiplier{1, 8}})
        for (Shape s : {Shape{64, 1000, 1}, Shape{2, 65537, 1}, Shape{512, 64, 1}, Shape{3, 5, 7}})
            for (bool log : {false, true}) {
                Problem p;
                p.shape = s;
                p.temperature = k.temperature;
                p.scale = k.scale;
                p.log = log;
                expect_matches(p);
            }
}

TEST_F(Gpu, AccuratePrecision) {
    for (Shape s : {Shape{64, 1000, 1}, Shape{2, 65537, 1}, Shape{100, 33, 1}})
        for (bool log : {false, true}) {
            Problem p;
            p.shape = s;
            p.log = log;
            p.precision = Precision::accurate;
            expect_matches(p);
        }
}

// Every forced path with each reduction, including the in-shader fallback
// that folds a row too long for the group's registers tile by tile.
TEST_F(Gpu, ForcedPathsAndReductions) {
    const bool sg = ctx().info().subgroup_arithmetic();
    for (uint64_t cols : {1u, 33u, 1000u, 4097u, 70001u})
        for (Path path : {Path::subgroup_row, Path::workgroup_row, Path::split})
            for (Reduction red : {Reduction::subgroup, Reduction::shared}) {
                if ((path == Path::subgroup_row || red == Reduction::subgroup) && !sg) continue;
                if (path == Path::subgroup_row && red == Reduction::shared) continue;
                for (bool log : {false, true}) {
                    const Problem p = rows_of(cols > 4097 ? 2u : 7u, cols, Dtype::f32, log);
                    PlanOptions o;
                    o.path = path;
                    o.reduction = red;
                    if (path == Path::split) o.chunk_elements = 1;  // one tile per chunk: the most partials
                    expect_matches(p, o);
                }
            }
}

// Every slot count on every path and dtype, rows of one tile and of many: a
// driver's compiler may get one unrolled variant wrong and not the others
// (NVIDIA 580.159.04 did, for fp32 with 8 slots and fp16 with 4:
// bench/NOTES.md). On a CPU driver each subgroup size runs half of the slot
// counts (sizes 4 and 16 the other half from size 8), and each (path,
// slots, dtype) one of the four rows, by rotation (full_sweeps()).
TEST_F(Gpu, EveryRowGeometry) {
    struct Row {
        uint64_t cols;
        bool log;
    };
    const Row kRows[] = {{1000, false}, {4096, false}, {4096, true}, {40000, false}};
    const bool sg = ctx().info().subgroup_arithmetic();
    uint32_t variant = 0;
    for (Path path : {Path::subgroup_row, Path::workgroup_row, Path::split}) {
        if (path == Path::subgroup_row && !sg) continue;
        for (uint32_t slots = 1; slots <= 16; ++slots) {  // the plan's most is 16
            if (!sweep_runs(slots, 0, 2)) continue;
            for (Dtype dt : {Dtype::f32, Dtype::f16}) {
                for (uint32_t choice = 0; choice < 4; ++choice)
                    if (sweep_runs(variant, choice, 4))
                        expect_matches(rows_of(3, kRows[choice].cols, dt, kRows[choice].log), forced(path, slots));
                ++variant;
            }
        }
    }
}

// Rows whose last slot only lane 0 of the group fills (the rest of that slot
// lies past the row's end), at each access width, with a NaN row and a row
// whose only +inf sits in that lone slot. Such rows are where NVIDIA
// 580.159.04 went wrong for some shader forms: NaN in every subgroup but
// the first (f16 2x4100, 4-wide), or a NaN row's flag lost (f32 12x257,
// subgroup rows, accurate): bench/NOTES.md. Scalar rows are strided (3
// rows interleaved): contiguous rows take vectors whatever their length
// (OddRowsHeadAndTail). On a CPU driver each (path,
// dtype, width) runs one of the slot counts, softmax or log-softmax, by
// rotation (full_sweeps()).
TEST_F(Gpu, LastSlotHeldByOneLane) {
    const DeviceInfo& d = ctx().info();
    const uint32_t kSlots[] = {2, 5, 8, 13, 16};
    const Dtype kDtypes[] = {Dtype::f32, Dtype::f16};
    const uint32_t kWidths[] = {1, 4, 8};
    for (uint32_t path_index = 0; path_index < 2; ++path_index) {
        const Path path = path_index == 0 ? Path::subgroup_row : Path::workgroup_row;
        if (path == Path::subgroup_row && !d.subgroup_arithmetic()) continue;
        const uint32_t wg = std::min(256u, d.max_workgroup_invocations);
        const uint64_t lanes = path == Path::subgroup_row ? d.subgroup_size : wg;  // lanes on a row
        for (uint32_t slot_index = 0; slot_index < 5; ++slot_index)
            for (uint32_t dtype_index = 0; dtype_index < 2; ++dtype_index)
                for (uint32_t width_index = 0; width_index < 3; ++width_index) {
                    const uint32_t slots = kSlots[slot_index], width = kWidths[width_index];
                    const Dtype dt = kDtypes[dtype_index];
                    const uint32_t variant = (path_index * 2 + dtype_index) * 3 + width_index;
                    if (!sweep_runs(variant, slot_index, 5)) continue;
                    if (width == 8 && (dt != Dtype::f16 || slots % 2)) continue;
                    // Scalar slots are 4 per vec4 slot; 8-wide accesses fill slot pairs.
                    const uint64_t cols = width == 1 ? (4ull * slots - 1) * lanes + 1
                                          : width == 4 ? 4ull * (slots - 1) * lanes + 4
                                                       : 8ull * (slots / 2 - 1) * lanes + 8;
                    // Rows of 8 fit a slot: the plan holds them one per slot (SlotRows).
                    if (path == Path::subgroup_row && cols <= 4 * lanes) continue;
                    for (bool log : {false, true}) {
                        if (!sweep_runs(variant + slot_index, log ? 1 : 0, 2)) continue;
                        Problem p = rows_of(3, cols, dt, log);
                        if (width == 1) p.shape = {1, cols, 3};
                        const PlanOptions o = forced(path, slots, path == Path::workgroup_row ? wg : 0);
                        const Plan plan = make_plan(ctx(), p, o);
                        ASSERT_EQ(plan.key[0].vec, width) << describe(p, o) << ": not the geometry this case is for";
                        auto x = random_logits(p.shape.elements(), fresh_seed());
                        auto at = [&](uint64_t row, uint64_t i) { return p.shape.row_start(row) + i * p.shape.inner; };
                        x[at(1, 4)] = kNaN;         // row 1: NaN, away from lane 0
                        x[at(2, cols - 1)] = kInf;  // row 2: +inf in the lone slot
                        Outcome out = run_and_compare(p, x, o);
                        const Bound b = accuracy_bound(p.dtype, p.log);
                        EXPECT_TRUE(out.acc.within(b.rel, 0.0))
                            << describe(p, o) << " (rows of " << cols << ": the last slot is lane 0's alone; row 1 "
                            << "holds a NaN, row 2 a +inf in that slot): " << out.acc.describe();
                    }
                }
    }
}

namespace {

// Random logits for `p` (rows of `cols`), rows 1 to 4 made as
// kNonFiniteRows says: the rows whose non-finite elements must stay theirs.
const char* const kNonFiniteRows = "row 1 holds a NaN, row 2 a +inf, row 3 only -inf, row 4 one finite element";
std::vector<float> rows_with_non_finite(const Problem& p, uint64_t cols) {
    auto x = random_logits(p.shape.elements(), fresh_seed());
    x[1 * cols + cols / 2] = kNaN;                                // row 1: a NaN
    x[2 * cols + cols - 1] = kInf;                                // row 2: +inf, last
    for (uint64_t i = 0; i < cols; ++i) x[3 * cols + i] = -kInf;  // row 3: no finite element
    for (uint64_t i = 1; i < cols; ++i) x[4 * cols + i] = -kInf;  // row 4: one finite element
    return x;
}

// Whether `got` and `rounded` (the reference rounded to bf16) are
// neighbouring bf16 values with `exact` (the reference) beside the tie
// between them: within 2^-17 of its magnitude, at most 1/512 of the
// spacing of bf16 values there and some 100 times fp32's rounding.
bool beside_tie(double got, double rounded, double exact) {
    const auto bits = [](double v) { return to_16bit(Dtype::bf16, static_cast<float>(v)); };
    const int step = static_cast<int>(bits(got)) - static_cast<int>(bits(rounded));
    return (step == 1 || step == -1) && std::fabs(exact - (got + rounded) / 2) <= std::ldexp(std::fabs(exact), -17);
}

}  // namespace

// Short rows held one per slot (ShaderKind::rows_per_slot), several to a subgroup, their
// reductions interleaved: a row's NaN, +inf or lack of finite elements must
// not reach the rows beside it, and the slots past the last row (the grid's
// tail) must store nothing (the output is poisoned before each run).
TEST_F(Gpu, SlotRows) {
    const DeviceInfo& d = ctx().info();
    if (!d.subgroup_arithmetic()) GTEST_SKIP() << "no subgroup arithmetic on " << d.name;
    const uint64_t lanes = d.subgroup_size;
    const Plan chosen = make_plan(ctx(), rows_of(1000, 4 * lanes, Dtype::f32, false));
    EXPECT_EQ(chosen.key[0].kind, ShaderKind::rows_per_slot) << "rows of 4 x subgroup size (" << 4 * lanes << ") are not planned one per slot";
    EXPECT_GT(chosen.key[0].slots, 1u) << "one row per subgroup: nothing in flight beside it";
    for (uint64_t cols : {uint64_t{4}, 4 * lanes - 4, 4 * lanes})
        for (uint32_t slots : {1u, 2u, 3u, 5u})
            for (Dtype dt : {Dtype::f32, Dtype::f16})
                for (bool log : {false, true}) {
                    const PlanOptions o = forced(Path::subgroup_row, slots);
                    const uint32_t per_wg = make_plan(ctx(), rows_of(1, cols, dt, log), o).rows_per_workgroup;
                    const Problem p = rows_of(2ull * per_wg + slots + 1, cols, dt, log);
                    const Plan plan = make_plan(ctx(), p, o);
                    ASSERT_EQ(plan.key[0].kind, ShaderKind::rows_per_slot) << describe(p, o) << ": not one row per slot";
                    ASSERT_EQ(plan.key[0].vec, 4u) << describe(p, o) << ": a slot row is one 4-wide access per lane";
                    Outcome out = run_and_compare(p, rows_with_non_finite(p, cols), o);
                    const Bound b = accuracy_bound(p.dtype, p.log);
                    EXPECT_TRUE(out.acc.within(b.rel, 0.0))
                        << describe(p, o) << " (" << p.shape.rows() << " rows, " << plan.rows_per_workgroup
                        << " per workgroup; " << kNonFiniteRows << "): " << out.acc.describe();
                }
}

// Rows of at most half a subgroup's 4 x size, each held by a cluster of a
// few lanes (row_lanes: the fewest that hold 4 elements each) reduced by
// shuffles, several clusters to a subgroup and a row in each slot: every
// length from 1 to 2 x the subgroup size, scalar and 4-wide, must match the
// reference; a row's NaN, +inf or lack of finite elements must not reach
// the rows of the clusters beside it; the clusters past the last row must
// store nothing (the output is poisoned before each run). On a CPU driver
// each length runs one of its (slots, dtype, log) combinations, by rotation.
TEST_F(Gpu, RowsOfFewLanes) {
    const DeviceInfo& d = ctx().info();
    if (!d.subgroup_shuffle()) GTEST_SKIP() << "no subgroup shuffles on " << d.name;
    const uint64_t lanes = d.subgroup_size;
    const uint32_t kSlots[] = {1, 2, 3};
    for (uint64_t cols = 1; cols <= 2 * lanes; ++cols)
        for (uint32_t slot_index = 0; slot_index < 3; ++slot_index)
            for (Dtype dt : {Dtype::f32, Dtype::f16})
                for (bool log : {false, true}) {
                    const uint32_t choice = (slot_index * 2 + (dt == Dtype::f16 ? 1 : 0)) * 2 + (log ? 1 : 0);
                    if (!sweep_runs(static_cast<uint32_t>(cols), choice, 12)) continue;
                    const PlanOptions o = forced(Path::subgroup_row, kSlots[slot_index]);
                    const uint32_t per_wg = make_plan(ctx(), rows_of(1, cols, dt, log), o).rows_per_workgroup;
                    const Problem p = rows_of(2ull * per_wg + kSlots[slot_index] + 1, cols, dt, log);
                    const Plan plan = make_plan(ctx(), p, o);
                    ASSERT_EQ(plan.key[0].kind, ShaderKind::rows_per_slot) << describe(p, o) << ": not one row per slot";
                    ASSERT_GT(plan.key[0].row_lanes, 0u) << describe(p, o) << ": rows of " << cols << " take the whole subgroup";
                    ASSERT_LE(4 * plan.key[0].row_lanes, std::max<uint64_t>(4, 2 * cols + 2))
                        << describe(p, o) << ": more lanes than a row of " << cols << " needs";
                    Outcome out = run_and_compare(p, rows_with_non_finite(p, cols), o);
                    const Bound b = accuracy_bound(p.dtype, p.log);
                    EXPECT_TRUE(out.acc.within(b.rel, 0.0))
                        << describe(p, o) << " (" << p.shape.rows() << " rows of " << cols << ", "
                        << plan.key[0].row_lanes << " lanes each, " << plan.rows_per_workgroup
                        << " per workgroup; " << kNonFiniteRows << "): " << out.acc.describe();
                }
}

// bf16 on every path, at 1-, 4- and 8-element accesses and in windows
// (rows of 1009), with the values that set it apart from fp16: logits of
// 1e30 (fp16's range ends at 65504) and 3e38, NaN, +-inf and -inf rows.
// Closed forms: a row of -1e30 with one 1e30 is one-hot (log: 0 and
// -2e30); equal logits of 3e38 give 1/n each, rounded to bf16; the same
// one-hot row with one logit of -3e35 is 0 there (log: -3e35, one lane's
// output far past the others').
TEST_F(Gpu, Bf16OnEveryPath) {
    const DeviceInfo& d = ctx().info();
    struct Rows {
        uint64_t cols, inner;
    };
    for (Path path : {Path::subgroup_row, Path::workgroup_row, Path::split}) {
        if (path == Path::subgroup_row && !d.subgroup_arithmetic()) continue;
        for (const Rows& r : {Rows{40, 1}, Rows{1000, 1}, Rows{1004, 1}, Rows{1009, 1}, Rows{4096, 1}, Rows{1000, 3}})
            for (bool log : {false, true}) {
                Problem p = rows_of(6, r.cols, Dtype::bf16, log);
                p.shape = {6 / r.inner, r.cols, r.inner};
                PlanOptions o;
                o.path = path;
                auto x = random_logits(p.shape.elements(), fresh_seed());
                auto at = [&](uint64_t row, uint64_t i) { return p.shape.row_start(row) + i * p.shape.inner; };
                for (uint64_t i = 0; i < r.cols; ++i) {
                    x[at(0, i)] = i == r.cols / 2 ? 1e30f : -1e30f;  // one-hot
                    x[at(1, i)] = 3e38f;                              // uniform
                    x[at(4, i)] = -kInf;                              // NaN row
                }
                x[at(2, 3)] = kNaN;
                x[at(3, r.cols - 1)] = kInf;
                for (uint64_t i = 0; i < r.cols; ++i) x[at(5, i)] = x[at(0, i)];
                x[at(5, 1)] = -3e35f;
                Outcome out = run_and_compare(p, x, o);
                const Bound b = accuracy_bound(p.dtype, p.log);
                EXPECT_TRUE(out.acc.within(b.rel, 0.0)) << describe(p, o) << ": " << out.acc.describe();
                // Rounding to nearest even: the output differs from the
                // correctly rounded reference only where the exact value
                // lies within fp32's error of a tie between two bf16 values
                // (truncating would miss about half the elements). A
                // log-softmax row whose log-sum lies near a multiple of
                // 2^-7 puts many outputs there at once (x and m are bf16):
                // on lavapipe, 9 of 20000 random rows of 1009, up to 49 of
                // a row's outputs, each one ULP off beside a tie.
                uint64_t finite = 0, differing = 0;
                for (size_t i = 0; i < out.got.size(); ++i)
                    if (std::isfinite(out.ref[i])) {
                        ++finite;
                        differing += out.got[i] != out.ref[i] && !beside_tie(out.got[i], out.ref[i], out.exact[i]);
                    }
                EXPECT_LE(differing * 100, finite)
                    << describe(p, o) << ": " << differing << " of " << finite
                    << " finite outputs away from a tie differ from the reference rounded to bf16 (over 1%: not "
                       "round to nearest even)";
                auto bf16 = [](double v) { return from_16bit(Dtype::bf16, to_16bit(Dtype::bf16, static_cast<float>(v))); };
                const double cold = log ? bf16(-2.0 * bf16(1e30)) : 0.0;  // log: -1e30 - 1e30
                const double uniform = bf16(log ? -std::log(double(r.cols)) : 1.0 / double(r.cols));
                for (uint64_t i = 0; i < r.cols; ++i) {
                    const double hot = i == r.cols / 2 ? (log ? 0.0 : 1.0) : cold;
                    ASSERT_EQ(out.got[at(0, i)], hot) << describe(p, o) << ": row 0 (one-hot at 1e30), element " << i;
                    const double with_huge = i == 1 ? (log ? bf16(-3e35) : 0.0) : hot;  // log: -3e35 - 1e30
                    ASSERT_EQ(out.got[at(5, i)], with_huge)
                        << describe(p, o) << ": row 5 (one-hot at 1e30, -3e35 at 1), element " << i;
                    ASSERT_NEAR(out.got[at(1, i)], uniform, std::fabs(uniform) * b.rel)
                        << describe(p, o) << ": row 1 (all 3e38), element " << i;
                    ASSERT_TRUE(std::isnan(out.got[at(2, i)]) && std::isnan(out.got[at(4, i)]))
                        << describe(p, o) << ": rows 2 (a NaN) and 4 (all -inf) must be NaN, element " << i;
                }
            }
    }
}

// Rows held by several workgroups (RowShares::shared), each reading the
// whole row and writing its share of the outputs: every output of random
// rows (0 only where the reference is, so a share left unwritten shows)
// matches the reference within the type's bound, and a row with a NaN,
// one with +inf and one all -inf give the reference's non-finite outputs,
// fp32 at 8 shares and 16-bit at 4, softmax and log-softmax (fp32
// log-softmax rows of 16384 too: 16 slots a lane, where NVIDIA's driver
// gives the module 13 KiB more shared memory), and batches past 16 rows
// at the 2 and 4 shares (PlanOptions::write_shares) a device that counts
// its multiprocessors gives them, and at 3, which leaves the last share
// fewer stores.
TEST_F(Gpu, SharedRows) {
    struct Rows {
        uint64_t rows, cols;
        Dtype dtype;
        bool log;
        uint32_t shares;  // forced; 0: the plan's
    };
    for (const Rows& r : {Rows{5, 16384, Dtype::f32, false, 0}, Rows{5, 16384, Dtype::f32, true, 0},
                          Rows{5, 8196, Dtype::f32, true, 0}, Rows{5, 12288, Dtype::f16, false, 0},
                          Rows{5, 16384, Dtype::bf16, true, 0}, Rows{24, 12288, Dtype::f32, false, 4},
                          Rows{20, 16384, Dtype::f32, true, 2}, Rows{18, 16384, Dtype::bf16, false, 2},
                          Rows{5, 8196, Dtype::f32, false, 3}}) {
        if (r.dtype != Dtype::f32 && !ctx().info().storage_16bit) continue;
        PlanOptions o;
        o.rules.row_shares = RowShares::shared;
        o.write_shares = r.shares;
        const Problem p = rows_of(r.rows, r.cols, r.dtype, r.log);
        auto x = random_logits(p.shape.elements(), fresh_seed());
        x[1 * r.cols + 7] = kNaN;
        x[2 * r.cols + r.cols - 1] = kInf;
        for (uint64_t i = 0; i < r.cols; ++i) x[3 * r.cols + i] = -kInf;
        const Outcome out = run_and_compare(p, x, o);
        ASSERT_GT(out.plan.key[0].write_shares, 1u) << describe(p, o) << ": " << out.plan.key[0].id();
        if (r.shares) {
            ASSERT_EQ(out.plan.key[0].write_shares, r.shares) << describe(p, o) << ": " << out.plan.key[0].id();
        }
        const Bound b = accuracy_bound(p.dtype, p.log);
        EXPECT_TRUE(out.acc.within(b.rel, 0.0)) << describe(p, o) << ": " << out.acc.describe();
        for (uint64_t row : {uint64_t{0}, r.rows - 1})
            for (uint64_t i = 0; i < r.cols; ++i) {
                const uint64_t at = row * r.cols + i;
                ASSERT_TRUE(std::isfinite(out.got[at]) && (out.got[at] != 0.0 || out.ref[at] == 0.0))
                    << describe(p, o) << ": random row " << row << ", element " << i << " is " << out.got[at]
                    << " (reference " << out.ref[at] << "): a share left unwritten?";
            }
        for (uint64_t row : {uint64_t{1}, uint64_t{2}, uint64_t{3}})
            for (uint64_t i = 0; i < r.cols; ++i) {
                const uint64_t at = row * r.cols + i;
                const bool same = std::isnan(out.ref[at]) ? std::isnan(out.got[at]) : out.got[at] == out.ref[at];
                ASSERT_TRUE(same) << describe(p, o) << ": row " << row << " (1 a NaN, 2 +inf, 3 all -inf), element "
                                  << i << ": " << out.got[at] << ", reference " << out.ref[at];
            }
    }
}

// The access width the plan picks: 16 bytes wherever rows are contiguous
// (4097: the body in vectors, head and tail element by element), and never
// 8-element fp16 accesses with an odd slot count (they fill slot pairs; the
// plan rounds its own counts up to even for them: 12888).
TEST_F(Gpu, PlanPicksAccessWidth) {
    struct Want {
        Dtype dt;
        uint64_t cols, inner;
        uint32_t slots;  // override; 0: the plan's
        uint32_t vec;
    };
    for (const Want& w : {Want{Dtype::f32, 4096, 1, 0, 4}, Want{Dtype::f16, 4096, 1, 0, 8}, Want{Dtype::f16, 4100, 1, 0, 4},
                          Want{Dtype::f16, 4096, 1, 3, 4}, Want{Dtype::f32, 4097, 1, 0, 4}, Want{Dtype::f16, 4097, 1, 0, 4},
                          Want{Dtype::f16, 4096, 3, 0, 1}, Want{Dtype::f16, 12888, 1, 0, 8}, Want{Dtype::bf16, 4096, 1, 0, 8},
                          Want{Dtype::bf16, 4100, 1, 0, 4}, Want{Dtype::bf16, 4096, 3, 0, 1}}) {
        Problem p;
        p.shape = {2, w.cols, w.inner};
        p.dtype = w.dt;
        PlanOptions o;
        o.path = Path::workgroup_row;
        o.slots = w.slots;
        const Plan plan = make_plan(ctx(), p, o);
        EXPECT_EQ(plan.key[0].vec, w.vec) << describe(p, o) << ": elements per access";
        if (plan.key[0].vec == 8) {
            EXPECT_EQ(plan.key[0].slots % 2, 0u) << describe(p, o);
        }
        auto x = random_logits(p.shape.elements(), fresh_seed());
        Outcome out = run_and_compare(p, x, o);
        const Bound b = accuracy_bound(p.dtype, p.log);
        EXPECT_TRUE(out.acc.within(b.rel, 0.0)) << describe(p, o) << ": " << out.acc.describe();
    }
}

// Contiguous rows not a multiple of 4 long (odd_rows) are read 4- or
// 8-wide over windows from the vector boundary at or before each row (fp32
// split rows stay scalar, and run here as the baseline); the
// vectors a row shares with its neighbours (its head and tail) move element
// by element. 9 rows start at every offset within a 16-byte vector; with
// the output poisoned, every element must be written and no row's values
// or non-finite elements may reach the rows beside it, on every kind that
// takes such rows: a row in a subgroup's or a workgroup's registers, rows in
// tiles, and split chunks (the head in the first, the tail in the last,
// possibly empty, chunk).
TEST_F(Gpu, OddRowsHeadAndTail) {
    const DeviceInfo& d = ctx().info();
    const uint64_t lanes = d.subgroup_size;
    struct Case {
        Path path;
        uint64_t cols;
        uint32_t chunk;  // split: elements per chunk (rounded up to a tile)
        ShaderKind kind;
    };
    uint32_t max_wg = 1;
    while (max_wg * 2 <= std::min({1024u, d.max_workgroup_invocations, d.max_workgroup_size_x})) max_wg *= 2;
    const Case kCases[] = {
        {Path::subgroup_row, 12 * lanes + 3, 0, ShaderKind::row_in_registers},
        {Path::workgroup_row, 1009, 0, ShaderKind::row_in_registers},
        {Path::split, 3 * 4096 + 4093, 4096, ShaderKind::split_statistics},
        {Path::split, 2 * 4096 + 1, 4096, ShaderKind::split_statistics},
    };
    for (const Case& c : kCases) {
        if (c.path == Path::subgroup_row && !d.subgroup_arithmetic()) continue;
        for (Dtype dt : {Dtype::f32, Dtype::f16, Dtype::bf16})
            for (bool log : {false, true}) {
                PlanOptions o;
                o.path = c.path;
                o.chunk_elements = c.chunk;
                const Problem p = rows_of(9, c.cols, dt, log);
                const Plan plan = make_plan(ctx(), p, o);
                const bool windows = c.path != Path::split || dtype_size(dt) == 2;
                ASSERT_EQ(plan.key[0].odd_rows, windows) << describe(p, o) << ": rows of " << c.cols;
                ASSERT_EQ(plan.key[0].kind, c.kind) << describe(p, o) << ": not the kind this case is for";
                Outcome out = run_and_compare(p, rows_with_non_finite_ends(p, c.cols), o);
                const Bound b = accuracy_bound(p.dtype, p.log);
                EXPECT_TRUE(out.acc.within(b.rel, 0.0))
                    << describe(p, o) << " (" << plan.passes << " pass(es), vec " << plan.key[0].vec << "; "
                    << kOddEnds << "): " << out.acc.describe();
            }
    }
    // fp16 rows read in tiles: 8-byte windows, the tail in the last tile
    // (on the workgroup row, which NVIDIA's rule would trade for one
    // single-pass dispatch at this length).
    if (!d.storage_16bit) return;
    const Problem tiles = rows_of(9, 32ull * max_wg - 15, Dtype::f16, false);
    PlanOptions on_row;
    on_row.path = Path::workgroup_row;
    const Plan plan = make_plan(ctx(), tiles, on_row);
    ASSERT_EQ(plan.key[0].kind, ShaderKind::row_in_tiles) << describe(tiles, on_row);
    ASSERT_TRUE(plan.key[0].odd_rows) << describe(tiles, on_row);
    Outcome out = run_and_compare(tiles, rows_with_non_finite_ends(tiles, tiles.shape.axis), on_row);
    const Bound b = accuracy_bound(tiles.dtype, tiles.log);
    EXPECT_TRUE(out.acc.within(b.rel, 0.0)) << describe(tiles, on_row) << " (" << kOddEnds << "): " << out.acc.describe();
}

// 16-bit rows not a multiple of 4 long on a workgroup row at more than 8
// slots load every 8-byte vector of a tile's window whole, their
// neighbours' elements dropped after the load, and the tensor's last vector,
// which ends past the binding, element by element (softmax_tiles.glsl,
// WHOLE_WINDOW_LOADS). 9 rows start at every offset within a vector, with
// non-finite elements at their ends; the row of 4095 fits one tile of 128
// x 9 slots, the row of 12287 takes three, its tail in the last.
TEST_F(Gpu, OddHalfRowsInWholeWindows) {
    const DeviceInfo& d = ctx().info();
    if (!d.storage_16bit) GTEST_SKIP() << d.name << " has no 16-bit storage";
    const struct {
        uint64_t cols;
        ShaderKind kind;
    } kCases[] = {{4095, ShaderKind::row_in_registers}, {12287, ShaderKind::row_in_tiles}};
    for (const auto& c : kCases)
        for (Dtype dt : {Dtype::f16, Dtype::bf16})
            for (bool log : {false, true}) {
                const PlanOptions o = forced(Path::workgroup_row, 9, 128);
                const Problem p = rows_of(9, c.cols, dt, log);
                const Plan plan = make_plan(ctx(), p, o);
                ASSERT_EQ(plan.key[0].kind, c.kind) << describe(p, o) << ": not the kind this case is for";
                ASSERT_TRUE(plan.key[0].odd_rows && plan.key[0].vec == 4 && plan.key[0].slots == 9)
                    << describe(p, o) << ": vec " << plan.key[0].vec << ", slots " << plan.key[0].slots
                    << ", odd " << plan.key[0].odd_rows << " (the whole-window loads need odd rows, vec 4, 9 slots)";
                expect_odd_ends_match(p, o);
            }
}

// Rows not a multiple of 4 long held whole by one workgroup of 64, 128 or
// 256 at 2 to 15 slots, in each storage type (a test each, so that a queue
// of tests spreads them: together they were the suite's slowest test, 162-194
// s on an H100; bench/NOTES.md, v112), softmax and log-softmax: bf16's
// forward write loop is unrolled from some slot counts on
// (softmax_tiles.glsl), 16-bit softmax takes two exchanges at 6 and 7
// slots where the others take one (softmax.comp), and NVIDIA's compiler
// (580.159.04) gave whole rows of NaN in some of these geometries
// (bench/NOTES.md, v102). 9 rows start all over a 16-byte vector, with
// non-finite elements at their ends (kOddEnds). On a CPU device each type
// and direction runs one geometry a subgroup size.
namespace {

void expect_odd_rows_at_every_slot_count(Dtype dt) {
    const DeviceInfo& d = Gpu::ctx().info();
    if (dt != Dtype::f32 && !d.storage_16bit) GTEST_SKIP() << d.name << " has no 16-bit storage";
    const uint32_t max_workgroup = std::min(d.max_workgroup_invocations, d.max_workgroup_size_x);
    const uint32_t kWorkgroups[] = {64, 128, 256};
    const uint32_t kSlots[] = {2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    constexpr uint32_t kGeometries = std::size(kWorkgroups) * std::size(kSlots);
    const uint32_t dtype_index = dt == Dtype::f32 ? 0 : dt == Dtype::f16 ? 1 : 2;
    for (bool log : {false, true}) {
        // The sweep's share on a CPU device: one variant per type and
        // direction, numbered 1-6 as when one test took all three types.
        const uint32_t variant = 2 * dtype_index + (log ? 2 : 1);
        for (uint32_t g = 0; g < kGeometries; ++g) {
            const uint32_t workgroup = kWorkgroups[g / std::size(kSlots)], slots = kSlots[g % std::size(kSlots)];
            if (workgroup > max_workgroup || !sweep_runs(variant, g, kGeometries)) continue;
            const PlanOptions o = forced(Path::workgroup_row, slots, workgroup);
            const uint64_t cols = 4ull * workgroup * slots - 3;  // the last vector's last 3 elements missing
            const Problem p = rows_of(9, cols, dt, log);
            const Plan plan = make_plan(Gpu::ctx(), p, o);
            ASSERT_TRUE(plan.key[0].kind == ShaderKind::row_in_registers && plan.key[0].odd_rows &&
                        plan.key[0].vec == 4 && plan.key[0].slots == slots)
                << describe(p, o) << ": " << describe_geometry(plan)
                << " (the case needs odd rows held in registers at vec 4 and " << slots << " slots)";
            expect_odd_ends_match(p, o);
        }
    }
}

}  // namespace

TEST_F(Gpu, OddRowsAtEverySlotCountF32) { expect_odd_rows_at_every_slot_count(Dtype::f32); }
TEST_F(Gpu, OddRowsAtEverySlotCountF16) { expect_odd_rows_at_every_slot_count(Dtype::f16); }
TEST_F(Gpu, OddRowsAtEverySlotCountBf16) { expect_odd_rows_at_every_slot_count(Dtype::bf16); }

namespace {

const char* const kOneOddRow = "the row's first element is -inf, its max its last (in the row's tail)";

// One row of `cols` with kOneOddRow's ends, else random logits.
std::vector<float> one_row_with_odd_ends(uint64_t cols) {
    auto x = random_logits(cols, fresh_seed());
    x.front() = -std::numeric_limits<float>::infinity();
    x.back() = 30.0f;
    return x;
}

// `rows` rows of `cols` elements (`cols` not a multiple of 4), on the
// plan's own path, in every storage type the device has; log-softmax too
// where `log`. Seven rows or more start at offsets all over a 16-byte
// vector and have non-finite elements at their ends (kOddEnds); a single
// row has kOneOddRow's.
void expect_odd_rows_on_the_plans_path(uint64_t rows, uint64_t cols, bool log) {
    ASSERT_TRUE(rows == 1 || rows >= 7) << "rows_with_non_finite_ends() needs 7 rows";
    for (Dtype dt : {Dtype::f32, Dtype::f16, Dtype::bf16}) {
        if (dt != Dtype::f32 && !Gpu::ctx().info().storage_16bit) continue;
        for (bool with_log : {false, true}) {
            if (with_log && !log) continue;
            const Problem p = rows_of(rows, cols, dt, with_log);
            const bool one = rows == 1;
            Outcome out = run_and_compare(p, one ? one_row_with_odd_ends(cols) : rows_with_non_finite_ends(p, cols), {});
            const std::string what =
                describe(p, {}) + " (" + describe_geometry(out.plan) + "; " + (one ? kOneOddRow : kOddEnds) + ")";
            const Bound b = accuracy_bound(p.dtype, p.log);
            EXPECT_EQ(out.acc.nonfinite_mismatches, 0u) << what << ": " << out.acc.describe();
            EXPECT_TRUE(out.acc.within(b.rel, 0.0)) << what << ": " << out.acc.describe();
        }
    }
}

}  // namespace

// Rows under 16384 elements that NVIDIA's plan spreads over small
// single-pass chunks (rows not a multiple of 4 long, 16-bit ones from 4097
// elements, fp32 ones from 10240 or where a workgroup row would hold 10
// slots or more; Plan.ShortRowsInSmallChunks), on the plan's own path:
// there chunks of 1024 at 256 x 1 slot (16-bit rows in 8-byte windows) or
// 2048 at 256 x 2 (16-byte windows), each the count's share of the row, so
// that 16-bit rows' heads and tails fall inside chunks of a few hundred
// elements; elsewhere the workgroup row. 7 rows (on an H200, 56 chunks of
// 1024 for rows of 4099 and 6143 (fp32: 6143), of 2048 for rows of 12287
// and 16383; rows of 8191 keep the workgroup row) start at 7 offsets
// within a 16-byte vector, with non-finite elements at their ends;
// log-softmax (whose chunks are read twice) on rows of 12287.
TEST_F(Gpu, ShortRowsOnThePlansPath) {
    for (const uint64_t cols : {4099u, 6143u, 8191u, 12287u, 16383u})
        expect_odd_rows_on_the_plans_path(7, cols, cols == 12287);
}

// Rows not a multiple of 4 long whose plan changed with their length: rows
// of 8189, which a workgroup holds at 256 x 8 slots rather than 128 x 16
// (Plan.OddRowsSpreadPast8Slots), and batches of 16-bit rows of 32001, 32761 and 50257,
// which NVIDIA's plan takes in single-pass chunks of 4096 held at 256 x 4
// in 16-byte windows rather than in a workgroup row's tiles or in chunks
// of 8192 (Plan.OddRowsInChunksOf4096).
TEST_F(Gpu, OddRowsOnThePlansPath) {
    expect_odd_rows_on_the_plans_path(1, 8189, false);
    expect_odd_rows_on_the_plans_path(9, 8189, true);
    expect_odd_rows_on_the_plans_path(48, 32001, true);
    expect_odd_rows_on_the_plans_path(9, 32761, false);
    expect_odd_rows_on_the_plans_path(16, 50257, false);
}

// The geometries a device that counts its multiprocessors gives batches too
// small to fill it (Plan.WorkgroupRows): the plan for this device with 132
// multiprocessors counted (an H200's), forced here, on rows sized to its
// subgroup (at 32 lanes: f32 2048 and 2045, f16 1279 and 8188, f32 and
// f16 8192, bf16 7684), with kOddEnds' non-finite rows. Only the cases
// whose counted plan is wider than the plan without a count run.
TEST_F(Gpu, FewRowsGeometriesOfACountedDevice) {
    DeviceInfo counted = ctx().info(), uncounted_device = ctx().info();
    counted.multiprocessors = 132;
    uncounted_device.multiprocessors = 0;
    const uint64_t sg = counted.subgroup_size;
    struct Case {
        Dtype dtype;
        bool log;
        uint64_t rows, cols;
    };
    const Case kCases[] = {{Dtype::f32, false, 9, 64 * sg},      {Dtype::f32, true, 300, 64 * sg},
                           {Dtype::f32, false, 9, 64 * sg - 3},  {Dtype::f16, false, 200, 256 * sg - 4},
                           {Dtype::f16, false, 9, 40 * sg - 1},  {Dtype::f32, true, 9, 256 * sg},
                           {Dtype::bf16, false, 9, 240 * sg + 4}, {Dtype::f16, true, 9, 256 * sg}};
    uint32_t wider = 0;
    for (const Case& c : kCases) {
        if (c.dtype != Dtype::f32 && !ctx().info().storage_16bit) continue;
        const Problem p = rows_of(c.rows, c.cols, c.dtype, c.log);
        PlanOptions on_row;
        on_row.path = Path::workgroup_row;
        const Plan uncounted = plan_geometry(uncounted_device, p, on_row);
        const Plan wide = plan_geometry(counted, p, on_row);
        // Where this device's least workgroup already holds the rule's
        // subgroups (32 invocations on lavapipe: 8 subgroups of 4), both
        // plans agree and the case adds nothing.
        if (wide.key[0].workgroup_size == uncounted.key[0].workgroup_size) continue;
        ++wider;
        const PlanOptions o = forced(Path::workgroup_row, wide.key[0].slots, wide.key[0].workgroup_size);
        const Outcome out = expect_odd_ends_match(p, o);
        ASSERT_EQ(out.plan.key[0].workgroup_size, o.workgroup_size) << describe(p, o);
        ASSERT_EQ(out.plan.key[0].slots, o.slots) << describe(p, o);
    }
    if (wider == 0) GTEST_SKIP() << "counting multiprocessors widens none of these rows' workgroups on this device";
}

// fp16 and bf16 rows longer than 16 elements per invocation of the largest
// workgroup are planned in two tiles or more, read twice
// (ShaderKind::row_in_tiles), while fp32 rows of the same length are held
// whole. The tiles are 4 slots of the largest workgroup, or 8 of half of it
// where a batch makes waves of the multiprocessors (kHalfRowTileSlots; too
// few rows here, so that geometry is forced). On a device that counts its
// multiprocessors the plan holds these few rows whole at the
// largest workgroup instead (kHeldHalfRowMaxWaves), and the same rows check
// that form. The row's max sits in the first tile (the first half), so that
// the second's statistic must be rescaled to it; one row has its finite
// elements only in the second tile, one a NaN and one a +inf there.
TEST_F(Gpu, LongHalfRowsReadInTiles) {
    const DeviceInfo& d = ctx().info();
    uint32_t max_wg = 1;
    while (max_wg * 2 <= std::min({1024u, d.max_workgroup_invocations, d.max_workgroup_size_x})) max_wg *= 2;
    const uint64_t cols = 32ull * max_wg;  // the longest row a workgroup owns: two tiles
    // The workgroup row's plan, which NVIDIA's rule would trade for one
    // single-pass dispatch at this length (Plan.ShortRowsSpreadOverOneWave).
    PlanOptions planned;
    planned.path = Path::workgroup_row;
    const Plan whole = make_plan(ctx(), rows_of(5, cols, Dtype::f32, false), planned);
    EXPECT_EQ(whole.key[0].kind, ShaderKind::row_in_registers) << "f32 rows of " << cols << " are not held whole";
    if (!d.storage_16bit) GTEST_SKIP() << d.name << " has no 16-bit storage";
    PlanOptions half = planned;
    half.workgroup_size = max_wg / 2;
    half.slots = 8;
    for (uint32_t variant = 0; variant < 8; ++variant) {
        const bool log = variant & 1u;
        const Problem p = rows_of(5, cols, variant & 2u ? Dtype::bf16 : Dtype::f16, log);
        const PlanOptions& o = variant & 4u ? half : planned;
        const Plan plan = make_plan(ctx(), p, o);
        const bool held = d.multiprocessors > 0 && !(variant & 4u);
        ASSERT_EQ(plan.path, Path::workgroup_row) << describe(p, o);
        ASSERT_EQ(plan.key[0].kind, held ? ShaderKind::row_in_registers : ShaderKind::row_in_tiles)
            << describe(p, o) << (held ? ": not held whole" : ": not read in tiles");
        EXPECT_EQ(uint64_t{plan.key[0].workgroup_size} * plan.key[0].slots, (held ? 8ull : 4ull) * max_wg)
            << describe(p, o) << ": " << plan.key[0].workgroup_size << " x " << plan.key[0].slots;
        EXPECT_EQ(plan.key[0].vec, 8u) << describe(p, o);
        auto x = random_logits(p.shape.elements(), fresh_seed());
        auto row = [&](uint64_t r) { return x.begin() + static_cast<long>(r * cols); };
        row(1)[5] = 30.0f;                                  // row 1: max in the first tile
        std::fill(row(2), row(2) + cols / 2, -kInf);        // row 2: finite only in the second
        row(3)[cols - 3] = kNaN;                            // row 3: NaN in the second tile
        row(4)[cols / 2 + 1] = kInf;                        // row 4: +inf in the second tile
        Outcome out = run_and_compare(p, x, o);
        const Bound b = accuracy_bound(p.dtype, p.log);
        EXPECT_EQ(out.acc.nonfinite_mismatches, 0u) << describe(p, o) << ": " << out.acc.describe();
        EXPECT_TRUE(out.acc.within(b.rel, 0.0))
            << describe(p, o) << " (row 1's max in the first tile, row 2 finite only in the second, rows 3 and 4 "
            << "a NaN and a +inf in the second): " << out.acc.describe();
    }
}

// Rows held in the registers of workgroups of 512 and 1024 invocations
// take their statistic in one exchange, whose subgroups' (m, d, flags) each
// lane folds a strided slice of: with subgroups of 4 to 32 lanes that is
// 16 to 256 subgroups, two or more a lane below 32. Row r's spike (100
// above the rest, exp(99) overflows fp32) moves through every subgroup
// across the rows; row 1 holds a NaN, row 2 a +inf, row 3 only -inf but
// one element, row 4 only -inf (NaN out).
TEST_F(Gpu, RowsHeldByManySubgroupsInOneExchange) {
    const uint32_t kSlots = 2;
    for (uint32_t wg : {512u, 1024u}) {
        if (wg > ctx().info().max_workgroup_invocations) continue;
        for (Dtype dt : {Dtype::f32, Dtype::f16})
            for (bool log : {false, true}) {
                const uint64_t cols = 4ull * kSlots * wg, rows = 37;
                Problem p = rows_of(rows, cols, dt, log);
                const PlanOptions o = forced(Path::workgroup_row, kSlots, wg);
                const Plan plan = make_plan(ctx(), p, o);
                ASSERT_EQ(plan.key[0].kind, ShaderKind::row_in_registers) << describe(p, o) << ": not held";
                ASSERT_EQ(plan.key[0].workgroup_size, wg) << describe(p, o);
                const uint32_t seed = fresh_seed();
                std::mt19937 rng(seed);
                std::uniform_real_distribution<float> small(-1.f, 1.f);
                std::vector<float> x(rows * cols);
                for (float& e : x) e = small(rng);
                for (uint64_t r = 0; r < rows; ++r) x[r * cols + (r * cols / rows + r * 29) % cols] = 100.f;
                x[1 * cols + cols / 2] = kNaN;
                x[2 * cols + cols - 5] = kInf;
                for (uint64_t i = 0; i < cols; ++i) x[3 * cols + i] = i == cols - 1 ? 0.5f : -kInf;
                for (uint64_t i = 0; i < cols; ++i) x[4 * cols + i] = -kInf;
                Outcome out = run_and_compare(p, x, o);
                const Bound b = accuracy_bound(p.dtype, p.log);
                EXPECT_EQ(out.acc.nonfinite_mismatches, 0u)
                    << describe(p, o) << " (seed " << seed << "): " << out.acc.describe();
                EXPECT_TRUE(out.acc.within(b.rel, 0.0))
                    << describe(p, o) << " (seed " << seed << "; a spike of 100 in each row, moving through the "
                    << "subgroups): " << out.acc.describe();
            }
    }
}

// A lost partial in a cross-subgroup or cross-workgroup reduction is only
// visible when the max sits in the partial that is lost: row r carries a
// spike 100 above its other elements (in [-1, 1]) at a position that moves
// through every chunk, tile and subgroup across the rows.
TEST_F(Gpu, SpikeInEveryPartial) {
    struct Variant {
        uint64_t cols;
        PlanOptions opts;
    };
    std::vector<Variant> variants;
    for (Reduction red : {Reduction::subgroup, Reduction::shared}) {
        if (red == Reduction::subgroup && !ctx().info().subgroup_arithmetic()) continue;
        PlanOptions wg, split;
        wg.path = Path::workgroup_row;
        wg.reduction = split.reduction = red;
        split.path = Path::split;
        split.chunk_elements = 1;
        variants.push_back({4096, wg});
        variants.push_back({32768, wg});
        variants.push_back({65536 + 4, split});
        if (red == Reduction::subgroup) {
            PlanOptions sgr;
            sgr.path = Path::subgroup_row;
            variants.push_back({128, sgr});
        }
    }
    const uint32_t seed = fresh_seed();
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> small(-1.f, 1.f);
    for (const Variant& v : variants)
        for (bool log : {false, true}) {
            const uint64_t rows = 97;
            Problem p;
            p.shape = {rows, v.cols, 1};
            p.log = log;
            std::vector<float> x(rows * v.cols);
            for (float& e : x) e = small(rng);
            for (uint64_t r = 0; r < rows; ++r) x[r * v.cols + (r * v.cols / rows + r * 13) % v.cols] = 100.f;  // exp(99) overflows fp32: a lost max cannot hide
            Outcome o = run_and_compare(p, x, v.opts);
            EXPECT_TRUE(o.acc.within(1e-5, 0.0))
                << describe(p, v.opts) << " (seed " << seed << "): " << o.acc.describe();
        }
}

namespace {

// Nine rows of `cols` random logits, each with a non-finite or extreme
// pattern (the comments give the expected outputs), and the column that
// rows 0, 4 and 8 use.
struct NonFiniteInput {
    std::vector<float> x;
    uint64_t at;
};
NonFiniteInput nonfinite_rows(uint64_t cols, uint32_t seed, Dtype dt) {
    NonFiniteInput in{random_logits(9 * cols, seed), (seed % (cols - 1)) + 1};
    auto row = [&](uint64_t r) { return in.x.begin() + static_cast<long>(r * cols); };
    const uint64_t at = in.at;
    row(0)[at] = kNaN;                                                                  // NaN -> NaN row
    row(1)[cols - 1 - at] = kInf;                                                       // +inf -> NaN row
    std::fill(row(2), row(3), -kInf);                                                   // all -inf -> NaN row
    for (uint64_t i = 0; i < cols; i += 2) row(3)[i] = -kInf;                           // -inf elements -> 0 / -inf
    std::fill(row(4), row(5), -kInf);
    row(4)[at] = 1.5f;                                                                  // one finite among -inf -> 1 / 0
    for (uint64_t i = 0; i < cols; ++i) row(5)[i] = (i % 3 == 0) ? FLT_MAX : -FLT_MAX;  // extremes
    std::fill(row(6), row(7), 0.0f);
    for (uint64_t i = 1; i < cols; i += 2) row(6)[i] = -0.0f;                           // +-0: uniform
    for (uint64_t i = 0; i < cols; ++i) row(7)[i] = (i & 1) ? 1e-40f : -1e-42f;         // subnormals
    row(8)[at] = -kInf;
    row(8)[0] = kNaN;                                                                   // NaN wins over -inf
    if (dt == Dtype::f16)
        for (uint64_t i = 0; i < cols; ++i) row(5)[i] = (i % 3 == 0) ? 65504.f : -65504.f;
    return in;
}

}  // namespace

// SciPy/PyTorch semantics, checked exactly on every path, with each
// element tested and with the row's sum tested (NonfiniteCheck).
TEST_F(Gpu, NonFiniteRows) {
    for (NonfiniteCheck check : {NonfiniteCheck::each_element, NonfiniteCheck::by_sum})
        for (uint64_t cols : {7u, 1000u, 65537u})
            for (Dtype dt : {Dtype::f32, Dtype::f16})
                for (bool log : {false, true}) {
                    const NonFiniteInput in = nonfinite_rows(cols, fresh_seed(), dt);
                    Problem p;
                    p.shape = {9, cols, 1};
                    p.dtype = dt;
                    p.log = log;
                    PlanOptions opts;
                    opts.rules.nonfinite = check;
                    Outcome o = run_and_compare(p, in.x, opts);
                    const std::string what = describe(p, opts) + " via " + path_name(o.plan.path) + ", NaN and +inf " +
                                             nonfinite_check_name(check);
                    ASSERT_EQ(o.plan.key[o.plan.passes - 1].nonfinite_by_sum, check == NonfiniteCheck::by_sum) << what;
                    EXPECT_EQ(o.acc.nonfinite_mismatches, 0u) << what << ": " << o.acc.describe();
                    for (uint64_t r : {0u, 1u, 2u, 8u})
                        for (uint64_t i = 0; i < cols; ++i)
                            ASSERT_TRUE(std::isnan(o.got[r * cols + i])) << what << ": row " << r << " element " << i;
                    for (uint64_t i = 0; i < cols; i += 2)
                        ASSERT_EQ(o.got[3 * cols + i], log ? -INFINITY : 0.0) << what << ": -inf element " << i;
                    EXPECT_EQ(o.got[4 * cols + in.at], log ? 0.0 : 1.0) << what;
                    const Bound b = accuracy_bound(dt, log);
                    EXPECT_TRUE(o.acc.within(b.rel, 0.0)) << what << ": " << o.acc.describe();
                }
}

// A subgroup's max on integer keys on the workgroup-row path (which
// NVIDIA's driver takes for single rows by itself) on the rows of
// integer_key_edge_rows(): rows held in registers, and rows folded tile
// by tile (slots forced to 1), row 1 positive in its last 512 elements
// only. Every storage type; softmax and log-softmax, NaN and +inf found
// element by element and by the sum (one of those four a case on a CPU
// driver, rotating, all of them in a full sweep).
TEST_F(Gpu, WorkgroupRowIntegerKeyMaxima) {
    if (!ctx().info().subgroup_arithmetic()) GTEST_SKIP() << "no subgroup arithmetic: the keys' modules need it";
    const uint64_t cols = 4099;
    const KeyEdgeRows rows{cols, cols - 512, {1031, 3001}};
    uint32_t variant = 0;
    for (bool in_tiles : {false, true})
        for (Dtype dt : {Dtype::f32, Dtype::f16, Dtype::bf16}) {
            ++variant;
            for (uint32_t choice = 0; choice < 4; ++choice) {
                if (!sweep_runs(variant, choice, 4)) continue;
                const bool log = choice & 1u;
                const NonfiniteCheck check = choice & 2u ? NonfiniteCheck::by_sum : NonfiniteCheck::each_element;
                const uint32_t seed = fresh_seed();
                const Problem p = rows_of(8, cols, dt, log);
                PlanOptions opts = forced(Path::workgroup_row, in_tiles ? 1 : 0);
                opts.reduction = Reduction::subgroup;
                opts.rules.subgroup_max = SubgroupMax::integer_keys;
                opts.rules.nonfinite = check;
                const Plan plan = plan_geometry(ctx().info(), p, opts);
                const std::string what = describe(p, opts) + " with integer keys, NaN and +inf " +
                                         nonfinite_check_name(check) + " (seed " + std::to_string(seed) + ")";
                ASSERT_EQ(plan.path, Path::workgroup_row) << what;
                ASSERT_TRUE(plan.key[0].subgroup_max_by_key) << what << ": " << plan.key[0].id();
                ASSERT_EQ(plan.key[0].kind, in_tiles ? ShaderKind::row_in_tiles : ShaderKind::row_in_registers)
                    << what << ": " << plan.key[0].id();
                const Outcome o = run_and_compare(p, integer_key_edge_rows(rows, dt, seed), opts);
                expect_integer_key_edge_outputs(o, rows, p, what);
            }
        }
}

// Log-softmax of rows of +-FLT_MAX at temperatures below, at and above 1,
// on every path: x - m overflows fp32 there, which is -inf at T <= 1 (the
// exact (x - m) / T is below -FLT_MAX too) but must not be at T = 3, where
// (-FLT_MAX - FLT_MAX) / 3 is finite. The shaders take the overflow's care
// only where T > 1 (vksm_log_shift_needs_care), so both sides are checked.
TEST_F(Gpu, LogSoftmaxOfExtremesAtEveryTemperature) {
    for (double temperature : {0.25, 1.0, 3.0})
        for (Path path : {Path::subgroup_row, Path::workgroup_row, Path::split})
            for (uint64_t cols : {12u, 1000u, 4100u}) {
                std::vector<float> x(2 * cols);
                for (uint64_t i = 0; i < cols; ++i) x[i] = (i % 3 == 0) ? FLT_MAX : -FLT_MAX;
                for (uint64_t i = 0; i < cols; ++i) x[cols + i] = (i % 3 == 0) ? 1.0f : -FLT_MAX;
                Problem p;
                p.shape = {2, cols, 1};
                p.log = true;
                p.temperature = temperature;
                PlanOptions opts;
                opts.path = path;
                Outcome o = run_and_compare(p, x, opts);
                const std::string what = describe(p, opts);
                EXPECT_EQ(o.acc.nonfinite_mismatches, 0u) << what << ": " << o.acc.describe();
                EXPECT_TRUE(o.acc.within(accuracy_bound(Dtype::f32, true).rel, 0.0)) << what << ": " << o.acc.describe();
                // Element 1 of row 0 is -FLT_MAX beside a max of FLT_MAX: -inf
                // at T <= 1, finite (-2 FLT_MAX / 3 - log(count of max)) at
                // T = 3. Beside a max of 1 (row 1) it is -FLT_MAX / T - log(d):
                // finite at T >= 1, -inf at 0.25.
                const double overflowed = o.got[1], beside_one = o.got[cols + 1];
                if (temperature <= 1.0)
                    EXPECT_EQ(overflowed, -INFINITY) << what << ": row 0 element 1 is " << overflowed;
                else
                    EXPECT_NEAR(overflowed / (-2.0 * FLT_MAX / 3.0), 1.0, 1e-6)
                        << what << ": row 0 element 1 is " << overflowed << ", expected about " << -2.0 * FLT_MAX / 3.0;
                if (temperature < 1.0)
                    EXPECT_EQ(beside_one, -INFINITY) << what << ": row 1 element 1 is " << beside_one;
                else
                    EXPECT_NEAR(beside_one / (-FLT_MAX / temperature), 1.0, 1e-6)
                        << what << ": row 1 element 1 is " << beside_one << ", expected about " << -FLT_MAX / temperature;
            }
}

TEST_F(Gpu, AxisLengthOneIsExactlyOne) {
    for (bool log : {false, true}) {
        Problem p;
        p.shape = {1000, 1, 1};
        p.log = log;
        Outcome o = run_and_compare(p, random_logits(1000, fresh_seed()));
        for (double v : o.got) ASSERT_EQ(v, log ? 0.0 : 1.0);
    }
}

TEST_F(Gpu, MoreRowsThanMaxWorkgroupCount) {
    const uint64_t max_groups = ctx().info().max_workgroup_count[0];
    if (max_groups > (1u << 20)) GTEST_SKIP() << "maxComputeWorkGroupCount[0] = " << max_groups << " is too large to exceed here";
    Problem p;
    p.shape = {max_groups + 7, 2, 1};
    PlanOptions o;
    o.path = Path::workgroup_row;
    auto x = random_logits(p.shape.elements(), fresh_seed());
    Outcome out = run_and_compare(p, x, o);
    EXPECT_EQ(out.plan.groups, max_groups) << "dispatch should be capped and the rows grid-strided";
    EXPECT_TRUE(out.acc.within(1e-5, 0.0)) << out.acc.describe();
    // A workgroup of at most 256 invocations takes each row's statistic in
    // one exchange between subgroups, and its shared arrays are written
    // again by the workgroup's next row: here in the integer-key modules,
    // which single rows take on NVIDIA (the other modules take the same
    // form in every GPU test of rows of 64-256 invocations).
    if (!ctx().info().subgroup_arithmetic()) return;
    o.reduction = Reduction::subgroup;
    o.rules.subgroup_max = SubgroupMax::integer_keys;
    o.workgroup_size = 64;
    out = run_and_compare(p, x, o);
    ASSERT_TRUE(out.plan.key[0].subgroup_max_by_key) << out.plan.key[0].id();
    ASSERT_EQ(out.plan.key[0].kind, ShaderKind::row_in_registers) << out.plan.key[0].id();
    EXPECT_EQ(out.plan.groups, max_groups) << "dispatch should be capped and the rows grid-strided";
    EXPECT_TRUE(out.acc.within(1e-5, 0.0)) << "one exchange a row, workgroups of 64, grid-strided: " << out.acc.describe();
}

TEST_F(Gpu, RowOf16MElements) {
    for (uint64_t cols : {1ull << 24, (1ull << 24) + 3}) {
        Problem p;
        p.shape = {1, cols, 1};
        expect_matches(p);
    }
}

TEST_F(Gpu, EmptyTensorDispatchesNothing) {
    Problem p;
    p.shape = {0, 128, 1};
    float dummy = 0;
    RunResult r = run(ctx(), p, &dummy, &dummy);
    EXPECT_EQ(r.plan.passes, 0u);
}

TEST_F(Gpu, TimestampsGivePassTimes) {
    if (!ctx().info().timestamps()) GTEST_SKIP() << "no timestamps on this device";
    Problem p;
    p.shape = {2, 65537, 1};
    auto x = random_logits(p.shape.elements(), fresh_seed());
    std::vector<float> y(x.size());
    RunOptions two_passes;
    two_passes.plan.path = Path::split;
    RunResult r = run(ctx(), p, x.data(), y.data(), two_passes);
    ASSERT_TRUE(r.timed);
    ASSERT_EQ(r.pass_ns.size(), 2u);
    EXPECT_GT(r.pass_ns[0], 0.0);
    EXPECT_GT(r.pass_ns[1], 0.0);
    EXPECT_NEAR(r.gpu_ns, r.pass_ns[0] + r.pass_ns[1], 1e-6 * r.gpu_ns + 2 * ctx().info().timestamp_period);
}

TEST_F(Gpu, PlanRejectsWhatTheDeviceCannotHold) {
    Problem p;
    const uint64_t range = ctx().info().max_storage_buffer_range;
    p.shape = {1, range / 4 + 1, 1};
    try {
        make_plan(ctx(), p);
        FAIL() << "a tensor over maxStorageBufferRange (" << range << ") was planned";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::unsupported);
        EXPECT_NE(std::string(e.what()).find("maxStorageBufferRange"), std::string::npos) << e.what();
    }
    p.shape = {1, 8, 1};
    for (double t : {0.0, -2.0, double(kInf), double(kNaN), 1e-300}) {
        p.temperature = t;
        try {
            make_plan(ctx(), p);
            FAIL() << "temperature " << t << " was accepted";
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::invalid_argument) << e.what();
        }
    }
}

// Buffer::range(), upload() and download() stay within their buffer or
// refuse: past its end Vulkan would bind or copy memory the buffer does not
// own.
TEST_F(Gpu, RangesAndTransfersPastABuffersEndAreRefused) {
    Buffer b(ctx(), 64, MemoryKind::device, "sixty-four");
    std::vector<uint8_t> host(128, 7);
    struct Copy {
        size_t bytes;
        VkDeviceSize offset;
    };
    enum class Use { range, upload, download };
    for (Copy c : {Copy{65, 0}, Copy{32, 40}, Copy{1, 64}, Copy{8, ~VkDeviceSize{0} - 3}}) {
        for (Use use : {Use::range, Use::upload, Use::download}) {
            const char* what = use == Use::range ? "range" : use == Use::upload ? "upload" : "download";
            try {
                if (use == Use::range) b.range(c.offset, c.bytes);
                else if (use == Use::upload) upload(ctx(), b, host.data(), c.bytes, c.offset);
                else download(ctx(), b, host.data(), c.bytes, c.offset);
                ADD_FAILURE() << what << " of " << c.bytes << " bytes at " << c.offset
                              << " of a 64-byte buffer was accepted";
            } catch (const Error& e) {
                EXPECT_EQ(e.kind(), ErrorKind::invalid_argument) << e.what();
                EXPECT_NE(std::string(e.what()).find("'sixty-four' (64 bytes)"), std::string::npos) << e.what();
            }
        }
    }
    // The whole buffer, and its last bytes, still bind and copy.
    const BufferRange last = b.range(48, 16);
    EXPECT_TRUE(last.buffer == b.buffer() && last.offset == 48 && last.range == 16)
        << "range(48, 16) gave offset " << last.offset << ", range " << last.range;
    EXPECT_EQ(b.range(0, 64).range, 64u) << "the whole buffer as a range";
    // An option's buffer left out binds as an empty range; a buffer's front through range().
    const BufferRange none = range_or_empty(nullptr, 64);
    EXPECT_TRUE(none.buffer == VK_NULL_HANDLE && none.offset == 0 && none.range == 0)
        << "range_or_empty(nullptr, 64) gave offset " << none.offset << ", range " << none.range;
    const BufferRange front = range_or_empty(&b, 16);
    EXPECT_TRUE(front.buffer == b.buffer() && front.offset == 0 && front.range == 16)
        << "range_or_empty(b, 16) gave offset " << front.offset << ", range " << front.range;
    EXPECT_THROW(range_or_empty(&b, 65), Error) << "range_or_empty(b, 65) of a 64-byte buffer was accepted";
    upload(ctx(), b, host.data(), 64);
    upload(ctx(), b, host.data(), 16, 48);
    std::vector<uint8_t> back(64, 0);
    download(ctx(), b, back.data(), 64);
    EXPECT_EQ(back, std::vector<uint8_t>(64, 7)) << "the buffer's 64 bytes after uploads within it";
}

// Every subgroup size the device lets compute shaders require.
TEST_F(Gpu, EveryRequiredSubgroupSize) {
    const DeviceInfo& d = ctx().info();
    if (!d.subgroup_size_control || !d.subgroup_arithmetic()) GTEST_SKIP() << "no subgroup size control";
    for (uint32_t size = d.min_subgroup_size; size <= d.max_subgroup_size; size *= 2)
        for (uint64_t cols : {33u, 1000u, 4097u, 65537u}) {
            Problem p;
            p.shape = {5, cols, 1};
            PlanOptions o;
            o.subgroup_size = size;
            expect_matches(p, o);
        }
}
