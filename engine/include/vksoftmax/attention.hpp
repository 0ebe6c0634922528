// The attention options' rules (Attention in types.hpp): the tensor's
// (batch, heads, query_rows, axis) view, the mask's broadcast, ALiBi's
// slopes, and the sizes of the buffers the options read and write.
#pragma once
#include <cstdint>

#include "vksoftmax/types.hpp"

namespace vksoftmax {

// A problem's attention options resolved against its shape.
struct AttentionLayout {
    uint64_t batch = 1, heads = 1, query_rows = 1;
    uint64_t mask_batch = 1, mask_heads = 1, mask_rows = 1;
    uint64_t mask_elements = 0;  // 0 without a mask
    uint64_t sinks = 0;          // sink logits (fp32) to read: heads, or 0
    uint64_t lse = 0;            // log-sum-exp values (fp32) to write: rows, or 0
    // The mask row that row r reads (b % mask_batch, h % mask_heads, q % mask_rows).
    uint64_t mask_row(uint64_t r) const;
    uint64_t head(uint64_t r) const { return r / query_rows % heads; }
    uint64_t query(uint64_t r) const { return r % query_rows; }
};

// Error(invalid_argument), naming the field and value, for options that do
// not fit the shape: a tensor not softmaxed along its last axis, heads or
// query rows that do not divide the rows, mask dimensions that do not
// divide the tensor's, ALiBi without a mask, a negative or non-finite
// max_bias, a mask dtype other than f32 or f16.
AttentionLayout attention_layout(const Problem& problem);

// The attention options' buffers in host memory (run(), the CPU
// reference); each is needed only where its option is on.
struct AttentionData {
    const void* mask = nullptr;    // attention_layout().mask_elements of mask_dtype (fp16 as bits)
    const float* sinks = nullptr;  // one per head
    float* lse = nullptr;          // out: one per row
};

// Error(invalid_argument), naming it, for the memory of an option that is
// on but missing from `data`.
void check_attention_data(const Attention& attention, const AttentionData& data);

// ALiBi's slope of head h of `heads`, as ggml defines it: with
// n = 2^floor(log2(heads)), m0 = 2^(-max_bias / n), m1 = 2^(-max_bias / 2 / n),
// slope = m0^(h + 1) for h < n, else m1^(2 (h - n) + 1); 1 when max_bias is 0.
double alibi_slope(uint64_t h, uint64_t heads, double max_bias);
// The largest power of two at most `heads` (ALiBi's n).
uint64_t alibi_heads_log2(uint64_t heads);

// The bytes a mask of `elements` of `dtype` needs in its buffer: its
// elements, and for a 16-bit mask of an odd count 2 more. The shaders read
// a 16-bit mask two elements to a 32-bit word, and a word past the end of
// a binding reads as 0 (or anything) rather than as its first half: with
// the mask's bytes alone, the last element of an odd (255, 255) fp16 mask
// was read as 0 on lavapipe. Those 2 bytes are never used as a value.
uint64_t mask_buffer_bytes(uint64_t elements, Dtype dtype);

}  // namespace vksoftmax
