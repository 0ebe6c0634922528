#include "vksoftmax/accuracy.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

#include "vksoftmax/cpu.hpp"
#include "vksoftmax/half.hpp"

namespace vksoftmax {
namespace {

// One finite output's error into `a`: its worst element by relative error.
void add_error(Accuracy& a, uint64_t at, double got, double ref, double err, double rel) {
    a.max_abs = std::max(a.max_abs, err);
    if (rel <= a.max_rel) return;
    a.max_rel = rel;
    a.worst_index = at;
    a.worst_got = got;
    a.worst_ref = ref;
}

// The size of what a backward row's sum adds up: sum |y dy| (log-softmax:
// sum |dy|), for the row starting at `base`.
double row_magnitude(const Problem& problem, const std::vector<double>& y, const std::vector<double>& dy,
                     uint64_t base) {
    const Shape& s = problem.shape;
    double magnitude = 0;
    for (uint64_t i = 0; i < s.axis; ++i) {
        const uint64_t at = base + i * s.inner;
        magnitude += problem.log ? std::fabs(dy[at]) : std::fabs(y[at] * dy[at]);
    }
    return magnitude;
}

}  // namespace

bool Accuracy::within(double rel_tol, double abs_tol) const {
    return nonfinite_mismatches == 0 && (max_rel <= rel_tol || max_abs <= abs_tol);
}

std::string Accuracy::describe() const {
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "max abs %.3g, max rel %.3g (element %llu: got %.9g, want %.9g), max |row sum - 1| %.3g, "
                  "non-finite mismatches %llu",
                  max_abs, max_rel, static_cast<unsigned long long>(worst_index), worst_got, worst_ref,
                  max_row_sum_error, static_cast<unsigned long long>(nonfinite_mismatches));
    return buf;
}

Bound accuracy_bound(Dtype dtype, bool log, Precision precision) {
    if (dtype == Dtype::bf16) return {1.6e-2, log ? 1.0 : 1e-30};
    const double rel = dtype == Dtype::f16 ? 2e-3 : precision == Precision::accurate ? 4e-6 : 1e-5;
    return {rel, log ? 1.0 : dtype == Dtype::f32 ? 1e-30 : 6.103515625e-05};
}

// Past |t| = 30 the exp's 2|t| ULP (2^-23 each at worst) and the
// argument's rounding (|t| 2^-24) add about 3e-7 an output per unit of
// |t| where a row is held in registers (two exps an element): rel / 30 per
// unit keeps pace with that. Lavapipe's worst seen: 1.03e-5 at t = -34.
constexpr double kExpArgumentWithinBound = 30.0;

double relative_error(bool log, double got, double ref, double row_largest, double floor) {
    const double judged_against = std::max(std::fabs(ref), floor);
    const double rel = std::fabs(got - ref) / judged_against;
    if (log || !(row_largest > 0)) return rel;
    const double t = std::log(judged_against / row_largest);
    return rel / std::max(1.0, -t / kExpArgumentWithinBound);
}

double row_largest(const Shape& shape, const std::vector<double>& values, uint64_t base) {
    double largest = 0;
    for (uint64_t i = 0; i < shape.axis; ++i) {
        const double v = values[base + i * shape.inner];
        if (std::isfinite(v)) largest = std::max(largest, v);
    }
    return largest;
}

std::vector<double> to_double(const void* data, size_t n, Dtype dtype) {
    std::vector<double> out(n);
    const auto* bytes = static_cast<const uint8_t*>(data);
    for (size_t i = 0; i < n; ++i) {
        if (dtype == Dtype::f32) {
            float f;
            std::memcpy(&f, bytes + 4 * i, 4);
            out[i] = f;
        } else {
            uint16_t h;
            std::memcpy(&h, bytes + 2 * i, 2);
            out[i] = from_16bit(dtype, h);
        }
    }
    return out;
}

std::vector<uint8_t> to_storage(const std::vector<double>& values, Dtype dtype) {
    std::vector<uint8_t> out(values.size() * dtype_size(dtype));
    for (size_t i = 0; i < values.size(); ++i) {
        const float f = static_cast<float>(values[i]);
        if (dtype == Dtype::f32) {
            std::memcpy(out.data() + 4 * i, &f, 4);
        } else {
            const uint16_t h = to_16bit(dtype, f);
            std::memcpy(out.data() + 2 * i, &h, 2);
        }
    }
    return out;
}

void round_to(Dtype dtype, std::vector<double>& values) {
    for (double& v : values)
        v = dtype == Dtype::f32 ? double(float(v)) : double(from_16bit(dtype, to_16bit(dtype, float(v))));
}

