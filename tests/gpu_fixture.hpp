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
