// The vocabulary shared by the plan, the CPU reference and the CLI.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace vksoftmax {

enum class Dtype { f32, f16 };
inline uint32_t dtype_size(Dtype d) { return d == Dtype::f32 ? 4u : 2u; }
inline const char* dtype_name(Dtype d) { return d == Dtype::f32 ? "f32" : "f16"; }
// A quiet NaN in the storage type as a 32-bit vkCmdFillBuffer word:
// 0x7fc00000 (f32), 0x7e00 twice (f16). Outputs are poisoned with it so
// that an element a shader never wrote cannot pass for a result.
inline uint32_t nan_fill_word(Dtype d) { return d == Dtype::f32 ? 0x7fc00000u : 0x7e007e00u; }

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
};

// The multiplier of the logits: scale, or 1 / temperature. Error
// (invalid_argument) for a scale or temperature that is not positive and
// finite, or for both set and disagreeing.
double logit_multiplier(const Problem& p);

std::string to_string(const Shape& s);

}  // namespace vksoftmax