Accuracy compare(const Problem& problem, const std::vector<double>& got, const std::vector<double>& ref) {
    const double floor = accuracy_bound(problem.dtype, problem.log, problem.precision).floor;
    Accuracy a;
    const Shape& s = problem.shape;
    for (uint64_t row = 0; row < s.rows(); ++row) {
        const uint64_t base = s.row_start(row);
        const double largest = problem.log ? 0.0 : row_largest(s, ref, base);
        double sum = 0;
        bool finite_row = true;
        for (uint64_t i = 0; i < s.axis; ++i) {
            const uint64_t at = base + i * s.inner;
            const double g = got[at], r = ref[at];
            if (!std::isfinite(r) || !std::isfinite(g)) {
                finite_row = false;
                const bool same = (std::isnan(r) && std::isnan(g)) || (std::isinf(r) && g == r);
                if (!same) ++a.nonfinite_mismatches;
                continue;
            }
            sum += problem.log ? std::exp(g) : g;
            add_error(a, at, g, r, std::fabs(g - r), relative_error(problem.log, g, r, largest, floor));
        }
        // log-softmax rows with -inf elements still sum to 1 in exp space.
        if (s.axis > 0 && (finite_row || !std::isnan(ref[base])))
            a.max_row_sum_error = std::max(a.max_row_sum_error, std::fabs(sum - 1.0));
    }
    return a;
}

Accuracy compare_backward(const Problem& problem, const std::vector<double>& y, const std::vector<double>& dy,
                          const std::vector<double>& got, const std::vector<double>& ref) {
    const double k = logit_multiplier(problem);
    // dx is a value, not a log: the softmax floor, below which outputs are
    // judged absolutely (a GPU may flush an fp32 subnormal y to 0).
    const double floor = accuracy_bound(problem.dtype, false, problem.precision).floor;
    const Shape& s = problem.shape;
    Accuracy a;
    for (uint64_t row = 0; row < s.rows(); ++row) {
        const uint64_t base = s.row_start(row);
        const double magnitude = row_magnitude(problem, y, dy, base);
        for (uint64_t i = 0; i < s.axis; ++i) {
            const uint64_t at = base + i * s.inner;
            const double g = got[at], r = ref[at];
            if (!std::isfinite(r) || !std::isfinite(g)) {
                const bool same = (std::isnan(r) && std::isnan(g)) || (std::isinf(r) && g == r);
                if (!same) ++a.nonfinite_mismatches;
                continue;
            }
            const double p = problem.log ? (y[at] == -INFINITY ? 0.0 : std::exp(y[at])) : std::fabs(y[at]);
            const double scale = std::fabs(r) + k * (problem.log ? std::fabs(dy[at]) + p * magnitude
                                                                 : p * (std::fabs(dy[at]) + magnitude));
            const double err = std::fabs(g - r);
            const double rel = err / std::max(scale, floor);
            add_error(a, at, g, r, err, rel);
        }
    }
    return a;
}

Accuracy compare_sink_gradient(const Problem& problem, const std::vector<double>& y, const std::vector<double>& dy,
                               const std::vector<double>& got, const std::vector<double>& ref) {
    const double floor = accuracy_bound(problem.dtype, false, problem.precision).floor;
    const Shape& s = problem.shape;
    Accuracy a;
    for (uint64_t row = 0; row < s.rows(); ++row) {
        const double magnitude = row_magnitude(problem, y, dy, s.row_start(row));
        const double g = got[row], r = ref[row];
        if (!std::isfinite(r) || !std::isfinite(g)) {
            if (!(std::isnan(r) && std::isnan(g))) ++a.nonfinite_mismatches;
            continue;
        }
        const double err = std::fabs(g - r);
        add_error(a, row, g, r, err, err / std::max(std::fabs(r) + magnitude, floor));
    }
    return a;
}

BackwardInputs backward_inputs(const Problem& problem, const std::vector<double>& logits, uint32_t seed,
                               const float* sinks) {
    const size_t n = logits.size();
    BackwardInputs in{std::vector<double>(n), std::vector<double>(n)};
    Problem forward = problem;
    forward.backward = false;
    AttentionData forward_data;
    forward_data.sinks = sinks;
    cpu::softmax(forward, logits.data(), in.y.data(), forward_data);
    std::mt19937 rng(seed);
    std::normal_distribution<double> grad(0.0, 1.0);
    for (double& v : in.dy) v = grad(rng);
    round_to(problem.dtype, in.y);
    round_to(problem.dtype, in.dy);
    return in;
}

}  // namespace vksoftmax
