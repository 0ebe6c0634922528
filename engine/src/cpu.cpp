#include "vksoftmax/cpu.hpp"

#include <cmath>
#include <limits>
#include <vector>

#include "vksoftmax/error.hpp"
#include "vksoftmax/half.hpp"

namespace vksoftmax::cpu {
namespace {

// One row: `at(i)` reads element i, `put(i, v)` writes it; the logits are
// multiplied by `k` (scale, or 1 / temperature: logit_multiplier()).
template <typename At, typename Put>
void row(uint64_t n, double k, bool log, At at, Put put) {
    bool poison = false, finite = false;
    double m = -std::numeric_limits<double>::max();
    for (uint64_t i = 0; i < n; ++i) {
        const double x = at(i);
        if (std::isnan(x) || x == std::numeric_limits<double>::infinity()) poison = true;
        else if (std::isfinite(x)) {
            finite = true;
            m = std::max(m, x);
        }
    }
    if (poison || !finite) {
        for (uint64_t i = 0; i < n; ++i) put(i, std::numeric_limits<double>::quiet_NaN());
        return;
    }
    double d = 0.0;
    for (uint64_t i = 0; i < n; ++i) {
        const double x = at(i);
        if (std::isfinite(x)) d += std::exp((x - m) * k);
    }
    const double log_d = std::log(d);
    for (uint64_t i = 0; i < n; ++i) {
        const double x = at(i);
        if (!std::isfinite(x)) put(i, log ? -std::numeric_limits<double>::infinity() : 0.0);
        else if (log) put(i, (x - m) * k - log_d);
        else put(i, std::exp((x - m) * k) / d);
    }
}

template <typename Load, typename Store>
void run(const Problem& p, Load load, Store store) {
    const double k = logit_multiplier(p);
    const Shape& s = p.shape;
    std::vector<double> buf(s.axis);
    for (uint64_t r = 0; r < s.rows(); ++r) {
        const uint64_t base = s.row_start(r);
        // Gather first, so that out may alias in.
        for (uint64_t i = 0; i < s.axis; ++i) buf[i] = load(base + i * s.inner);
        row(
            s.axis, k, p.log, [&](uint64_t i) { return buf[i]; },
            [&](uint64_t i, double v) { store(base + i * s.inner, v); });
    }
}

}  // namespace

void softmax(const Problem& problem, const double* in, double* out) {
    run(problem, [&](uint64_t i) { return in[i]; }, [&](uint64_t i, double v) { out[i] = v; });
}

void softmax(const Problem& problem, const float* in, float* out) {
    run(problem, [&](uint64_t i) { return static_cast<double>(in[i]); },
        [&](uint64_t i, double v) { out[i] = static_cast<float>(v); });
}

void softmax(const Problem& problem, const uint16_t* in_f16, uint16_t* out_f16) {
    run(problem, [&](uint64_t i) { return static_cast<double>(half_to_float(in_f16[i])); },
        // double -> float -> half can round twice; the error stays far below
        // the fp16 tolerance, and the GPU rounds the same way.
        [&](uint64_t i, double v) { out_f16[i] = float_to_half(static_cast<float>(v)); });
}

}  // namespace vksoftmax::cpu
