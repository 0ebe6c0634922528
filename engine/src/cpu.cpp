#include "vksoftmax/cpu.hpp"

#include <cmath>
#include <limits>
#include <vector>

#include "vksoftmax/attention.hpp"
#include "vksoftmax/error.hpp"
#include "vksoftmax/half.hpp"

namespace vksoftmax::cpu {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

// One row of logits z (`put(i, v)` writes output i); `sink` joins the
// normaliser (-inf: none). Returns the row's log-sum-exp (NaN where the
// outputs are).
template <typename Put>
double row(const std::vector<double>& z, double sink, bool log, Put put) {
    const uint64_t n = z.size();
    bool poison = std::isnan(sink) || sink == kInf, finite = std::isfinite(sink);
    double m = finite ? sink : -std::numeric_limits<double>::max();
    for (double x : z) {
        if (std::isnan(x) || x == kInf) poison = true;
        else if (std::isfinite(x)) {
            finite = true;
            m = std::max(m, x);
        }
    }
    if (poison || !finite) {
        for (uint64_t i = 0; i < n; ++i) put(i, kNan);
        return kNan;
    }
    double d = std::isfinite(sink) ? std::exp(sink - m) : 0.0;
    for (double x : z)
        if (std::isfinite(x)) d += std::exp(x - m);
    const double log_d = std::log(d);
    for (uint64_t i = 0; i < n; ++i) {
        const double x = z[i];
        if (!std::isfinite(x)) put(i, log ? -kInf : 0.0);
        else if (log) put(i, (x - m) - log_d);
        else put(i, std::exp(x - m) / d);
    }
    return m + log_d;
}

// Element e of the mask as a double.
double mask_value(const Problem& p, const void* mask, uint64_t e) {
    if (p.attention.mask_dtype == Dtype::f32) return static_cast<const float*>(mask)[e];
    return from_16bit(p.attention.mask_dtype, static_cast<const uint16_t*>(mask)[e]);
}

template <typename Load, typename Store>
void run(const Problem& p, const AttentionData& data, Load load, Store store) {
    if (p.backward) throw Error(ErrorKind::invalid_argument, "a backward problem takes cpu::softmax_backward()");
    const double k = logit_multiplier(p);
    const Shape& s = p.shape;
    const Attention& a = p.attention;
    const AttentionLayout layout = attention_layout(p);
    check_attention_data(a, data);
    std::vector<double> z(s.axis);
    for (uint64_t r = 0; r < s.rows(); ++r) {
        const uint64_t base = s.row_start(r);
        const uint64_t h = layout.head(r);
        const double slope = alibi_slope(h, layout.heads, a.alibi_max_bias);
        const uint64_t mask_base = a.mask ? layout.mask_row(r) * s.axis : 0;
        const int64_t visible = static_cast<int64_t>(layout.query(r)) + a.causal_offset + 1;
        // Gather first, so that out may alias in.
        for (uint64_t i = 0; i < s.axis; ++i) {
            double x = load(base + i * s.inner) * k;
            if (a.mask) x += slope * mask_value(p, data.mask, mask_base + i);
            if (a.causal && static_cast<int64_t>(i) >= visible) x = -kInf;
            z[i] = x;
        }
        const double sink = a.sinks ? static_cast<double>(data.sinks[h]) : -kInf;
        const double lse = row(z, sink, p.log, [&](uint64_t i, double v) { store(base + i * s.inner, v); });
        if (a.lse) data.lse[r] = static_cast<float>(lse);
    }
}

// The backward pass over every row; `load(t, i)` reads element i of y
// (t = 0) or dy (t = 1), `store(i, v)` writes dx. With sinks, each row's
// sink gradient -p * sum into `sink_gradient`, p = 1 - sum y (log-softmax:
// 1 - sum exp(y)) clamped at 0.
template <typename Load, typename Store>
void run_backward(const Problem& p, Load load, Store store, double* sink_gradient) {
    const double k = logit_multiplier(p);
    const Shape& s = p.shape;
    if (p.attention.sinks) {
        attention_layout(p);
        if (!sink_gradient)
            throw Error(ErrorKind::invalid_argument, "the backward pass of sinks needs memory for the sink gradient");
    }
    std::vector<double> y(s.axis), dy(s.axis);
    for (uint64_t r = 0; r < s.rows(); ++r) {
        const uint64_t base = s.row_start(r);
        double sum = 0, mass = 0;
        bool bad = false;
        for (uint64_t i = 0; i < s.axis; ++i) {
            y[i] = load(0, base + i * s.inner);
            dy[i] = load(1, base + i * s.inner);
            const bool y_ok = std::isfinite(y[i]) || (p.log && y[i] == -kInf);
            bad = bad || !y_ok || !std::isfinite(dy[i]);
            sum += p.log ? dy[i] : y[i] * dy[i];
            mass += p.log ? (y[i] == -kInf ? 0.0 : std::exp(y[i])) : y[i];
        }
        bad = bad || !std::isfinite(sum);
        if (p.attention.sinks) sink_gradient[r] = bad ? kNan : -std::max(1.0 - mass, 0.0) * sum;
        for (uint64_t i = 0; i < s.axis; ++i) {
            const double v = bad ? kNan : p.log ? k * (dy[i] - (y[i] == -kInf ? 0.0 : std::exp(y[i])) * sum)
                                                : k * y[i] * (dy[i] - sum);
            store(base + i * s.inner, v);
        }
    }
}

void require_backward(const Problem& p) {
    if (!p.backward) throw Error(ErrorKind::invalid_argument, "cpu::softmax_backward() takes a Problem::backward problem");
}

}  // namespace

