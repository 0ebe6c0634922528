// The single-pass path (long rows in one dispatch, each workgroup gathering
// its row's partials from the others) against the float64 CPU reference:
// lost partials, more workgroups than the device holds at once, partials
// computed by a waiting workgroup itself (patience 1), tiny chunks,
// non-finite elements in one chunk only, lengths around chunk boundaries,
// subgroups of a chunk whose maxima lie far apart, and the workspace left
// at zero for the next call.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "gpu_fixture.hpp"
#include "vksoftmax/barrier.hpp"
#include "vksoftmax/single_pass_workspace.hpp"

using namespace vkstest;

namespace {

const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

Problem rows_of(uint64_t rows, uint64_t cols, Dtype dt = Dtype::f32, bool log = false) {
    Problem p;
    p.shape = {rows, cols, 1};
    p.dtype = dt;
    p.log = log;
    return p;
}

// The reductions the device has: the shared-memory tree always, subgroup
// arithmetic where offered.
std::vector<Reduction> reductions() {
    std::vector<Reduction> r = {Reduction::shared};
    if (Gpu::ctx().info().subgroup_arithmetic()) r.push_back(Reduction::subgroup);
    return r;
}

class SinglePassTest : public Gpu {
protected:
    void SetUp() override {
        Gpu::SetUp();
        if (!has_single_pass(ctx().info()))
            GTEST_SKIP() << single_pass_rule(ctx().info(), SinglePass::allowed).reason;
    }
};

}  // namespace

// Rows whose max is a spike of 12 (the rest in [-1, 1]), moving through
// every chunk across the rows. The spike carries about 7/8 of its row's
// mass (e^12 against 20003 elements of about 1.2): a lost spike partial
// moves the row's outputs about 8-fold, any other chunk's by its share of
// the rest (a tile of 1024 elements: 0.6%), far past the bound. (A spike
// of 100 carried all but 1e-38 of the mass: only its own partial showed.)
// Tiny chunks (one tile) make many partials
// per row and, over 61 rows, more workgroups than lavapipe runs at once;
// with patience 1 a workgroup computes the partials it does not find
// published at once itself, so both ways of gathering a row are checked on
// every device.
TEST_F(SinglePassTest, SpikeInEveryChunk) {
    const uint32_t seed = fresh_seed();
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> small(-1.f, 1.f);
    for (Reduction red : reductions())
        for (uint32_t patience : {0u, 1u})
        for (bool log : {false, true}) {
            const uint64_t rows = 61, cols = 20000 + 3;
            const Problem p = rows_of(rows, cols, Dtype::f32, log);
            std::vector<float> x(rows * cols);
            for (float& e : x) e = small(rng);
            for (uint64_t r = 0; r < rows; ++r) x[r * cols + (r * 997 + r * cols / rows) % cols] = 12.f;
            const PlanOptions opts = single_pass(1, red, patience);
            Outcome o = run_and_compare(p, x, opts);
            ASSERT_EQ(o.plan.path, Path::single_pass);
            EXPECT_GE(o.plan.push.chunks * rows, 1000u) << "expected many work items";
            EXPECT_TRUE(o.acc.within(1e-5, 0.0)) << describe(p, opts) << " (patience " << patience << ", seed " << seed << ", "
                                                 << o.plan.push.chunks << " chunks of " << o.plan.push.chunk
                                                 << "): " << o.acc.describe();
        }
}

