#include "vksoftmax/types.hpp"

#include <cmath>

#include "vksoftmax/error.hpp"

namespace vksoftmax {

Shape shape_for_axis(const std::vector<uint64_t>& dims, int axis) {
    const int rank = static_cast<int>(dims.size());
    if (rank == 0) {
        if (axis == 0 || axis == -1) return Shape{1, 1, 1};  // a scalar is one row of one
        throw Error(ErrorKind::invalid_argument, "axis " + std::to_string(axis) + " is out of range for a 0-d tensor");
    }
    const int a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank)
        throw Error(ErrorKind::invalid_argument, "axis " + std::to_string(axis) + " is out of range for a tensor of rank " +
                                                     std::to_string(rank));
    Shape s;
    s.outer = 1;
    s.inner = 1;
    for (int i = 0; i < a; ++i) s.outer *= dims[i];
    s.axis = dims[a];
    for (int i = a + 1; i < rank; ++i) s.inner *= dims[i];
    return s;
}

double logit_multiplier(const Problem& p) {
    if (!(p.temperature > 0.0) || !std::isfinite(p.temperature))
        throw Error(ErrorKind::invalid_argument,
                    "temperature must be positive and finite, got " + std::to_string(p.temperature));
    if (!(p.scale > 0.0) || !std::isfinite(p.scale))
        throw Error(ErrorKind::invalid_argument, "scale must be positive and finite, got " + std::to_string(p.scale));
    if (p.scale == 1.0) return 1.0 / p.temperature;
    if (p.temperature != 1.0 && std::fabs(p.scale * p.temperature - 1.0) > 1e-12)
        throw Error(ErrorKind::invalid_argument, "scale " + std::to_string(p.scale) + " and temperature " +
                                                     std::to_string(p.temperature) +
                                                     " disagree: scale is 1 / temperature, set one of them");
    return p.scale;
}

std::string to_string(const Shape& s) {
    return "(outer " + std::to_string(s.outer) + ", axis " + std::to_string(s.axis) + ", inner " +
           std::to_string(s.inner) + ")";
}

}  // namespace vksoftmax
