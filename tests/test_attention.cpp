// The attention options (scale, additive and causal masks, ALiBi, sinks,
// the log-sum-exp) against the float64 CPU reference on every GPU path,
// and their closed forms: one element left by the mask gives exactly 1, a
// sink of -inf changes nothing, causal row 0 is one-hot, a row masked
// entirely is NaN (with a sink: zeros, and the sink as its log-sum-exp),
// ALiBi's slopes are ggml's.
#include <cmath>
#include <limits>
#include <set>

#include "gpu_fixture.hpp"
#include "vksoftmax/attention.hpp"

using namespace vkstest;

namespace {

const float kInf = std::numeric_limits<float>::infinity();

// A fixture of its own, so that the suite's slices by name stay apart.
class AttentionTest : public Gpu {};

// A problem of (batch, heads, query_rows, n).
Problem attention_problem(uint64_t batch, uint64_t heads, uint64_t query_rows, uint64_t n, Dtype dtype = Dtype::f32) {
    Problem p;
    p.shape = {batch * heads * query_rows, n, 1};
    p.dtype = dtype;
    p.attention.heads = heads;
    p.attention.query_rows = query_rows;
    return p;
}

// Mask values in [-4, 0] with about one in eight -inf (never a whole row).
std::vector<float> random_mask(size_t rows, size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> value(-4.0f, 0.0f);
    std::vector<float> m(rows * n);
    for (size_t i = 0; i < m.size(); ++i) m[i] = (rng() % 8 == 0 && i % n != 0) ? -kInf : value(rng);
    return m;
}

struct AttentionOutcome {
    std::vector<double> got, ref;
    std::vector<float> lse_got, lse_ref;
    Accuracy acc;
    Plan plan;
};

// Runs `p` on the GPU and on the CPU with the same inputs: x (rounded to
// the problem's 16-bit type), the mask (rounded to the mask's) and the sinks.
AttentionOutcome run_attention(const Problem& p, const std::vector<float>& x, const std::vector<float>& mask,
                               const std::vector<float>& sinks, const PlanOptions& opts = {}) {
    AttentionOutcome o;
    const AttentionLayout layout = attention_layout(p);
    std::vector<uint16_t> mask_16bit;
    AttentionData gpu;
    if (p.attention.mask) {
        EXPECT_EQ(mask.size(), layout.mask_elements);
        const Dtype mask_dtype = p.attention.mask_dtype;
        if (mask_dtype != Dtype::f32)
            for (float v : mask) mask_16bit.push_back(to_16bit(mask_dtype, v));
        gpu.mask = mask_dtype != Dtype::f32 ? static_cast<const void*>(mask_16bit.data()) : mask.data();
    }
    gpu.sinks = sinks.data();
    AttentionData ref = gpu;
    o.lse_got.assign(layout.lse, 0.0f);
    o.lse_ref.assign(layout.lse, 0.0f);
    gpu.lse = o.lse_got.data();
    ref.lse = o.lse_ref.data();
    Outcome run = run_and_compare(p, x, opts, gpu, ref);
    o.got = std::move(run.got);
    o.ref = std::move(run.ref);
    o.acc = run.acc;
    o.plan = run.plan;
    return o;
}

// The log-sum-exps agree to 1e-5 of max(1, |ref|), NaN where the
// reference is NaN.
void expect_lse_near(const AttentionOutcome& o, const std::string& what) {
    for (size_t r = 0; r < o.lse_ref.size(); ++r) {
        if (std::isnan(o.lse_ref[r])) {
            EXPECT_TRUE(std::isnan(o.lse_got[r])) << what << ": row " << r << " log-sum-exp " << o.lse_got[r]
                                                  << ", want NaN";
            continue;
        }
        EXPECT_NEAR(o.lse_got[r], o.lse_ref[r], 1e-5 * std::max(1.0f, std::fabs(o.lse_ref[r])))
            << what << ": row " << r << " log-sum-exp";
    }
}

void expect_within_bound(const Problem& p, const AttentionOutcome& o, const std::string& what) {
    const Bound b = accuracy_bound(p.dtype, p.log, p.precision);
    EXPECT_TRUE(o.acc.within(b.rel, 0.0)) << what << " (" << path_name(o.plan.path) << "): " << o.acc.describe();
    expect_lse_near(o, what);
}

// The paths a row of `n` can be forced onto on this device.
std::vector<Path> paths_for(uint64_t n) {
    std::vector<Path> paths = {Path::workgroup_row, Path::split};
    if (Gpu::ctx().info().subgroup_arithmetic() && n <= 4u * 8u * Gpu::ctx().info().subgroup_size)
        paths.push_back(Path::subgroup_row);
    if (has_single_pass(Gpu::ctx().info())) paths.push_back(Path::single_pass);
    return paths;
}

PlanOptions forced(Path path) {
    PlanOptions o;
    o.path = path;
    o.single_pass = SinglePass::allowed;
    o.chunk_elements = 64;  // several chunks per row on the chunked paths
    return o;
}

std::string describe_options(const Problem& p) {
    const Attention& a = p.attention;
    std::string s = std::string(dtype_name(p.dtype)) + (p.log ? " log" : "") + " rows " + std::to_string(p.shape.rows()) +
                    " x " + std::to_string(p.shape.axis) + " heads " + std::to_string(a.heads);
    if (p.scale != 1.0) s += " scale " + std::to_string(p.scale);
    if (a.mask) s += std::string(" mask ") + dtype_name(a.mask_dtype);
    if (a.causal) s += " causal+" + std::to_string(a.causal_offset);
    if (a.alibi_max_bias > 0) s += " alibi " + std::to_string(a.alibi_max_bias);
    if (a.sinks) s += " sinks";
    if (a.lse) s += " lse";
    return s;
}

// Each option alone and all together, softmax and log-softmax, fp32, fp16
// and bf16 (with masks of each type, a 16-bit tensor's also of the other
// 16-bit type), on every path: (batch 2, heads 4, query rows 3) of rows of
// 150 for softmax (not a multiple of 4: head and tail element by element
// where rows take vector windows, the mask element by element) and 256 for
// log-softmax (whole vectors: the mask read four or eight at a time), mask
// (1, 2, 3, n) broadcast over batch and, by modulo, over heads (and once
// (2, 2, 3, n), a mask per batch). Without a mask the scale goes into the
// exp where it can (s >= 1, or softmax without sinks): causal at s = 0.3,
// the log-sum-exp at 1/sqrt(128), sinks at s = 2; sinks at 1/sqrt(128)
// take it as they load.
TEST_F(AttentionTest, AttentionOptionsOnEveryPath) {
    const uint64_t batch = 2, heads = 4, query_rows = 3;
    // Sinks near the rows' maxima (logits are normal(0, 4)), so that they
    // weigh in the normaliser.
    const std::vector<float> sinks = {8.0f, 12.0f, -kInf, 10.0f};
    uint32_t variant = 0, runs = 0;
    for (Dtype dtype : {Dtype::f32, Dtype::f16, Dtype::bf16})
        for (bool log : {false, true})
            for (int option = 0; option < 9; ++option) {
                const uint64_t n = log ? 256 : 150;
                Problem p = attention_problem(batch, heads, query_rows, n, dtype);
                p.log = log;
                Attention& a = p.attention;
                switch (option) {
                    case 0: a.mask = true; a.mask_dtype = Dtype::f32; break;
                    case 1:  // softmax takes the scale in the exp, log-softmax (s < 1) as it loads
                        a.causal = true; a.causal_offset = static_cast<int64_t>(n) - 10; p.scale = 0.3; break;
                    case 2:  // a 16-bit mask of the other kind than the tensor's
                        a.mask = true; a.mask_dtype = dtype == Dtype::f16 ? Dtype::bf16 : Dtype::f16;
                        a.alibi_max_bias = 8.0; break;
                    case 3:  // sinks in x's units: the scale in the exp, softmax and log-softmax
                        a.sinks = true; a.lse = true; p.scale = 2.0; break;
                    case 4: a.lse = true; p.scale = 1.0 / std::sqrt(128.0); break;
                    case 5:
                        a.mask = true; a.mask_dtype = dtype; a.causal = true; a.causal_offset = 100;
                        a.alibi_max_bias = 4.0; a.sinks = true; a.lse = true; p.scale = 0.5;
                        break;
                    case 6:  // broadcast over batch and heads: the mask row from the query row alone
                        a.mask = true; a.mask_dtype = dtype; p.scale = 1.0 / std::sqrt(128.0); break;
                    case 7:  // the same with ALiBi's per-head slopes
                        a.mask = true; a.mask_dtype = Dtype::f32; a.alibi_max_bias = 8.0; break;
                    default:  // sinks at s < 1: the scale applied as the elements load
                        a.causal = true; a.causal_offset = 200; a.sinks = true; a.lse = true;
                        p.scale = 1.0 / std::sqrt(128.0);
                }
                // The fp32 mask of option 0 is (2, 2, 3, n), one per batch;
                // options 6 and 7 take a (3, n) mask; the others (1, 2, 3, n).
                a.mask_batch = option == 0 ? 2 : 1;
                a.mask_heads = option == 6 || option == 7 ? 1 : 2;
                const std::vector<float> x = random_logits(p.shape.elements(), fresh_seed());
                const std::vector<float> mask =
                    a.mask ? random_mask(a.mask_batch * a.mask_heads * query_rows, n, fresh_seed()) : std::vector<float>{};
                const std::vector<Path> paths = paths_for(n);
                // One path per case on a CPU device (another at each subgroup size).
                for (uint32_t k = 0; k < paths.size(); ++k) {
                    if (!sweep_runs(variant, k, static_cast<uint32_t>(paths.size()))) continue;
                    const AttentionOutcome o = run_attention(p, x, mask, sinks, forced(paths[k]));
                    expect_within_bound(p, o, describe_options(p));
                    ++runs;
                }
                ++variant;
            }
    EXPECT_GE(runs, 48u) << "cases run";
}

// A 16-bit mask of an odd element count, (3, 151) over rows of 151 (not a
// multiple of 4: the mask read element by element), its last element
// finite: the shaders read it from a 32-bit word whose second half lies
// past the mask's elements, which its buffer holds (mask_buffer_bytes()).
// Read as 0 from the mask's bytes alone, the tensor's last output was 10x
// its value on lavapipe (mask -2.32 there). fp16 and bf16 masks over fp32
// and 16-bit tensors, on every path.
TEST_F(AttentionTest, OddSixteenBitMaskReadToItsLastElement) {
    const uint64_t query_rows = 3, n = 151;
    uint32_t variant = 0, runs = 0;
    for (Dtype dtype : {Dtype::f32, Dtype::f16, Dtype::bf16})
        for (Dtype mask_dtype : {Dtype::f16, Dtype::bf16}) {
            Problem p = attention_problem(1, 1, query_rows, n, dtype);
            p.attention.mask = true;
            p.attention.mask_dtype = mask_dtype;
            const std::vector<float> x = random_logits(p.shape.elements(), fresh_seed());
            std::vector<float> mask = random_mask(query_rows, n, fresh_seed());
            mask.back() = -3.0f;
            ASSERT_EQ(mask.size() % 2, 1u) << "the mask's element count";
            const std::vector<Path> paths = paths_for(n);
            for (uint32_t k = 0; k < paths.size(); ++k) {
                if (!sweep_runs(variant, k, static_cast<uint32_t>(paths.size()))) continue;
                const AttentionOutcome o = run_attention(p, x, mask, {}, forced(paths[k]));
                const size_t last = o.ref.size() - 1;
                EXPECT_NEAR(o.got[last], o.ref[last], 1e-2 * o.ref[last])
                    << describe_options(p) << " (" << path_name(o.plan.path) << "): the last output";
                expect_within_bound(p, o, describe_options(p));
                ++runs;
            }
            ++variant;
        }
    EXPECT_GE(runs, 6u) << "cases run";
}

// 16-bit rows of 255 and 257 under a 16-bit mask, a subgroup's each (on
// NVIDIA: 128 x 3 slots, odd rows, the mask read element by element). With
// their whole vectors loaded first and their heads and tails after, every
// output of the f16 tensor came out NaN on NVIDIA 580.159.04 (fp16 mask,
// fast exp, NaN found by the row's sum; bench/NOTES.md, v110); such
// subgroup rows now load each vector in turn (softmax_tiles.glsl,
// PARTS_AFTER_WHOLE4).
TEST_F(AttentionTest, SixteenBitMaskedOddSubgroupRows) {
    const uint64_t query_rows = 15;
    for (uint64_t n : {255u, 257u})
        for (Dtype dtype : {Dtype::f16, Dtype::bf16}) {
            Problem p = attention_problem(1, 1, query_rows, n, dtype);
            p.attention.mask = true;
            p.attention.mask_dtype = dtype;
            const std::vector<float> x = random_logits(p.shape.elements(), fresh_seed());
            const std::vector<float> mask = random_mask(query_rows, n, fresh_seed());
            const AttentionOutcome o = run_attention(p, x, mask, {}, forced(Path::subgroup_row));
            ASSERT_EQ(o.plan.path, Path::subgroup_row) << describe_options(p);
            expect_within_bound(p, o, describe_options(p) + " (" + o.plan.key[0].id() + ")");
        }
}

// A geometry that puts query-major rows on one row kind (forced path,
// workgroup size and slots), or in ranges of two (batch, head) slices.
struct RowKindGeometry {
    const char* what;
    Path path;
    uint64_t n;
    uint32_t workgroup_size, slots;
    bool ranges;
};

// Rows in registers (a workgroup row of 200), in tiles (a workgroup of 64 x
// 1 slot over rows of 600), in ranges of two slices (rows of 256: slices of
// whole 256-byte multiples, which every device's offset alignment keeps
// whole), and with subgroup arithmetic several rows a subgroup (rows of 12:
// one row in each slot) and a subgroup's row (100).
std::vector<RowKindGeometry> row_kind_geometries() {
    std::vector<RowKindGeometry> geometries = {{"workgroup row", Path::workgroup_row, 200, 0, 0, false},
                                               {"row in tiles", Path::workgroup_row, 600, 64, 1, false},
                                               {"ranges of two slices", Path::workgroup_row, 256, 0, 0, true}};
    if (Gpu::ctx().info().subgroup_arithmetic()) {
        geometries.push_back({"rows per slot", Path::subgroup_row, 12, 0, 0, false});
        geometries.push_back({"subgroup row", Path::subgroup_row, 100, 0, 0, false});
    }
    return geometries;
}

// The options a query-major case forces for geometry g of a problem of
// `query_rows` query rows a slice.
PlanOptions query_major_options(const RowKindGeometry& g, uint64_t query_rows, Dtype dtype) {
    PlanOptions o;
    o.path = g.path;
    o.row_order = RowOrder::query_major;
    o.workgroup_size = g.workgroup_size;
    o.slots = g.slots;
    if (g.ranges) o.max_range_bytes = 2 * query_rows * g.n * dtype_size(dtype);
    return o;
}

// The rows taken query-major (every (batch, head) slice of query row q
// before q + 1), forced on each row kind: rows in registers (a workgroup
// row of 200), in tiles (a workgroup of 64 x 1 slot over rows of 600),
// several rows a subgroup (subgroup rows of 12: one row in each slot), a
// subgroup's row (100), and in ranges of two slices, the last range one:
// (batch 2, heads 3, query rows 5), with a mask broadcast over batch and
// heads, a mask per head with ALiBi (log-softmax), and causal with sinks
// and the log-sum-exp, which each row finds by the index it is given.
TEST_F(AttentionTest, QueryMajorOrderOnEveryRowKind) {
    const uint64_t batch = 2, heads = 3, query_rows = 5;
    const std::vector<float> sinks = {6.0f, -kInf, 9.0f};
    const std::vector<RowKindGeometry> geometries = row_kind_geometries();
    const bool subgroup_rows = Gpu::ctx().info().subgroup_arithmetic();
    const Dtype dtypes[] = {Dtype::f32, Dtype::f16, Dtype::bf16};
    std::set<ShaderKind> kinds;
    uint32_t variant = 0, runs = 0;
    for (const RowKindGeometry& g : geometries)
        for (int option = 0; option < 3; ++option, ++variant)
            for (uint32_t k = 0; k < 3; ++k) {
                if (!sweep_runs(variant, k, 3)) continue;  // a type per case (all with full sweeps)
                const Dtype dtype = dtypes[k];
                Problem p = attention_problem(batch, heads, query_rows, g.n, dtype);
                p.log = option == 1;
                p.scale = 1.0 / std::sqrt(128.0);
                Attention& a = p.attention;
                if (option == 0) {
                    a.mask = true;
                    a.mask_dtype = dtype;
                } else if (option == 1) {
                    a.mask = true;
                    a.mask_dtype = Dtype::f32;
                    a.mask_heads = heads;
                    a.alibi_max_bias = 8.0;
                    a.lse = true;
                } else {
                    a.causal = true;
                    a.causal_offset = 1;
                    a.sinks = true;
                    a.lse = true;
                }
                const std::vector<float> x = random_logits(p.shape.elements(), fresh_seed());
                const std::vector<float> mask =
                    a.mask ? random_mask(a.mask_heads * query_rows, g.n, fresh_seed()) : std::vector<float>{};
                const PlanOptions o = query_major_options(g, query_rows, dtype);
                const std::string what = std::string(g.what) + ", " + describe_options(p);
                const AttentionOutcome out = run_attention(p, x, mask, sinks, o);
                ASSERT_TRUE(out.plan.key[0].query_major) << what << ": " << out.plan.key[0].id();
                EXPECT_EQ(out.plan.key[0].query_block_shift, 0u) << what << ": blocks of 1 (5 query rows)";
                if (g.ranges) {
                    EXPECT_EQ(out.plan.ranges, 3u) << what;
                }
                expect_within_bound(p, out, what);
                kinds.insert(out.plan.key[0].kind);
                ++runs;
            }
    EXPECT_GE(runs, geometries.size() * 3) << "cases run";
    for (ShaderKind kind : {ShaderKind::row_in_registers, ShaderKind::row_in_tiles})
        EXPECT_TRUE(kinds.count(kind)) << "no case took the " << kind_name(kind) << " kind";
    if (subgroup_rows) {
        EXPECT_TRUE(kinds.count(ShaderKind::rows_per_slot)) << "no case took the rows per slot kind";
    }
}

// Query-major order in blocks of 2, 4 and 8 of (batch 2, heads 3, query
// rows 8) forced on each row kind (row_kind_geometries()), and the plan's
// own block: with a mask broadcast over batch and heads, a mask per head
// with ALiBi (log-softmax, the log-sum-exp), and causal with sinks. A
// block is a power of two dividing the query rows; 8 takes whole slices.
TEST_F(AttentionTest, QueryMajorBlocksOnEveryRowKind) {
    const uint64_t batch = 2, heads = 3, query_rows = 8;
    const std::vector<float> sinks = {6.0f, -kInf, 9.0f};
    const Dtype dtypes[] = {Dtype::f32, Dtype::f16, Dtype::bf16};
    const uint32_t blocks[] = {0, 2, 4, 8};  // 0: the plan's
    uint32_t variant = 0, runs = 0;
    std::set<uint32_t> shifts;
    for (const RowKindGeometry& g : row_kind_geometries())
        for (uint32_t block : blocks) {
            for (uint32_t k = 0; k < 3; ++k) {
                if (!sweep_runs(variant, k, 3)) continue;  // an option and a type per case
                const Dtype dtype = dtypes[(k + block) % 3];
                Problem p = attention_problem(batch, heads, query_rows, g.n, dtype);
                p.scale = 1.0 / std::sqrt(128.0);
                Attention& a = p.attention;
                a.mask = k != 2;
                a.mask_dtype = dtype;
                a.causal = k == 2;
                a.sinks = k == 2;
                if (k == 1) {
                    p.log = true;
                    a.mask_heads = heads;
                    a.alibi_max_bias = 8.0;
                    a.lse = true;
                }
                const std::vector<float> x = random_logits(p.shape.elements(), fresh_seed());
                const std::vector<float> mask =
                    a.mask ? random_mask(a.mask_heads * query_rows, g.n, fresh_seed()) : std::vector<float>{};
                PlanOptions o = query_major_options(g, query_rows, dtype);
                o.query_block = block;
                const std::string what = std::string(g.what) + ", blocks of " + std::to_string(block) + ", " +
                                         describe_options(p);
                const AttentionOutcome out = run_attention(p, x, mask, sinks, o);
                const PipelineKey& key = out.plan.key[0];
                ASSERT_TRUE(key.query_major) << what << ": " << key.id();
                if (block) {
                    EXPECT_EQ(1u << key.query_block_shift, block) << what << ": " << key.id();
                }
                expect_within_bound(p, out, what);
                shifts.insert(key.query_block_shift);
                ++runs;
            }
            ++variant;
        }
    EXPECT_GE(runs, 4u * 3u) << "cases run";
    for (uint32_t shift : {1u, 2u, 3u})
        EXPECT_TRUE(shifts.count(shift)) << "no case ran in blocks of " << (1u << shift);
}

// A mask that leaves one element per row gives exactly 1 there and 0
// elsewhere (log-softmax: 0 and -inf), and that element's logit as the
// log-sum-exp, on every path.
TEST_F(AttentionTest, MaskLeavingOneElementGivesExactlyOne) {
    const uint64_t rows = 5, n = 300;
    std::vector<float> mask(rows * n, -kInf);
    for (uint64_t r = 0; r < rows; ++r) mask[r * n + (r * 61) % n] = 0.0f;
    for (bool log : {false, true})
        for (Path path : paths_for(n)) {
            Problem p = attention_problem(1, 1, rows, n);
            p.log = log;
            p.attention.mask = true;
            p.attention.lse = true;
            const std::vector<float> x = random_logits(rows * n, fresh_seed());
            const AttentionOutcome o = run_attention(p, x, mask, {}, forced(path));
            for (uint64_t r = 0; r < rows; ++r) {
                const uint64_t kept = (r * 61) % n;
                for (uint64_t j = 0; j < n; ++j) {
                    const double want = j == kept ? (log ? 0.0 : 1.0) : (log ? -kInf : 0.0);
                    ASSERT_EQ(o.got[r * n + j], want) << path_name(path) << (log ? " log" : "") << " row " << r
                                                      << " column " << j << " (kept " << kept << ")";
                }
                EXPECT_FLOAT_EQ(o.lse_got[r], x[r * n + kept]) << path_name(path) << " row " << r << " log-sum-exp";
            }
        }
}

// Query row 0 under a causal mask with offset 0 sees column 0 alone: one-hot.
TEST_F(AttentionTest, CausalRowZeroIsOneHot) {
    const uint64_t heads = 2, query_rows = 4, n = 64;
    for (Path path : paths_for(n)) {
        Problem p = attention_problem(1, heads, query_rows, n);
        p.attention.causal = true;
        const std::vector<float> x = random_logits(p.shape.elements(), fresh_seed());
        const AttentionOutcome o = run_attention(p, x, {}, {}, forced(path));
        for (uint64_t h = 0; h < heads; ++h) {
            const uint64_t row0 = h * query_rows;
            for (uint64_t j = 0; j < n; ++j)
                ASSERT_EQ(o.got[row0 * n + j], j == 0 ? 1.0 : 0.0) << path_name(path) << " head " << h << " column " << j;
            // Query row 3 sees columns 0..3: their softmax, the rest 0.
            for (uint64_t j = 4; j < n; ++j)
                ASSERT_EQ(o.got[(row0 + 3) * n + j], 0.0) << path_name(path) << " head " << h << " row 3 column " << j;
        }
        expect_within_bound(p, o, std::string("causal ") + path_name(path));
    }
}

// A sink of -inf changes nothing; a finite sink lowers every output by the
// same factor, exp(lse without it - lse with it).
TEST_F(AttentionTest, SinksJoinTheNormaliser) {
    const uint64_t heads = 2, query_rows = 3, n = 500;
    Problem plain = attention_problem(1, heads, query_rows, n);
    plain.attention.lse = true;
    Problem with_sinks = plain;
    with_sinks.attention.sinks = true;
    const std::vector<float> x = random_logits(plain.shape.elements(), fresh_seed());
    const AttentionOutcome a = run_attention(plain, x, {}, {});
    const AttentionOutcome b = run_attention(with_sinks, x, {}, {-kInf, 12.0f});
    for (uint64_t r = 0; r < heads * query_rows; ++r) {
        const bool none = r < query_rows;  // head 0's sink is -inf
        const double factor = none ? 1.0 : std::exp(static_cast<double>(a.lse_got[r]) - b.lse_got[r]);
        if (!none) {
            const double want = std::log(std::exp(static_cast<double>(a.lse_ref[r])) + std::exp(12.0));
            EXPECT_NEAR(b.lse_got[r], want, 1e-5 * std::fabs(want)) << "row " << r << " log-sum-exp with sink 12";
        }
        for (uint64_t j = 0; j < n; ++j)
            ASSERT_NEAR(b.got[r * n + j], a.got[r * n + j] * factor, 1e-5 * a.got[r * n + j] + 1e-30)
                << "row " << r << " column " << j << (none ? " (sink -inf)" : " (sink 12)");
    }
    expect_within_bound(with_sinks, b, "sinks");
}

// A row masked entirely is NaN as an all -inf row is (SciPy), log-sum-exp
// NaN; with a finite sink its outputs are 0 (log: -inf) and its
// log-sum-exp is the sink.
TEST_F(AttentionTest, RowMaskedEntirely) {
    const uint64_t n = 40;
    for (bool sink : {false, true})
        for (bool log : {false, true})
            for (Path path : paths_for(n)) {
                Problem p = attention_problem(1, 1, 2, n);
                p.log = log;
                p.attention.mask = true;
                p.attention.sinks = sink;
                p.attention.lse = true;
                std::vector<float> mask(2 * n, 0.0f);
                for (uint64_t j = 0; j < n; ++j) mask[n + j] = -kInf;  // row 1
                const AttentionOutcome o = run_attention(p, random_logits(2 * n, fresh_seed()), mask, {1.5f}, forced(path));
                const std::string what = std::string(path_name(path)) + (log ? " log" : "") + (sink ? " sink 1.5" : "");
                for (uint64_t j = 0; j < n; ++j) {
                    if (sink) {
                        ASSERT_EQ(o.got[n + j], log ? -kInf : 0.0) << what << " column " << j;
                    } else {
                        ASSERT_TRUE(std::isnan(o.got[n + j])) << what << " column " << j << ": " << o.got[n + j];
                    }
                }
                if (sink) {
                    EXPECT_EQ(o.lse_got[1], 1.5f) << what;
                } else {
                    EXPECT_TRUE(std::isnan(o.lse_got[1])) << what << ": " << o.lse_got[1];
                }
                expect_within_bound(p, o, what);
            }
}

// Workgroup rows of 32 invocations at `slots` slots each, forced.
PlanOptions forced_workgroup_rows(uint32_t slots) {
    PlanOptions o;
    o.path = Path::workgroup_row;
    o.workgroup_size = 32;
    o.slots = slots;
    return o;
}

// Fails unless the plan took `slots` slots of 16-byte accesses (8 16-bit
// elements), the tile form the test is about.
void assert_16_byte_tiles(const AttentionOutcome& o, uint32_t slots, const std::string& what) {
    ASSERT_EQ(o.plan.key[0].slots, slots) << what << ": slots";
    ASSERT_EQ(o.plan.key[0].vec, 8u) << what << ": access width";
}

// Masked 16-bit tiles at more than 8 slots, which load every vector, x's
// and the mask's, before any takes its logits (fp32 rows do so at any slot
// count: AttentionOptionsOnEveryPath's rows of 256): workgroup rows of 32 x
// 10 slots over f16 rows of 1280 under a causal mask from column 601 of
// query row 0 (vectors wholly visible, one partly, the rest hidden and
// never read) and bf16 rows of 2560 (two tiles), each with a mask of its
// type broadcast over the heads.
TEST_F(AttentionTest, MaskedTilesLoadedFirst) {
    struct Case { Dtype dtype; uint64_t n; bool causal; };
    for (const Case& c : {Case{Dtype::f16, 1280, true}, Case{Dtype::bf16, 2560, false}}) {
        Problem p = attention_problem(1, 2, 3, c.n, c.dtype);
        p.scale = 1.0 / std::sqrt(128.0);
        Attention& a = p.attention;
        a.mask = true;
        a.mask_dtype = c.dtype;
        a.mask_heads = 1;
        a.causal = c.causal;
        a.causal_offset = 600;
        const std::vector<float> x = random_logits(p.shape.elements(), fresh_seed());
        const std::vector<float> mask = random_mask(3, c.n, fresh_seed());
        const AttentionOutcome o = run_attention(p, x, mask, {}, forced_workgroup_rows(10));
        const std::string what = describe_options(p) + " at 32 x 10";
        ASSERT_NO_FATAL_FAILURE(assert_16_byte_tiles(o, 10, what));
        expect_within_bound(p, o, what);
    }
}

// Causal 16-bit workgroup rows of more than 4 slots without a mask buffer,
// which load a tile's vectors first and take their logits in a loop after:
// rows of 1280 at 32 x 8 slots (two tiles, the second in part) from column
// 601 of query row 0 (vectors wholly visible, one partly, the rest hidden),
// f16 softmax and bf16 log-softmax, scaled.
TEST_F(AttentionTest, CausalTilesLogitsAfter) {
    for (Dtype dtype : {Dtype::f16, Dtype::bf16}) {
        Problem p = attention_problem(1, 2, 3, 1280, dtype);
        p.scale = 1.0 / std::sqrt(128.0);
        p.attention.causal = true;
        p.attention.causal_offset = 600;
        p.log = dtype == Dtype::bf16;
        const std::vector<float> x = random_logits(p.shape.elements(), fresh_seed());
        const AttentionOutcome o = run_attention(p, x, {}, {}, forced_workgroup_rows(8));
        const std::string what = describe_options(p) + " at 32 x 8";
        ASSERT_NO_FATAL_FAILURE(assert_16_byte_tiles(o, 8, what));
        for (uint64_t row = 0; row < 6; ++row) {
            const uint64_t visible = row % 3 + 601;
            for (uint64_t j = visible; j < 1280; ++j)
                ASSERT_EQ(o.got[row * 1280 + j], p.log ? -kInf : 0.0) << what << " row " << row << " column " << j << " is hidden";
        }
        expect_within_bound(p, o, what);
    }
}

// Subgroup rows of 8 slots with a tile's loads issued together
// (TileLoads::together, the form NVIDIA's driver takes by itself): masked
// 16-bit rows load x's and the mask's vectors first (f16 under a causal
// mask from just short of the row's middle, bf16 without), causal rows take
// their logits after their loads (f16 softmax; f32 log-softmax, 4-wide).
// Rows of a subgroup's 8 slots of 4 elements a lane, scaled.
TEST_F(AttentionTest, SubgroupRowTilesTogether) {
    if (!Gpu::ctx().info().subgroup_arithmetic()) GTEST_SKIP() << "no subgroup arithmetic: no subgroup rows";
    struct Case { Dtype dtype; bool mask, log; uint32_t vec; };
    const uint64_t n = 32u * Gpu::ctx().info().subgroup_size;
    const uint64_t offset = n / 2 - 3;
    for (const Case& c : {Case{Dtype::f16, true, false, 8}, Case{Dtype::bf16, true, false, 8},
                          Case{Dtype::f16, false, false, 8}, Case{Dtype::f32, false, true, 4}}) {
        Problem p = attention_problem(1, 2, 3, n, c.dtype);
        p.scale = 1.0 / std::sqrt(128.0);
        p.log = c.log;
        Attention& a = p.attention;
        a.mask = c.mask;
        a.mask_dtype = c.dtype;
        a.causal = !c.mask || c.dtype == Dtype::f16;
        a.causal_offset = static_cast<int64_t>(offset);
        PlanOptions options;
        options.path = Path::subgroup_row;
        options.slots = 8;
        options.rules.tile_loads = TileLoads::together;
        const std::vector<float> x = random_logits(p.shape.elements(), fresh_seed());
        const std::vector<float> mask = c.mask ? random_mask(3, n, fresh_seed()) : std::vector<float>{};
        const AttentionOutcome o = run_attention(p, x, mask, {}, options);
        const std::string what = describe_options(p) + " on subgroup rows of 8 slots";
        ASSERT_TRUE(o.plan.key[0].tile_loads_together) << what << ": " << o.plan.key[0].id();
        ASSERT_TRUE(o.plan.key[0].subgroup_rows) << what << ": " << o.plan.key[0].id();
        ASSERT_EQ(o.plan.key[0].slots, 8u) << what << ": slots";
        ASSERT_EQ(o.plan.key[0].vec, c.vec) << what << ": access width";
        if (a.causal) {
            for (uint64_t row = 0; row < 6; ++row)
                for (uint64_t j = row % 3 + offset + 1; j < n; ++j)
                    ASSERT_EQ(o.got[row * n + j], p.log ? -kInf : 0.0) << what << " row " << row << " column " << j << " is hidden";
        }
        expect_within_bound(p, o, what);
    }
}

// Masked 16-bit workgroup rows that fetch the next row first
// (RowFetch::next_row_first, the form NVIDIA's driver takes by itself on
// large batches): 3 heads x 5 query rows of 1024, one tile of 32 x 8
// slots, so that workgroup w takes rows w and w + 8 and the last one a row
// alone; f16 softmax with ALiBi, sinks and the log-sum-exp, taken
// query-major too, and bf16 log-softmax, each under a mask of its type
// broadcast over the heads (about one element in eight -inf).
TEST_F(AttentionTest, WorkgroupRowsFetchTheNextRowFirst) {
    if (!Gpu::ctx().info().subgroup_arithmetic()) GTEST_SKIP() << "no subgroup arithmetic: the form needs subgroups";
    struct Case { Dtype dtype; bool log, others; RowOrder order; };
    for (const Case& c : {Case{Dtype::f16, false, true, RowOrder::head_major},
                          Case{Dtype::f16, false, true, RowOrder::query_major},
                          Case{Dtype::bf16, true, false, RowOrder::head_major}}) {
        Problem p = attention_problem(1, 3, 5, 1024, c.dtype);
        p.scale = 1.0 / std::sqrt(128.0);
        p.log = c.log;
        Attention& a = p.attention;
        a.mask = true;
        a.mask_dtype = c.dtype;
        if (c.others) {
            a.alibi_max_bias = 8.0;
            a.sinks = true;
            a.lse = true;
        }
        PlanOptions options = forced_workgroup_rows(8);
        options.row_order = c.order;
        options.rules.row_fetch = RowFetch::next_row_first;
        const std::vector<float> x = random_logits(p.shape.elements(), fresh_seed());
        const std::vector<float> mask = random_mask(5, 1024, fresh_seed());
        const std::vector<float> sinks = c.others ? std::vector<float>{0.5f, -1.0f, 2.0f} : std::vector<float>{};
        const AttentionOutcome o = run_attention(p, x, mask, sinks, options);
        const std::string what = describe_options(p) + (c.order == RowOrder::query_major ? " query-major" : "") +
                                 " at 32 x 8, the next row first";
        ASSERT_NO_FATAL_FAILURE(assert_16_byte_tiles(o, 8, what));
        ASSERT_TRUE(o.plan.key[0].next_row_first) << what << ": " << o.plan.key[0].id();
        ASSERT_EQ(o.plan.groups, 8u) << what << ": 15 rows, two a workgroup";
        expect_within_bound(p, o, what);
    }
}

// Rows long enough for the split path's chunks and for tiles: causal with
// a mask and sinks over 3 rows of 70000.
TEST_F(AttentionTest, AttentionOnLongRows) {
    Problem p = attention_problem(1, 1, 3, 70000);
    p.attention.mask = true;
    p.attention.mask_rows = 1;
    p.attention.causal = true;
    p.attention.causal_offset = 69998;  // row 0 hides its last column, row 2 none
    p.attention.sinks = true;
    p.attention.lse = true;
    const std::vector<float> x = random_logits(p.shape.elements(), fresh_seed());
    const std::vector<float> mask = random_mask(1, 70000, fresh_seed());
    const AttentionOutcome o = run_attention(p, x, mask, {2.0f});
    EXPECT_EQ(o.got[69999], 0.0) << "row 0's last column is hidden";
    expect_within_bound(p, o, std::string("long rows ") + path_name(o.plan.path));
}

}  // namespace