// A row's partials are gathered by subgroup 0 alone where they are at
// most 32 per lane of a subgroup, and by every invocation past that: rows
// of 16 x and 64 x the subgroup size in chunks of one tile take each way,
// softmax and log-softmax, with subgroup arithmetic and with the
// shared-memory tree. Random logits, no spike: every chunk holds a share
// of the row's mass, so a partial left out (or merged twice) moves every
// output by about that share, far past the bound.
TEST_F(SinglePassTest, GatheredBySubgroupAndByWorkgroup) {
    const uint32_t subgroup = ctx().info().subgroup_size;
    const uint64_t chunk = plan_geometry(ctx().info(), rows_of(1, 50000), single_pass(1)).push.chunk;
    for (Reduction red : reductions())
        for (uint64_t chunks : {16ull * subgroup, 64ull * subgroup})
            for (bool log : {false, true}) {
                const Problem p = rows_of(2, (chunks - 1) * chunk + 1, Dtype::f32, log);
                const PlanOptions opts = single_pass(1, red);
                const uint32_t seed = fresh_seed();
                Outcome o = run_and_compare(p, random_logits(p.shape.elements(), seed), opts);
                ASSERT_EQ(o.plan.path, Path::single_pass);
                ASSERT_EQ(o.plan.push.chunks, chunks) << "expected " << chunks << " chunks of " << chunk;
                EXPECT_TRUE(o.acc.within(1e-5, 0.0)) << describe(p, opts) << " (" << chunks << " chunks of " << chunk
                                                     << ", subgroups of " << subgroup << ", seed " << seed
                                                     << "): " << o.acc.describe();
            }
}

// A held chunk's statistic merges its subgroups' (one exchange, in
// workgroups of up to 256 invocations): rows that rise (or fall) steadily
// give each subgroup of a chunk a max above (below) its neighbour's, and
// each chunk one 40 above (below) the last, so that across the row's 8
// chunks the far ones' sums rescale to exactly 0 (exp of -280) and must not
// turn into NaN, while the near ones' subgroups each still carry part of
// the row's mass. fp32 and fp16, with subgroup arithmetic and the
// shared-memory tree.
TEST_F(SinglePassTest, ChunksWhoseSubgroupsRiseSteeply) {
    for (Dtype dt : {Dtype::f32, Dtype::f16})
        for (Reduction red : reductions())
            for (bool rising : {true, false}) {
                const PlanOptions opts = single_pass(1, red);
                const uint64_t chunk = plan_geometry(ctx().info(), rows_of(1, 50000, dt), opts).push.chunk;
                const Problem p = rows_of(2, 8 * chunk, dt);
                const double step = 40.0 / static_cast<double>(chunk);
                std::vector<float> x(p.shape.elements());
                for (uint64_t i = 0; i < x.size(); ++i) {
                    const uint64_t col = i % p.shape.axis;
                    const uint64_t from = rising ? col : p.shape.axis - 1 - col;
                    x[i] = static_cast<float>(step * static_cast<double>(from) - 100.0);
                }
                Outcome o = run_and_compare(p, x, opts);
                ASSERT_EQ(o.plan.path, Path::single_pass);
                ASSERT_EQ(o.plan.push.chunks, 8u) << "chunks of " << chunk;
                const Bound b = accuracy_bound(dt, false);
                EXPECT_EQ(o.acc.nonfinite_mismatches, 0u) << describe(p, opts) << ": " << o.acc.describe();
                EXPECT_TRUE(o.acc.within(b.rel, 0.0)) << describe(p, opts) << (rising ? ", rising" : ", falling")
                                                      << " by " << step << " an element, chunks of " << chunk
                                                      << ": " << o.acc.describe();
            }
}

// Row lengths one below, at and one above 1, 2 and 3 chunks, fp32 and fp16
// (whose odd lengths take 16-byte windows), with the plan's and tiny chunks.
TEST_F(SinglePassTest, LengthsAroundChunkBoundaries) {
    for (Dtype dt : {Dtype::f32, Dtype::f16}) {
        // The chunk a tiny request becomes: one tile.
        const Plan probe = plan_geometry(ctx().info(), rows_of(1, 50000, dt), single_pass(1));
        const uint64_t chunk = probe.push.chunk;
        for (uint64_t k : {1u, 2u, 3u})
            for (int64_t delta : {-1, 0, 1}) {
                const uint64_t cols = k * chunk + static_cast<uint64_t>(delta + 1) - 1;
                const Problem p = rows_of(3, cols, dt);
                const uint32_t seed = fresh_seed();
                const PlanOptions opts = single_pass(1);
                Outcome o = run_and_compare(p, random_logits(p.shape.elements(), seed), opts);
                const Bound b = accuracy_bound(dt, false);
                EXPECT_TRUE(o.acc.within(b.rel, 0.0)) << describe(p, opts) << " (chunk " << o.plan.push.chunk << ", seed "
                                                      << seed << "): " << o.acc.describe();
            }
    }
}

