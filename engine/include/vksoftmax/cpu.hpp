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
void softmax(const Problem& problem, const uint16_t* in_f16, uint16_t* out_f16, const AttentionData& attention = {});

}  // namespace vksoftmax::cpu
