// The conformance catalogue: the same answers on every Vulkan
// implementation, every path, reduction, precision and subgroup size.
// Bounds and their derivation: tests/TOLERANCES.md.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "vksoftmax/plan.hpp"
#include "vksoftmax/types.hpp"

namespace vksoftmax {
class Context;
}

namespace vksoftmax::conformance {

struct Options {
    bool quick = false;      // fewer lengths: for CI on a CPU driver
    // Run only cases/variants whose "case variant" text holds every term:
    // contains it, or with a leading '^' begins with the rest; a leading
    // '!' turns the rest into a term the text must not hold.
    std::vector<std::string> filters;
    // Whether the catalogue checks the single-pass path too (where the
    // device has what it needs); off after the stress case hung.
    bool single_pass = true;
    // The per-driver shader-form rules every variant plans with
    // (PlanOptions::rules).
    DriverRules rules;
    // The inputs' seed: every check of a run draws its inputs from a
    // generator seeded with it (the variants of a case see the same
    // inputs), plus the repetition's number. 0: one drawn at random.
    // Result::seed with the same filters reproduces a check.
    uint32_t seed = 0;
    // Each selected check this many times, on fresh inputs (seed + 1, ...):
    // failures that depend on the data show at their rate.
    uint32_t repeats = 1;
    // Keep a failing check's tensors in its Result (Result::evidence).
    bool keep_failures = false;
};

// A failing check's tensors, in float64 of the values stored: the inputs
// as the GPU saw them, its outputs and the float64 reference's (rounded to
// the storage type). Backward checks: `inputs` is y, `gradient` dy and the
// outputs dx.
struct Evidence {
    Shape shape;
    Dtype dtype = Dtype::f32;
    std::vector<double> inputs, gradient, outputs, reference;
    // The attention mask, where the case has one: (mask_rows, axis) values
    // as stored in mask_dtype.
    std::vector<double> mask;
    Dtype mask_dtype = Dtype::f32;
    uint64_t mask_rows = 0;
};

struct Result {
    std::string case_name;   // e.g. "f32 softmax 7x1000 T=1"
    std::string variant;     // e.g. "workgroup-row/shared/fast"
    uint32_t subgroup_size = 0;  // required size, or the device's default
    double max_ulp = 0;      // in ULPs of the output type, over outputs >= the floor
    double max_rel = 0;      // relative_error(): |got - ref| / max(|ref|, floor), scaled past |t| = 30
    double rel_bound = 0;
    double worst_row_sum = 0;  // max |sum - 1| (of exp(out) for log-softmax) over finite rows
    bool nan_pattern_ok = true;  // NaN, +-inf and exact 0 where the reference has them
    bool pass = false;
    std::string note;        // why it failed, or why it was skipped
    bool skipped = false;
    uint32_t seed = 0;       // the inputs' (Options::seed)
    // The tensors of a failing check, with Options::keep_failures.
    std::shared_ptr<const Evidence> evidence;
};

// Runs the catalogue on `ctx`'s device; `progress` (optional) sees each result.
std::vector<Result> run(Context& ctx, const Options& options,
                        const std::function<void(const Result&)>& progress = {});

// The single-pass stress case: far more workgroups than a device holds at
// once (256 rows of 65537 in chunks of one tile: tens of thousands of
// workgroups; 32 rows on a CPU device), spike rows whose max moves through every chunk, with the
// plan's patience and with patience 1 (partials computed by the waiting
// workgroup itself), softmax and its backward pass. It runs in the caller's process and needs a driver
// that keeps dispatching workgroups while others wait: run it under a
// watchdog (`vksoftmax conformance` runs it in a child process it kills
// after a timeout). Empty where the device cannot take the path. Of
// `options` it takes the rules, the seed and keep_failures (once each).
std::vector<Result> stress_single_pass(Context& ctx, const Options& options = {});

}  // namespace vksoftmax::conformance
