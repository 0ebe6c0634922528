#include "tensor.hpp"

#include <fmt/core.h>

#include <cstring>

#include "npy.hpp"
#include "output_file.hpp"
#include "printable.hpp"
#include "vksoftmax/accuracy.hpp"
#include "vksoftmax/cpu.hpp"

namespace vksoftmax::cli {
namespace {

template <typename T>
void convert(const std::vector<uint8_t>& in, std::vector<float>& out) {
    for (size_t i = 0; i < out.size(); ++i) {
        T v;
        std::memcpy(&v, in.data() + i * sizeof(T), sizeof(T));
        out[i] = static_cast<float>(v);
    }
}

}  // namespace

Tensor load_tensor(const std::string& path) {
    npy::Array a;
    try {
        a = npy::read(path);
    } catch (const npy::FormatError&) {
        throw;
    } catch (const std::bad_alloc&) {
        throw;  // out of host memory (exit 5), not a bad file
    } catch (const std::exception& e) {
        throw FileError(e.what());
    }
    Tensor t;
    t.dims = a.header.shape;
    t.fortran_order = a.header.fortran_order;
    const npy::Kind k = a.header.kind;
    if (k == npy::Kind::f32 || k == npy::Kind::f16 || k == npy::Kind::bf16) {
        t.dtype = k == npy::Kind::f32 ? Dtype::f32 : k == npy::Kind::f16 ? Dtype::f16 : Dtype::bf16;
        t.data = std::move(a.data);
        return t;
    }
    fmt::print(stderr, "vksoftmax: note: '{}' holds {}; converting to float32, and the output is float32\n", printable(path),
               npy::kind_descr(k));
    std::vector<float> f(a.header.elements());
    switch (k) {
        case npy::Kind::f64: convert<double>(a.data, f); break;
        case npy::Kind::i8: convert<int8_t>(a.data, f); break;
        case npy::Kind::i16: convert<int16_t>(a.data, f); break;
        case npy::Kind::i32: convert<int32_t>(a.data, f); break;
        case npy::Kind::i64: convert<int64_t>(a.data, f); break;
        case npy::Kind::u8: case npy::Kind::b1: convert<uint8_t>(a.data, f); break;
        case npy::Kind::u16: convert<uint16_t>(a.data, f); break;
        case npy::Kind::u32: convert<uint32_t>(a.data, f); break;
        case npy::Kind::u64: convert<uint64_t>(a.data, f); break;
        default: break;
    }
    t.dtype = Dtype::f32;
    t.data.resize(f.size() * sizeof(float));
    std::memcpy(t.data.data(), f.data(), t.data.size());
    return t;
}

npy::Kind npy_kind(Dtype dtype) {
    return dtype == Dtype::f32 ? npy::Kind::f32 : dtype == Dtype::f16 ? npy::Kind::f16 : npy::Kind::bf16;
}

uint64_t dim_from_end(const std::vector<uint64_t>& dims, size_t k) {
    return dims.size() >= k ? dims[dims.size() - k] : 1;
}

Shape memory_shape(const Tensor& t, int axis) {
    if (!t.fortran_order || t.dims.empty()) return shape_for_axis(t.dims, axis);
    const int rank = static_cast<int>(t.dims.size());
    const int a = axis < 0 ? axis + rank : axis;
    std::vector<uint64_t> reversed(t.dims.rbegin(), t.dims.rend());
    return shape_for_axis(reversed, rank - 1 - a);
}

std::vector<double> reference(const Tensor& t, const Problem& p, const AttentionData& attention) {
    std::vector<double> x = to_double(t.data.data(), t.data.size() / dtype_size(t.dtype), t.dtype), y(x.size());
    cpu::softmax(p, x.data(), y.data(), attention);
    round_to(p.dtype, y);  // as the GPU's result is rounded
    return y;
}

}  // namespace vksoftmax::cli