// ggml's slopes (ggml_soft_max_ext: m0 = 2^(-max_bias / n), m1 =
// 2^(-max_bias / 2 / n), n = 2^floor(log2(heads))), computed here in fp32
// as ggml does.
TEST(AttentionRules, AlibiSlopesAreGgmls) {
    for (uint32_t heads : {8u, 12u, 32u})
        for (float max_bias : {8.0f, 16.0f}) {
            const uint32_t n = 1u << static_cast<uint32_t>(std::floor(std::log2(static_cast<float>(heads))));
            const float m0 = std::pow(2.0f, -max_bias / static_cast<float>(n));
            const float m1 = std::pow(2.0f, -(max_bias / 2.0f) / static_cast<float>(n));
            for (uint32_t h = 0; h < heads; ++h) {
                const float ggml = h < n ? std::pow(m0, static_cast<float>(h + 1)) : std::pow(m1, static_cast<float>(2 * (h - n) + 1));
                EXPECT_NEAR(alibi_slope(h, heads, max_bias), ggml, 1e-6 * ggml)
                    << heads << " heads, max_bias " << max_bias << ", head " << h;
            }
        }
    EXPECT_EQ(alibi_slope(3, 8, 0.0), 1.0) << "max_bias 0: slope 1";
    // 8 heads, max_bias 8: 1/2, 1/4, ..., 1/256.
    EXPECT_EQ(alibi_slope(0, 8, 8.0), 0.5);
    EXPECT_EQ(alibi_slope(7, 8, 8.0), 1.0 / 256.0);
}

