// How far a computed softmax is from a reference: the figures that --check,
// the demo and the tests report.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "vksoftmax/types.hpp"

namespace vksoftmax {

struct Accuracy {
    double max_abs = 0;        // max |got - ref| over finite references
    double max_rel = 0;        // max |got - ref| / max(|ref|, floor)
    double max_row_sum_error = 0;  // softmax: max over rows of |sum - 1| (rows with a finite result)
    uint64_t nonfinite_mismatches = 0;  // NaN/inf where the reference has none, or the reverse
    uint64_t worst_index = 0;  // element of max_rel
    double worst_got = 0, worst_ref = 0;
    bool within(double rel_tol, double abs_tol) const;
    std::string describe() const;
};

// Compares `got` with `ref` (both dense, problem.shape). `floor` keeps
// outputs that underflow from dominating max_rel: fp32 1e-30, fp16 2^-24.
Accuracy compare(const Problem& problem, const std::vector<double>& got, const std::vector<double>& ref,
                 double floor);

}  // namespace vksoftmax