// A NaN, a +inf, a chunk all -inf and a row all -inf, each in one chunk of
// its row only: the rows follow SciPy (NaN rows; -inf elements give 0).
TEST_F(SinglePassTest, NonFiniteInOneChunk) {
    const uint64_t cols = 12289;
    for (Dtype dt : {Dtype::f32, Dtype::f16})
        for (bool log : {false, true}) {
            const uint32_t seed = fresh_seed();
            const Problem p = rows_of(5, cols, dt, log);
            auto x = random_logits(p.shape.elements(), seed);
            const PlanOptions opts = single_pass(1);
            const Plan plan = plan_geometry(ctx().info(), p, opts);
            const uint64_t chunk = plan.push.chunk;
            ASSERT_GE(plan.push.chunks, 3u) << "expected a row of several chunks";
            x[0 * cols + chunk + 5] = kNaN;                                        // row 0: NaN in chunk 1
            x[1 * cols + cols - 2] = kInf;                                         // row 1: +inf in the last chunk
            std::fill(x.begin() + 2 * cols + chunk, x.begin() + 2 * cols + 2 * chunk, -kInf);  // row 2: chunk 1 all -inf
            std::fill(x.begin() + 3 * cols, x.begin() + 4 * cols, -kInf);          // row 3: all -inf
            Outcome o = run_and_compare(p, x, opts);
            const std::string what = describe(p, opts) + " (seed " + std::to_string(seed) + ")";
            EXPECT_EQ(o.acc.nonfinite_mismatches, 0u) << what << ": " << o.acc.describe();
            for (uint64_t r : {0u, 1u, 3u})
                for (uint64_t i = 0; i < cols; ++i)
                    ASSERT_TRUE(std::isnan(o.got[r * cols + i])) << what << ": row " << r << " element " << i;
            for (uint64_t i = chunk; i < 2 * chunk; ++i)
                ASSERT_EQ(o.got[2 * cols + i], log ? -INFINITY : 0.0) << what << ": row 2 element " << i;
            EXPECT_TRUE(o.acc.within(accuracy_bound(dt, log).rel, 0.0)) << what << ": " << o.acc.describe();
        }
}

// Rows not a multiple of 4 long on the single-pass path: each row is read
// over a window from the vector boundary at or before its first element,
// and its head and tail, which it shares with the rows beside it, lie in
// its first and last chunks. 7 rows of 20003 (16-bit: 16-byte windows)
// start at 7 offsets within a 16-byte vector, with non-finite elements at
// their ends, so that a neighbour's element read into a row (a NaN, a
// +inf) or a row's own end element left out shows in whole rows, as a
// few random logits would not against a long row's bound. The plan's
// chunks and chunks of 8192 held at 256 x 8 slots, every storage type,
// softmax and log-softmax.
TEST_F(SinglePassTest, OddRowsWithNonFiniteEnds) {
    const DeviceInfo& d = ctx().info();
    const uint64_t cols = 20003;
    for (Dtype dt : {Dtype::f32, Dtype::f16, Dtype::bf16}) {
        if (dt != Dtype::f32 && !d.storage_16bit) continue;
        for (bool held_at_8_slots : {false, true})
            for (bool log : {false, true}) {
                PlanOptions opts = single_pass(held_at_8_slots ? 8192 : 0);
                if (held_at_8_slots) {
                    opts.workgroup_size = 256;
                    opts.slots = 8;
                }
                const Problem p = rows_of(7, cols, dt, log);
                const Plan plan = plan_geometry(d, p, opts);
                const std::string what = describe(p, opts) + " (" + describe_geometry(plan) + "; " + kOddEnds + ")";
                ASSERT_GE(plan.push.chunks, 2u) << what << ": expected rows of several chunks";
                Outcome o = run_and_compare(p, rows_with_non_finite_ends(p, cols), opts);
                EXPECT_EQ(o.acc.nonfinite_mismatches, 0u) << what << ": " << o.acc.describe();
                EXPECT_TRUE(o.acc.within(accuracy_bound(dt, log).rel, 0.0)) << what << ": " << o.acc.describe();
            }
    }
}

