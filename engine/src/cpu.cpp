#include "vksoftmax/cpu.hpp"

#include <cmath>
#include <limits>
#include <vector>

#include "vksoftmax/attention.hpp"
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
    return half_to_float(static_cast<const uint16_t*>(mask)[e]);
}

template <typename Load, typename Store>
void run(const Problem& p, const AttentionData& data, Load load, Store store) {
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

}  // namespace

void softmax(const Problem& problem, const double* in, double* out, const AttentionData& attention) {
    run(problem, attention, [&](uint64_t i) { return in[i]; }, [&](uint64_t i, double v) { out[i] = v; });
}

void softmax(const Problem& problem, const float* in, float* out, const AttentionData& attention) {
    run(problem, attention, [&](uint64_t i) { return static_cast<double>(in[i]); },
        [&](uint64_t i, double v) { out[i] = static_cast<float>(v); });
}

void softmax(const Problem& problem, const uint16_t* in_f16, uint16_t* out_f16, const AttentionData& attention) {
    run(problem, attention, [&](uint64_t i) { return static_cast<double>(half_to_float(in_f16[i])); },
        // double -> float -> half can round twice; the error stays far below
        // the fp16 tolerance, and the GPU rounds the same way.
        [&](uint64_t i, double v) { out_f16[i] = float_to_half(static_cast<float>(v)); });
}

}  // namespace vksoftmax::cpu
