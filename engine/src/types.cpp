#include "vksoftmax/types.hpp"

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

std::string to_string(const Shape& s) {
    return "(outer " + std::to_string(s.outer) + ", axis " + std::to_string(s.axis) + ", inner " +
           std::to_string(s.inner) + ")";
}

}  // namespace vksoftmax
