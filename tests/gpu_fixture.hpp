// Shared helpers of the GPU tests: one validated Context per test program,
// fresh random inputs, a GPU run compared with the float64 CPU reference.
#pragma once
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "vksoftmax/vksoftmax.hpp"

namespace vkstest {

using namespace vksoftmax;

class Gpu : public ::testing::Test {
public:
    static void SetUpTestSuite();
    static void TearDownTestSuite() { ctx_.reset(); }
    static Context& ctx() { return *ctx_; }

protected:
    void SetUp() override { errors_before_ = ctx_->validation_errors(); }
    // Any validation-layer message during a test fails it.
    void TearDown() override;

private:
    static std::unique_ptr<Context> ctx_;
    uint64_t errors_before_ = 0;
};

// Logits of the usual scale: normal(0, 4), from a fresh seed.
std::vector<float> random_logits(size_t n, uint32_t seed);
uint32_t fresh_seed();

// Rows of `cols` (at least 7 of them) for tests of rows not a multiple of
// 4 long: random logits, with the non-finite elements at the rows' ends,
// which lie in vectors shared with the neighbours (kOddEnds says where).
extern const char* const kOddEnds;
std::vector<float> rows_with_non_finite_ends(const Problem& p, uint64_t cols);

struct Outcome {
    Plan plan;
    std::vector<double> got, ref;  // GPU output and float64 reference, rounded to the output's type
    std::vector<double> exact;     // the float64 reference before that rounding
    Accuracy acc;
};

// Runs `p` on the GPU with `x` (fp32 values; rounded to fp16 for fp16
// problems, and the reference sees the rounded values) and compares with
// the CPU reference.
// With attention options, `gpu` and `ref` hold their buffers (the same
// mask and sinks; each its own log-sum-exp).
Outcome run_and_compare(const Problem& p, const std::vector<float>& x, const PlanOptions& opts = {},
                        const AttentionData& gpu = {}, const AttentionData& ref = {});

std::string describe(const Problem& p, const PlanOptions& opts);
// What a plan took: its path, workgroup x slots, access width and, on a
// chunked path, its chunk ("single-pass, 256 x 8, vec 8, chunks of 8192").
std::string describe_geometry(const Plan& plan);

// Eight rows of `cols` whose maxima only a signed order of integer keys
// that order as the floats do (SubgroupMax::integer_keys) tells apart. Row
// 0 all negative (the keys' magnitudes flipped); row 1 positive from
// element `late` on only and 60 lower before it (a max taken as if
// unsigned picks a negative one, and the positive part's exps overflow to
// NaN); row 2 +-the largest finite value of `dtype`; row 3 -inf but for
// one finite element at cols - 3 (the sentinel -FLT_MAX must lose); row 4
// a NaN with its sign set at `nan_at[0]` and row 5 one with it clear at
// `nan_at[1]` (each makes its row NaN, whichever way the keys order it);
// row 6 +-0 and subnormals; row 7 random.
struct KeyEdgeRows {
    uint64_t cols = 0, late = 0, nan_at[2] = {0, 0};
};
std::vector<float> integer_key_edge_rows(const KeyEdgeRows& rows, Dtype dtype, uint32_t seed);
// What those rows must give besides the reference's bound: no non-finite
// mismatch, rows 4 and 5 NaN throughout, and row 3's finite element 1
// (0 for log-softmax). `what` names the case in each failure.
void expect_integer_key_edge_outputs(const Outcome& o, const KeyEdgeRows& rows, const Problem& p, const std::string& what);

// Whether a sweep runs every combination of its axes. On a GPU it does: a
// pipeline variant compiles there in milliseconds. On a CPU driver
// (lavapipe) the LLVM compile of each new variant at its first dispatch is
// nearly the whole cost of a case (0.1 s at 1 slot to 1.7 s at 16, cold
// cache), so there a sweep runs one combination per shader variant, and
// which one rotates with the subgroup size (the suite runs at 4, 8 and 16).
// The device gate runs them all. VKSOFTMAX_FULL_SWEEPS=1 (or 0) overrides.
bool full_sweeps();
// Whether choice `choice` of `choices` runs for the variant numbered
// `variant`: every choice in a full sweep; else only the one that
// (variant + log2 of the subgroup size) % choices names.
bool sweep_runs(uint32_t variant, uint32_t choice, uint32_t choices);

// Whether the device has the single-pass path at all (when allowed).
bool has_single_pass(const DeviceInfo& d);
// The single-pass path forced: chunks of `chunk` elements (0: the plan's;
// rounded up to whole tiles), the reduction, and `patience` polling rounds
// before a workgroup computes missing partials itself (0: the plan's).
PlanOptions single_pass(uint32_t chunk, Reduction reduction = Reduction::automatic, uint32_t patience = 0);

}  // namespace vkstest