void softmax_backward(const Problem& problem, const double* y, const double* dy, double* dx, double* sink_gradient) {
    require_backward(problem);
    run_backward(
        problem, [&](int t, uint64_t i) { return t == 0 ? y[i] : dy[i]; }, [&](uint64_t i, double v) { dx[i] = v; },
        sink_gradient);
}

void softmax_backward(const Problem& problem, const float* y, const float* dy, float* dx, double* sink_gradient) {
    require_backward(problem);
    run_backward(problem, [&](int t, uint64_t i) { return static_cast<double>(t == 0 ? y[i] : dy[i]); },
                 [&](uint64_t i, double v) { dx[i] = static_cast<float>(v); }, sink_gradient);
}

void softmax_backward(const Problem& problem, const uint16_t* y, const uint16_t* dy, uint16_t* dx,
                      double* sink_gradient) {
    require_backward(problem);
    if (problem.dtype == Dtype::f32)
        throw Error(ErrorKind::invalid_argument, "cpu::softmax_backward on 16-bit storage for an f32 problem");
    const Dtype dtype = problem.dtype;
    run_backward(problem, [&](int t, uint64_t i) { return static_cast<double>(from_16bit(dtype, t == 0 ? y[i] : dy[i])); },
                 [&](uint64_t i, double v) { dx[i] = to_16bit(dtype, static_cast<float>(v)); }, sink_gradient);
}

void softmax(const Problem& problem, const double* in, double* out, const AttentionData& attention) {
    run(problem, attention, [&](uint64_t i) { return in[i]; }, [&](uint64_t i, double v) { out[i] = v; });
}

void softmax(const Problem& problem, const float* in, float* out, const AttentionData& attention) {
    run(problem, attention, [&](uint64_t i) { return static_cast<double>(in[i]); },
        [&](uint64_t i, double v) { out[i] = static_cast<float>(v); });
}

void softmax(const Problem& problem, const uint16_t* in, uint16_t* out, const AttentionData& attention) {
    if (problem.dtype == Dtype::f32)
        throw Error(ErrorKind::invalid_argument, "cpu::softmax on 16-bit storage for an f32 problem");
    const Dtype dtype = problem.dtype;
    run(problem, attention, [&](uint64_t i) { return static_cast<double>(from_16bit(dtype, in[i])); },
        // double -> float -> 16 bits can round twice; the error stays far
        // below the 16-bit tolerances, and the GPU rounds the same way.
        [&](uint64_t i, double v) { out[i] = to_16bit(dtype, static_cast<float>(v)); });
}

}  // namespace vksoftmax::cpu
