// The vocabulary shared by the plan, the CPU reference and the CLI.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace vksoftmax {

// Storage types. Arithmetic is fp32 whatever the storage: bf16 is the top
// half of an fp32 (8 exponent bits, 8 significant bits), f16 IEEE binary16.
enum class Dtype { f32, f16, bf16 };
inline uint32_t dtype_size(Dtype d) { return d == Dtype::f32 ? 4u : 2u; }
inline const char* dtype_name(Dtype d) { return d == Dtype::f32 ? "f32" : d == Dtype::f16 ? "f16" : "bf16"; }
// A quiet NaN in the storage type as a 32-bit vkCmdFillBuffer word:
// 0x7fc00000 (f32), 0x7e00 twice (f16), 0x7fc0 twice (bf16). Outputs are
// poisoned with it so that an element a shader never wrote cannot pass for
// a result.
inline uint32_t nan_fill_word(Dtype d) {
    return d == Dtype::f32 ? 0x7fc00000u : d == Dtype::f16 ? 0x7e007e00u : 0x7fc07fc0u;
}

// exp as the driver provides it, or our own range-reduced polynomial that
// agrees across vendors to a few ULP.
enum class Precision { fast, accurate };

// A dense row-major tensor seen as (outer, axis, inner): softmax runs along
// `axis`; neighbours on it are `inner` elements apart.
struct Shape {
    uint64_t outer = 1, axis = 1, inner = 1;
    uint64_t rows() const { return outer * inner; }
    uint64_t elements() const { return outer * axis * inner; }
    // Index of row r's first element; its elements are `inner` apart.
    uint64_t row_start(uint64_t r) const { return r / inner * axis * inner + r % inner; }
};

// The (outer, axis, inner) view of `dims` for softmax along `axis`, which
// may be negative as in NumPy. Throws Error(invalid_argument) when out of range.
Shape shape_for_axis(const std::vector<uint64_t>& dims, int axis);

// The options of attention and LLM engines (engine/include/vksoftmax/
// attention.hpp has their rules). They see the tensor as (batch, heads,
// query_rows, axis), softmax along the last axis (inner 1), and turn the
// elements of row (b, h, q) into logits
//   z_j = multiplier * x_j + slope_h * mask[b % mask_batch, h % mask_heads, q % mask_rows, j]
// (z_j = -inf where the causal mask hides column j), with a per-head sink
// logit in the normaliser and, optionally, each row's log-sum-exp out.
struct Attention {
    uint64_t heads = 1;
    uint64_t query_rows = 0;  // rows per head; 0: every row of the tensor's heads (batch 1)
    // An additive mask of (mask_batch, mask_heads, mask_rows, axis), each
    // dimension dividing the tensor's (1 broadcasts; so does any divisor,
    // as ggml allows for heads); mask_rows 0: query_rows. -inf hides.
    bool mask = false;
    Dtype mask_dtype = Dtype::f32;
    uint64_t mask_batch = 1, mask_heads = 1, mask_rows = 0;
    // Column j of query row q is hidden where j > q + causal_offset (the
    // offset: key positions already cached). No buffer.
    bool causal = false;
    int64_t causal_offset = 0;
    // ALiBi: the mask scaled by each head's slope, as ggml's soft_max_ext
    // (0: slope 1). Needs a mask.
    double alibi_max_bias = 0.0;
    // One fp32 logit per head that joins the normaliser and yields no output.
    bool sinks = false;
    // Each row's log-sum-exp of its logits (with the sink), fp32, one per row.
    bool lse = false;
    // Whether any option is on (else the plain modules run).
    bool any() const { return mask || causal || sinks || lse; }
};

struct Problem {
    Shape shape;
    Dtype dtype = Dtype::f32;
    bool log = false;            // log-softmax
    double temperature = 1.0;    // softmax(x / T): T > 0 and finite
    // softmax(scale * x): scale > 0 and finite (attention's 1/sqrt(d)). The
    // same multiplier as 1 / temperature: set one of them; a problem that
    // sets both (neither 1) must have scale = 1 / temperature.
    double scale = 1.0;
    Precision precision = Precision::fast;
    Attention attention;
    // The backward pass of this softmax (or log-softmax): from the forward
    // output y and its gradient dy, the gradient of the logits x,
    //   softmax:     dx = k * y * (dy - sum_j y_j dy_j)
    //   log-softmax: dx = k * (dy - exp(y) * sum_j dy_j)
    // with k the multiplier above (ggml's soft_max_back, PyTorch's
    // _softmax_backward_data). The mask, causal mask and ALiBi act through
    // y (a hidden element's y is 0, and so is its dx): a backward problem
    // sets none of them, nor lse. It may set attention.sinks (with heads
    // and query_rows as the forward's): the forward had sinks, dx is the
    // same formula, and each row's share of the sink logit's gradient,
    //   softmax: -p * sum_j y_j dy_j,   log-softmax: -p * sum_j dy_j,
    // p = 1 - sum_j y_j (log-softmax: 1 - sum_j exp(y_j)) the sink's
    // probability, is written too (fp32, one per row); head h's gradient
    // is the sum over its rows. p is taken from y, so its error is the
    // sum's over the stored y: absolute, not relative to p.
    bool backward = false;
};

// The multiplier of the logits: scale, or 1 / temperature. Error
// (invalid_argument) for a scale or temperature that is not positive and
// finite, or for both set and disagreeing.
double logit_multiplier(const Problem& p);

std::string to_string(const Shape& s);

}  // namespace vksoftmax
