// The CPU reference: the same operation with every option, accumulated in
// double, with the same non-finite semantics as the GPU (SciPy's), applied
// to the logits (after scale, mask and causal mask):
//   a NaN or +inf in a row -> the whole row is NaN; a row of only -inf -> NaN
//   (with a finite sink instead: every output 0, the log-sum-exp the sink);
//   a -inf element beside a finite max -> exactly 0 (-inf for log-softmax).
#pragma once
#include <cstdint>

#include "vksoftmax/attention.hpp"
#include "vksoftmax/types.hpp"

namespace vksoftmax::cpu {

// In and out are dense row-major tensors of problem.shape; out may alias in.
void softmax(const Problem& problem, const double* in, double* out, const AttentionData& attention = {});
void softmax(const Problem& problem, const float* in, float* out, const AttentionData& attention = {});
// 16-bit storage: problem.dtype says which (f16 or bf16).
void softmax(const Problem& problem, const uint16_t* in, uint16_t* out, const AttentionData& attention = {});

// The backward pass (Problem::backward's formulas): dx from the forward
// output y and its gradient dy, dense tensors of problem.shape; dx may
// alias either. A row's dx is NaN where y or dy holds a NaN or +-inf
// (log-softmax: y a NaN or +inf, dy a non-finite value) or its sum is not
// finite; a log-softmax y of -inf gives exactly k * dy. Where the forward
// had sinks (problem.attention.sinks), each row's sink gradient goes to
// `sink_gradient` (one per row; required then; NaN where dx is).
void softmax_backward(const Problem& problem, const double* y, const double* dy, double* dx,
                      double* sink_gradient = nullptr);
void softmax_backward(const Problem& problem, const float* y, const float* dy, float* dx,
                      double* sink_gradient = nullptr);
void softmax_backward(const Problem& problem, const uint16_t* y, const uint16_t* dy, uint16_t* dx,
                      double* sink_gradient = nullptr);

}  // namespace vksoftmax::cpu