// A subgroup's max on integer keys (SubgroupMax::integer_keys, which
// NVIDIA's driver takes for single rows by itself) on the rows of
// integer_key_edge_rows(): row 1 positive in its last chunk only, the
// NaNs of rows 4 and 5 in the second and third chunks. Every storage
// type, softmax and log-softmax, NaN and +inf found element by element
// and by the sum.
TEST_F(SinglePassTest, IntegerKeyMaxima) {
    if (!ctx().info().subgroup_arithmetic()) GTEST_SKIP() << "no subgroup arithmetic: the keys' modules need it";
    const uint64_t cols = 12289;
    for (Dtype dt : {Dtype::f32, Dtype::f16, Dtype::bf16})
        for (bool log : {false, true})
            for (NonfiniteCheck check : {NonfiniteCheck::each_element, NonfiniteCheck::by_sum}) {
                const uint32_t seed = fresh_seed();
                const Problem p = rows_of(8, cols, dt, log);
                PlanOptions opts = single_pass(1, Reduction::subgroup);
                opts.rules.subgroup_max = SubgroupMax::integer_keys;
                opts.rules.nonfinite = check;
                const Plan plan = plan_geometry(ctx().info(), p, opts);
                const std::string what = describe(p, opts) + " with integer keys, NaN and +inf " +
                                         nonfinite_check_name(check) + " (seed " + std::to_string(seed) + ")";
                ASSERT_TRUE(plan.key[0].subgroup_max_by_key) << what << ": " << plan.key[0].id();
                const uint64_t chunk = plan.push.chunk;
                ASSERT_GE(plan.push.chunks, 3u) << what << ": expected a row of several chunks";
                const KeyEdgeRows rows{cols, (plan.push.chunks - 1) * chunk, {chunk + 7, 2 * chunk + 7}};
                const Outcome o = run_and_compare(p, integer_key_edge_rows(rows, dt, seed), opts);
                expect_integer_key_edge_outputs(o, rows, p, what);
            }
}

// The plan's own geometry on single rows of vocabulary size and on batches
// of them, both dtypes: the shapes the path is for. Where the device counts
// its multiprocessors (132 on an H100), 1x524288 and 2x262144 take one
// wave of chunks held at 256 x 8, 1x1048576 a wave of 128 of them (each
// lane of the gathering subgroup loading 4 partials at once), 2x300000 128
// of them partly filled, 16x100000 two workgroups of them a
// multiprocessor, and 1x1100000 and 2x786432 256 of them in fp32 (the
// single row's lanes loading 8 partials each, in two rounds) and 128
// chunks of 16384 at 512 x 8 in 16-bit types, each chunk the count's
// share of the row.
TEST_F(SinglePassTest, VocabularyRows) {
    for (const auto& [rows, cols] :
         {std::pair<uint64_t, uint64_t>{1, 32000}, {1, 151936}, {4, 50257}, {33, 8193}, {1, 524288}, {1, 1u << 20},
          {2, 262144}, {2, 300000}, {16, 100000}, {1, 1100000}, {2, 786432}})
        for (Dtype dt : {Dtype::f32, Dtype::f16}) {
            const Problem p = rows_of(rows, cols, dt);
            const uint32_t seed = fresh_seed();
            const PlanOptions opts = single_pass(0);
            Outcome o = run_and_compare(p, random_logits(p.shape.elements(), seed), opts);
            EXPECT_TRUE(o.acc.within(accuracy_bound(dt, false).rel, 0.0))
                << describe(p, opts) << " (seed " << seed << "): " << o.acc.describe();
        }
}

