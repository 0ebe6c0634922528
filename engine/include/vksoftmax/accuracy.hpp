// How far a computed softmax is from a reference: the figures that --check,
// the demo and the tests report.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "vksoftmax/types.hpp"

namespace vksoftmax {

struct Accuracy {
    double max_abs = 0;        // max |got - ref| over finite references
    double max_rel = 0;        // max relative_error(): |got - ref| / max(|ref|, floor), scaled
    double max_row_sum_error = 0;  // softmax: max over rows of |sum - 1| (rows with a finite result)
    uint64_t nonfinite_mismatches = 0;  // NaN/inf where the reference has none, or the reverse
    uint64_t worst_index = 0;  // element of max_rel
    double worst_got = 0, worst_ref = 0;
    bool within(double rel_tol, double abs_tol) const;
    std::string describe() const;
};

// The bound an output is held to (tests/TOLERANCES.md): relative `rel`,
// judged against max(|ref|, floor). fp32: 1e-5 (accurate exp: 4e-6), floor
// 1e-30; fp16: 2e-3, floor 2^-14 (its smallest normal); bf16: 1.6e-2 (two
// of its ULPs where they are widest, 2^-7 of the value), floor 1e-30 (its
// exponent is fp32's); log-softmax: floor 1.
struct Bound {
    double rel, floor;
};
Bound accuracy_bound(Dtype dtype, bool log, Precision precision = Precision::fast);

// The relative error of one finite output: |got - ref| / max(|ref|, floor),
// in units of the bound at that output. Softmax outputs far below their
// row's largest (`row_largest`) come from exp(t) with t = ln(ref /
// row_largest) < -30, where the driver's exp may be off by 3 + 2|t| ULP
// and the argument's rounding grows with |t| too: their error is divided by
// |t| / 30, so that accuracy_bound()'s rel, derived for |t| <= 30, holds
// them to rel * |t| / 30 (tests/TOLERANCES.md). Log-softmax outputs take no
// exp of t and are not scaled; nor are any where row_largest is not positive.
double relative_error(bool log, double got, double ref, double row_largest, double floor);
// The largest finite value of the row of `shape` that starts at `base`;
// 0 where none is larger.
double row_largest(const Shape& shape, const std::vector<double>& values, uint64_t base);

// `n` elements of `dtype` (fp16 and bf16 as their 16 bits) as doubles.
std::vector<double> to_double(const void* data, size_t n, Dtype dtype);
// The reverse: `values` in `dtype` as stored (rounded through fp32), the
// bytes an input buffer or .npy file of that type holds.
std::vector<uint8_t> to_storage(const std::vector<double>& values, Dtype dtype);
// Rounds each value to `dtype` and back, as the GPU's output is rounded.
void round_to(Dtype dtype, std::vector<double>& values);

// Compares `got` with `ref` (both dense, problem.shape). Relative errors
// are relative_error()'s, taken against max(|ref|, floor) with the floor of
// accuracy_bound(), so that outputs which underflow do not dominate max_rel.
Accuracy compare(const Problem& problem, const std::vector<double>& got, const std::vector<double>& ref);

// The backward pass's dx against its reference, from the same y and dy.
// dx = k y (dy - S) loses the digits that dy - S cancels, so each error is
// taken relative to the size of what was added up rather than to dx:
//   softmax:     |dx_j| + k |y_j| (|dy_j| + sum_i |y_i dy_i|)
//   log-softmax: |dx_j| + k (|dy_j| + exp(y_j) sum_i |dy_i|)
// or accuracy_bound()'s softmax floor where that is larger (subnormals:
// a GPU may flush them), to be held to accuracy_bound()'s rel
// (tests/TOLERANCES.md).
// max_row_sum_error is unused.
Accuracy compare_backward(const Problem& problem, const std::vector<double>& y, const std::vector<double>& dy,
                          const std::vector<double>& got, const std::vector<double>& ref);

// The rows' sink gradients of a backward problem whose forward had sinks
// (Problem::backward), against their reference, from the same y and dy:
// -p S loses what 1 - sum y cancels, so each error is taken relative to
// |ref| + sum_i |y_i dy_i| (log-softmax: sum_i |dy_i|), or the softmax
// floor where that is larger, to be held to accuracy_bound()'s rel.
Accuracy compare_sink_gradient(const Problem& problem, const std::vector<double>& y, const std::vector<double>& dy,
                               const std::vector<double>& got, const std::vector<double>& ref);

// The inputs of a backward problem as the GPU and the reference both see
// them: y the float64 forward (softmax, or log-softmax where problem.log)
// of `logits` (problem.shape, dense), dy normal(0, 1) drawn from `seed`,
// both rounded to the problem's storage type, so that to_storage() holds
// them exactly.
struct BackwardInputs {
    std::vector<double> y, dy;
};
// `sinks`: the forward's sink logits (one per head), where
// problem.attention.sinks.
BackwardInputs backward_inputs(const Problem& problem, const std::vector<double>& logits, uint32_t seed,
                               const float* sinks = nullptr);

}  // namespace vksoftmax
