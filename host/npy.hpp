// NumPy .npy files (format versions 1.0, 2.0 and 3.0): header parsing and
// writing. Standard library only, so that the fuzz target builds it alone.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace vksoftmax::npy {

// What is wrong with a file, with the field and value: "header: 'shape'
// (3, x) is not a tuple of integers".
struct FormatError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// bf16: bfloat16, which NumPy has no code for: ml_dtypes' bfloat16 arrays
// are saved as two-byte void ('<V2'), and read as bf16 here; a 'descr' of
// 'bfloat16' is taken too.
enum class Kind { f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64, b1, bf16 };
const char* kind_descr(Kind k);  // "<f4", ...
uint32_t kind_size(Kind k);

struct Header {
    Kind kind = Kind::f32;
    bool fortran_order = false;
    std::vector<uint64_t> shape;
    uint64_t data_offset = 0;  // bytes before the data
    uint64_t elements() const;
};

// Parses the header at the start of `bytes` (at least the whole header;
// more is fine). Rejects big-endian and unknown dtypes, malformed or lying
// dictionaries, and shapes whose byte count overflows 64 bits.
Header parse_header(const uint8_t* bytes, size_t size);

struct Array {
    Header header;
    std::vector<uint8_t> data;  // exactly elements() * kind_size bytes
};

// Reads a whole file; FormatError when the data do not match the header
// (too short, or extra bytes), std::runtime_error when it cannot be read.
Array read(const std::string& path);

// Python's repr of a shape tuple, as headers hold it: (), (3,), (2, 3).
std::string shape_repr(const std::vector<uint64_t>& shape);

// The bytes of a version 1.0 file (2.0 when the header needs it).
std::vector<uint8_t> encode(Kind kind, const std::vector<uint64_t>& shape, bool fortran_order, const void* data,
                            size_t bytes);

}  // namespace vksoftmax::npy
