#include "attention_args.hpp"

#include <fmt/core.h>

#include <cstring>

#include "npy.hpp"
#include "output_file.hpp"
#include "printable.hpp"
#include "vksoftmax/attention.hpp"
#include "vksoftmax/error.hpp"
#include "vksoftmax/half.hpp"

namespace vksoftmax::cli {
namespace {

// The mask file: float32, float16 or bfloat16 (other types converted to float32),
// at most 4-D, its last dimension the input's n.
void read_mask(const std::string& path, uint64_t n, AttentionInputs& in) {
    in.mask = load_tensor(path);
    const std::vector<uint64_t>& d = in.mask.dims;
    if (in.mask.fortran_order)
        throw FileError(fmt::format("'{}': the mask must be in C order (fortran_order is True)", printable(path)));
    if (d.empty() || d.size() > 4 || d.back() != n)
        throw FileError(fmt::format("'{}': mask shape {} must be (mask_batch, mask_heads, mask_rows, {}), leading "
                                    "dimensions of 1 left out",
                                    printable(path), npy::shape_repr(d), n));
    Attention& a = in.attention;
    a.mask = true;
    a.mask_dtype = in.mask.dtype;
    a.mask_rows = dim_from_end(d, 2);
    a.mask_heads = dim_from_end(d, 3);
    a.mask_batch = dim_from_end(d, 4);
}

// The sinks file: one value per head, converted to float32.
void read_sinks(const std::string& path, uint64_t heads, AttentionInputs& in) {
    const Tensor s = load_tensor(path);
    uint64_t count = 1;
    for (uint64_t v : s.dims) count *= v;
    if (count != heads)
        throw FileError(fmt::format("'{}': {} sinks, the input has {} heads (one sink per head)", printable(path), count,
                                    heads));
    in.sinks.resize(count);
    for (uint64_t i = 0; i < count; ++i) {
        if (s.dtype == Dtype::f32) {
            std::memcpy(&in.sinks[i], s.data.data() + 4 * i, 4);
        } else {
            uint16_t h;
            std::memcpy(&h, s.data.data() + 2 * i, 2);
            in.sinks[i] = from_16bit(s.dtype, h);
        }
    }
    in.attention.sinks = true;
}

// The attention options' problem errors name the file where they are the file's.
void check_layout(const AttentionArgs& args, const Problem& p) {
    try {
        attention_layout(p);
    } catch (const Error& e) {
        if (!args.mask.empty() && std::string(e.what()).find("mask_") != std::string::npos)
            throw FileError(fmt::format("'{}': {}", printable(args.mask), e.what()));
        throw;
    }
}

}  // namespace

AttentionData AttentionInputs::data() {
    AttentionData d;
    if (attention.mask) d.mask = mask.data.data();
    if (attention.sinks) d.sinks = sinks.data();
    if (attention.lse) d.lse = lse.data();
    return d;
}

AttentionInputs read_attention(const AttentionArgs& args, const Tensor& t, int axis) {
    AttentionInputs in;
    if (!args.any()) return in;
    const int rank = static_cast<int>(t.dims.size());
    if (rank == 0 || (axis != -1 && axis != rank - 1) || t.fortran_order)
        throw Error(ErrorKind::invalid_argument,
                    "--mask, --causal, --alibi, --heads, --sinks and --lse need softmax along the last axis of a "
                    "C-order tensor");
    Attention& a = in.attention;
    const uint64_t n = t.dims.back();
    a.query_rows = dim_from_end(t.dims, 2);
    a.heads = args.heads ? args.heads : dim_from_end(t.dims, 3);
    if (!args.mask.empty()) read_mask(args.mask, n, in);
    if (args.causal) {
        a.causal = true;
        a.causal_offset = *args.causal;
    }
    a.alibi_max_bias = args.alibi;
    if (!args.sinks.empty()) read_sinks(args.sinks, a.heads, in);
    Problem p;
    p.shape = memory_shape(t, -1);  // rows x n
    if (!args.lse.empty()) {
        a.lse = true;
        in.lse_dims.assign(t.dims.begin(), t.dims.end() - 1);
        in.lse.assign(p.shape.rows(), 0.0f);
    }
    p.attention = a;
    check_layout(args, p);
    return in;
}

}  // namespace vksoftmax::cli
