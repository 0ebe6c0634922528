#include "vksoftmax/attention.hpp"

#include <cmath>
#include <string>

#include "vksoftmax/error.hpp"

namespace vksoftmax {
namespace {

[[noreturn]] void refuse(const std::string& what) { throw Error(ErrorKind::invalid_argument, what); }

// `dim` of the mask must divide the tensor's `of` (1 broadcasts).
void check_divides(const char* field, uint64_t dim, const char* tensor_field, uint64_t of) {
    if (dim == 0 || of % dim != 0)
        refuse(std::string("attention ") + field + " " + std::to_string(dim) + " does not divide the tensor's " +
               tensor_field + " " + std::to_string(of));
}

}  // namespace

uint64_t AttentionLayout::mask_row(uint64_t r) const {
    const uint64_t q = r % query_rows, hb = r / query_rows;
    const uint64_t h = hb % heads, b = hb / heads;
    return ((b % mask_batch) * mask_heads + h % mask_heads) * mask_rows + q % mask_rows;
}

AttentionLayout attention_layout(const Problem& problem) {
    const Attention& a = problem.attention;
    const Shape& s = problem.shape;
    AttentionLayout l;
    l.query_rows = s.rows() ? s.rows() : 1;
    if (!a.any() && a.heads == 1 && a.query_rows == 0) return l;
    if (s.inner != 1)
        refuse("the attention options need softmax along the last axis (inner " + std::to_string(s.inner) + ")");
    const uint64_t rows = s.rows();
    if (a.heads == 0) refuse("attention heads must be at least 1");
    l.heads = a.heads;
    l.query_rows = a.query_rows ? a.query_rows : rows / a.heads;
    if (l.query_rows == 0 || rows % (l.heads * l.query_rows) != 0)
        refuse("attention heads " + std::to_string(a.heads) + " x query rows " + std::to_string(a.query_rows) +
               " do not divide the tensor's " + std::to_string(rows) + " rows");
    l.batch = rows / (l.heads * l.query_rows);
    if (a.mask) {
        if (a.mask_dtype != Dtype::f32 && a.mask_dtype != Dtype::f16 && a.mask_dtype != Dtype::bf16)
            refuse("attention mask dtype " + std::to_string(static_cast<int>(a.mask_dtype)) + " is not f32, f16 or bf16");
        l.mask_batch = a.mask_batch;
        l.mask_heads = a.mask_heads;
        l.mask_rows = a.mask_rows ? a.mask_rows : l.query_rows;
        check_divides("mask_batch", l.mask_batch, "batch", l.batch);
        check_divides("mask_heads", l.mask_heads, "heads", l.heads);
        check_divides("mask_rows", l.mask_rows, "query rows", l.query_rows);
        l.mask_elements = l.mask_batch * l.mask_heads * l.mask_rows * s.axis;
    }
    if (!(a.alibi_max_bias >= 0.0) || !std::isfinite(a.alibi_max_bias))
        refuse("attention alibi_max_bias must be >= 0 and finite, got " + std::to_string(a.alibi_max_bias));
    if (a.alibi_max_bias > 0.0 && !a.mask) refuse("ALiBi scales the mask: give a mask with alibi_max_bias");
    l.sinks = a.sinks ? l.heads : 0;
    l.lse = a.lse ? rows : 0;
    return l;
}

void check_attention_data(const Attention& a, const AttentionData& d) {
    if (a.mask && !d.mask) refuse("the attention mask is on but AttentionData::mask is null");
    if (a.sinks && !d.sinks) refuse("the attention sinks are on but AttentionData::sinks is null");
    if (a.lse && !d.lse) refuse("the log-sum-exp is on but AttentionData::lse is null");
}

uint64_t alibi_heads_log2(uint64_t heads) {
    uint64_t n = 1;
    while (n * 2 <= heads) n *= 2;
    return n;
}

double alibi_slope(uint64_t h, uint64_t heads, double max_bias) {
    if (max_bias <= 0.0) return 1.0;
    const double n = static_cast<double>(alibi_heads_log2(heads));
    const double m0 = std::pow(2.0, -max_bias / n), m1 = std::pow(2.0, -max_bias / 2.0 / n);
    return h < alibi_heads_log2(heads) ? std::pow(m0, static_cast<double>(h + 1))
                                       : std::pow(m1, static_cast<double>(2 * (h - alibi_heads_log2(heads)) + 1));
}

uint64_t mask_buffer_bytes(uint64_t elements, Dtype dtype) {
    const uint64_t bytes = elements * dtype_size(dtype);
    return (bytes + 3) / 4 * 4;
}

}  // namespace vksoftmax
