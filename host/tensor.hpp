// A tensor read from a .npy file, as the engine takes it: float32 or
// float16 bytes in file order, with the shape and memory order of the file.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "npy.hpp"
#include "vksoftmax/cpu.hpp"
#include "vksoftmax/types.hpp"

namespace vksoftmax::cli {

struct Tensor {
    std::vector<uint64_t> dims;
    bool fortran_order = false;
    Dtype dtype = Dtype::f32;
    std::vector<uint8_t> data;
};

// Reads a .npy file. float64, integer and bool arrays are converted to
// float32, with a note on stderr. Throws npy::FormatError or FileError.
Tensor load_tensor(const std::string& path);

// The .npy element kind a tensor of `dtype` is written as (bf16: '<V2').
npy::Kind npy_kind(Dtype dtype);

// Dimension k from the end of `dims` (1 past its rank): an attention
// tensor's query rows (k = 2) and heads (k = 3).
uint64_t dim_from_end(const std::vector<uint64_t>& dims, size_t k);

// The (outer, axis, inner) view of the data in memory for softmax along
// `axis` of the array's logical shape. A Fortran-order (a, b, c) array is
// a C-order (c, b, a) one, so its axis k is memory axis rank - 1 - k.
Shape memory_shape(const Tensor& t, int axis);

// The float64 CPU reference of `p` on the tensor's values (with the
// attention options' buffers in `attention`).
std::vector<double> reference(const Tensor& t, const Problem& p, const AttentionData& attention = {});

}  // namespace vksoftmax::cli