// Single rows of 32769-65536 elements, which a device that counts its
// multiprocessors cuts into 32 chunks of at most 2048 held at 128 x 4
// (spread_single_row_chunk()), softmax and log-softmax in each type, with
// a spike of 20 near the row's end among normal(0, 4) logits: e^20
// against 32769-65536 elements of about e^8 each, 71-83% of the row's
// mass, so that its chunk's lost partial moves every output 3.5-6-fold, far
// past the bound: chunks of 2048 at 128 x 4
// forced on every device (rows under 65536 leave their last chunks empty
// so: a forced chunk is not cut to the row), and on such a device the
// plan's own, which must be that geometry.
TEST_F(SinglePassTest, SingleRowsInChunksAt128Invocations) {
    struct Case {
        uint64_t cols;
        Dtype dtype;
    };
    const bool counted = ctx().info().multiprocessors != 0;
    for (const Case& c : {Case{32769, Dtype::f32}, Case{40000, Dtype::f16}, Case{50257, Dtype::f32},
                          Case{65536, Dtype::bf16}})
        for (bool log : {false, true}) {
            const Problem p = rows_of(1, c.cols, c.dtype, log);
            const uint32_t seed = fresh_seed();
            std::vector<float> x = random_logits(c.cols, seed);
            x[c.cols - 7] = 20.f;
            PlanOptions forced = single_pass(2048);
            forced.workgroup_size = 128;
            forced.slots = 4;
            std::vector<PlanOptions> runs = {forced};
            if (counted) runs.push_back(PlanOptions{});
            for (const PlanOptions& opts : runs) {
                Outcome o = run_and_compare(p, x, opts);
                const std::string what = describe(p, opts) + " (seed " + std::to_string(seed) + ", " +
                                         describe_geometry(o.plan) + ")";
                EXPECT_TRUE(o.acc.within(accuracy_bound(c.dtype, log).rel, 0.0)) << what << ": " << o.acc.describe();
                if (opts.path) continue;
                EXPECT_EQ(o.plan.path, Path::single_pass) << what;
                EXPECT_EQ(o.plan.key[0].workgroup_size, 128u) << what;
                EXPECT_LE(o.plan.push.chunks, 32u) << what;
                EXPECT_LE(o.plan.push.chunk, 4 * o.plan.key[0].slots * 128u) << what << ": not held in one tile";
            }
        }
}

// A row of 1024 chunks of 1024 asked for, and a patience of one polling
// round: the first workgroups to run compute most of the row's partials
// themselves. Where the device caps an invocation's loop iterations in all
// (llvmpipe: 65535), the plan lengthens the chunks so that this fits (256
// at subgroups of 4, 512 at 8); in the 1024 asked for, lavapipe 22.3 wrote
// the row's first chunks with part of its sum at subgroups of 4 and 8
// (softmax max rel 560-6100, log-softmax 0.84-0.97). f32 and f16, softmax
// and log-softmax.
TEST_F(SinglePassTest, RowsComputedByOneWorkgroup) {
    for (Dtype dt : {Dtype::f32, Dtype::f16})
        for (bool log : {false, true}) {
            Problem p = rows_of(1, 1u << 20, dt);
            p.log = log;
            const uint32_t seed = fresh_seed();
            const PlanOptions opts = single_pass(1024, Reduction::automatic, 1);
            Outcome o = run_and_compare(p, random_logits(p.shape.elements(), seed), opts);
            EXPECT_TRUE(o.acc.within(accuracy_bound(dt, log).rel, 0.0))
                << describe(p, opts) << " in " << o.plan.push.chunks << " chunks of " << o.plan.push.chunk << " (seed "
                << seed << "): " << o.acc.describe();
        }
}