// Options that do not fit the shape are refused, naming the field.
TEST(AttentionRules, LayoutRefusals) {
    auto refusal = [](const Problem& p) {
        try {
            attention_layout(p);
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    Problem p = attention_problem(2, 4, 3, 10);
    p.attention.mask = true;
    p.attention.mask_heads = 3;
    EXPECT_NE(refusal(p).find("mask_heads 3 does not divide the tensor's heads 4"), std::string::npos) << refusal(p);
    p.attention.mask_heads = 2;
    p.attention.mask_batch = 4;
    EXPECT_NE(refusal(p).find("mask_batch 4"), std::string::npos) << refusal(p);
    p.attention.mask_batch = 1;
    EXPECT_EQ(refusal(p), "accepted");
    EXPECT_EQ(attention_layout(p).mask_elements, 2u * 3u * 10u);
    p.attention.heads = 5;
    EXPECT_NE(refusal(p).find("heads 5"), std::string::npos) << refusal(p);
    Problem alibi = attention_problem(1, 8, 2, 10);
    alibi.attention.alibi_max_bias = 8.0;
    alibi.attention.causal = true;
    EXPECT_NE(refusal(alibi).find("ALiBi scales the mask"), std::string::npos) << refusal(alibi);
    Problem strided;
    strided.shape = {2, 5, 3};
    strided.attention.causal = true;
    EXPECT_NE(refusal(strided).find("last axis"), std::string::npos) << refusal(strided);
}

// The CPU reference's closed forms: scale, mask and sink on one row of 2.
TEST(AttentionRules, CpuReferenceClosedForm) {
    Problem p = attention_problem(1, 1, 1, 2);
    p.scale = 0.5;
    p.attention.mask = true;
    p.attention.sinks = true;
    p.attention.lse = true;
    const double x[2] = {2.0, 4.0};
    const float mask[2] = {0.0f, -1.0f};  // logits 1, 1
    const float sink = 1.0f;              // a third e^1 in the normaliser
    float lse = 0;
    double y[2];
    cpu::softmax(p, x, y, AttentionData{mask, &sink, &lse});
    EXPECT_NEAR(y[0], 1.0 / 3.0, 1e-15);
    EXPECT_NEAR(y[1], 1.0 / 3.0, 1e-15);
    EXPECT_NEAR(lse, 1.0 + std::log(3.0), 1e-6);
}
