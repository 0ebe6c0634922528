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

// The accuracy the core issue promises: fp32 1e-5 relative, fp16 2e-3.
// `floor` turns the relative bound into an absolute one for outputs below
// it (fp32 softmax: underflow; fp16: below its normal range; log-softmax:
// values near 0, where the absolute error of log(d) dominates).
struct Bound {
    double rel, floor;
};
inline Bound bound_for(Dtype dtype, bool log) {
    if (dtype == Dtype::f32) return log ? Bound{1e-5, 1.0} : Bound{1e-5, 1e-30};
    return log ? Bound{2e-3, 1.0} : Bound{2e-3, 6.103515625e-05};
}

class Gpu : public ::testing::Test {
public:
    static void SetUpTestSuite();
    static void TearDownTestSuite() { ctx_.reset(); }
    static Context& ctx() { return *ctx_; }

protected:
    // Any validation-layer message during a test fails it.
    void TearDown() override;

private:
    static std::unique_ptr<Context> ctx_;
    uint64_t errors_before_ = 0;
    void SetUp() override { errors_before_ = ctx_->validation_errors(); }
};

// Logits of the usual scale: normal(0, 4), from a fresh seed.
std::vector<float> random_logits(size_t n, uint32_t seed);
uint32_t fresh_seed();

struct Outcome {
    Plan plan;
    std::vector<double> got, ref;  // GPU output and float64 reference
    Accuracy acc;
};

// Runs `p` on the GPU with `x` (fp32 values; rounded to fp16 for fp16
// problems, and the reference sees the rounded values) and compares with
// the CPU reference.
Outcome run_and_compare(const Problem& p, const std::vector<float>& x, const PlanOptions& opts = {});

std::string describe(const Problem& p, const PlanOptions& opts);

}  // namespace vkstest