// Calls back to back on one workspace, with the barrier the contract asks
// for between them: each call is a generation, whose partials sit in the
// bank of its parity while it clears the other bank for the next, and the
// counts grow by the chunk count per call. The calls cycle through three
// inputs, so that a partial left from two calls before (the same bank, other
// logits) would show in the outputs.
TEST_F(SinglePassTest, CallsAreGenerations) {
    Context& c = ctx();
    const Problem p = rows_of(7, 30011);
    const Plan plan = make_plan(c, p, single_pass(1));
    ASSERT_TRUE(plan.workspace_zeroed);
    const int inputs = 3, calls = 5;
    std::vector<std::vector<float>> x;
    std::vector<Buffer> in, out;
    in.reserve(inputs);
    out.reserve(inputs);
    for (int i = 0; i < inputs; ++i) {
        x.push_back(random_logits(p.shape.elements(), fresh_seed()));
        in.emplace_back(c, plan.tensor_bytes, MemoryKind::device, "in");
        out.emplace_back(c, plan.tensor_bytes, MemoryKind::device, "out");
        upload(c, in.back(), x.back().data(), plan.tensor_bytes);
    }
    Buffer ws(c, plan.workspace_bytes, MemoryKind::device, "workspace");
    fill(c, ws, 0);
    c.submit_and_wait([&](VkCommandBuffer cb) {
        for (int k = 0; k < calls; ++k) {
            if (k) {
                memory_barrier(c.vk(), cb, {VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT},
                               {VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT});
            }
            record(c, plan, cb, in[k % inputs].range(0, plan.tensor_bytes), out[k % inputs].range(0, plan.tensor_bytes),
                   ws.range(0, plan.workspace_bytes));
        }
    });
    for (int i = 0; i < inputs; ++i) {
        std::vector<float> y(p.shape.elements());
        download(c, out[i], y.data(), plan.tensor_bytes);
        const std::vector<double> xd(x[i].begin(), x[i].end());
        std::vector<double> ref(y.size());
        cpu::softmax(p, xd.data(), ref.data());
        const Accuracy acc = compare(p, std::vector<double>(y.begin(), y.end()), ref);
        EXPECT_TRUE(acc.within(1e-5, 0.0)) << "input " << i << " after " << calls << " calls: " << acc.describe();
    }
    // The row counts: `chunks` per call. The last call's bank holds every
    // partial published (its flags word marked, bit 31), the other bank is
    // all zero, cleared for a sixth call.
    std::vector<uint32_t> words(plan.workspace_bytes / 4);
    download(c, ws, words.data(), plan.workspace_bytes);
    const single_pass_workspace::Layout layout(plan);
    const uint64_t chunks = layout.chunks;
    const uint64_t last_bank = (calls - 1) % 2, next_bank = calls % 2;
    for (uint64_t r = 0; r < layout.rows; ++r) {
        ASSERT_EQ(words[layout.count_word(r)], calls * chunks) << "row " << r << "'s count after " << calls << " calls";
        for (uint64_t k = 0; k < chunks; ++k) {
            const uint64_t last = layout.partial_word(last_bank, r, k);
            const uint64_t next = layout.partial_word(next_bank, r, k);
            EXPECT_NE(words[last + 2] & single_pass_workspace::kPublished, 0u)
                << "row " << r << " chunk " << k << ": flags word " << words[last + 2]
                << " of the last call not marked published";
            for (uint64_t w = 0; w < 3; ++w)
                ASSERT_EQ(words[next + w], 0u) << "row " << r << " chunk " << k << " word " << w
                                               << " of the next call's bank not cleared";
        }
    }
}

// Geometry overrides on the single-pass path: workgroups of 32 with the
// smallest chunks (the plan keeps at most 32 chunks per invocation to
// merge), and 3 slots (tiles of 3072: a chunk count that is not a power of
// two before the plan rounds it up).
TEST_F(SinglePassTest, OverriddenGeometry) {
    struct Override {
        uint32_t workgroup_size, slots;
    };
    for (Override o : {Override{32, 0}, Override{0, 3}}) {
        const Problem p = rows_of(2, 300001);
        PlanOptions opts = single_pass(1);
        opts.workgroup_size = o.workgroup_size;
        opts.slots = o.slots;
        const uint32_t seed = fresh_seed();
        Outcome out = run_and_compare(p, random_logits(p.shape.elements(), seed), opts);
        const uint32_t chunks = out.plan.push.chunks, lanes = out.plan.key[0].workgroup_size;
        EXPECT_EQ(chunks & (chunks - 1), 0u) << chunks << " chunks: not a power of two";
        EXPECT_LE(chunks, 32u * lanes) << chunks << " chunks for workgroups of " << lanes;
        EXPECT_TRUE(out.acc.within(1e-5, 0.0)) << describe(p, opts) << " (seed " << seed << ", " << chunks
                                               << " chunks of " << out.plan.push.chunk << "): " << out.acc.describe();
    }
}
