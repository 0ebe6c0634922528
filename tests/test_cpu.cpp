// The CPU reference against closed-form values.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "vksoftmax/accuracy.hpp"
#include "vksoftmax/attention.hpp"
#include "vksoftmax/cpu.hpp"
#include "vksoftmax/divisor.hpp"
#include "vksoftmax/error.hpp"
#include "vksoftmax/half.hpp"

using namespace vksoftmax;

namespace {
const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<double> softmax_row(std::vector<double> x, bool log = false, double t = 1.0) {
    Problem p;
    p.shape = {1, x.size(), 1};
    p.log = log;
    p.temperature = t;
    std::vector<double> y(x.size());
    cpu::softmax(p, x.data(), y.data());
    return y;
}
}  // namespace

TEST(Cpu, LargeLogitsMatchClosedForm) {
    // [1000, 1001, 1002]: e^{-2}, e^{-1}, 1 over their sum; naive exp overflows.
    auto y = softmax_row({1000, 1001, 1002});
    EXPECT_NEAR(y[0], 0.09003057317038046, 1e-15);
    EXPECT_NEAR(y[1], 0.24472847105479764, 1e-15);
    EXPECT_NEAR(y[2], 0.6652409557748219, 1e-15);
}

TEST(Cpu, ConstantRowIsUniform) {
    auto y = softmax_row(std::vector<double>(7, -3.25));
    for (double v : y) EXPECT_DOUBLE_EQ(v, 1.0 / 7.0);
}

TEST(Cpu, OneHotSaturates) {
    // [0, 0, 100]: the others get e^{-100} / (1 + 2 e^{-100}).
    auto y = softmax_row({0, 0, 100});
    EXPECT_NEAR(y[2], 1.0, 1e-15);
    EXPECT_NEAR(y[0] / std::exp(-100.0), 1.0, 1e-12);
}

TEST(Cpu, LogSoftmaxIdentities) {
    auto l = softmax_row({0, 0}, true);
    EXPECT_DOUBLE_EQ(l[0], -std::log(2.0));
    std::vector<double> x = {0.5, -2, 3, 7.25, -0.125};
    auto s = softmax_row(x), ls = softmax_row(x, true);
    double sum = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        EXPECT_NEAR(ls[i], std::log(s[i]), 1e-14) << "element " << i;
        // log-softmax is a shift: x_i - ls_i is the same for every i.
        EXPECT_NEAR(x[i] - ls[i], x[0] - ls[0], 1e-14) << "element " << i;
        sum += s[i];
    }
    EXPECT_NEAR(sum, 1.0, 1e-15);
}

TEST(Cpu, TemperatureDividesLogits) {
    // softmax([0, 2 ln 2] / 2) = [1/3, 2/3].
    auto y = softmax_row({0, 2 * std::log(2.0)}, false, 2.0);
    EXPECT_NEAR(y[0], 1.0 / 3.0, 1e-15);
    EXPECT_NEAR(y[1], 2.0 / 3.0, 1e-15);
}

// softmax(s * x) = softmax(x / (1 / s)): [0, 4 ln 2] at scale 1/2 is
// [1/5, 4/5]; a scale and a temperature that agree are accepted, ones that
// disagree, or a scale that is not positive and finite, refused.
TEST(Cpu, ScaleMultipliesLogits) {
    Problem p;
    p.shape = {1, 2, 1};
    double x[2] = {0, 4 * std::log(2.0)}, y[2];
    p.scale = 0.5;
    cpu::softmax(p, x, y);
    EXPECT_NEAR(y[0], 0.2, 1e-15);
    EXPECT_NEAR(y[1], 0.8, 1e-15);
    p.temperature = 2.0;  // the same multiplier, set both ways
    cpu::softmax(p, x, y);
    EXPECT_NEAR(y[1], 0.8, 1e-15);
    p.temperature = 3.0;
    try {
        cpu::softmax(p, x, y);
        ADD_FAILURE() << "scale 0.5 with temperature 3 should be refused";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("disagree"), std::string::npos) << e.what();
    }
    p.temperature = 1.0;
    for (double s : {0.0, -0.5, kInf, kNaN}) {
        p.scale = s;
        EXPECT_THROW(cpu::softmax(p, x, y), Error) << "scale=" << s;
    }
}

TEST(Cpu, NonFiniteFollowsScipy) {
    for (const auto& row : std::vector<std::vector<double>>{{kInf, 1, 2}, {1, kNaN, 2}, {-kInf, -kInf}}) {
        for (bool log : {false, true})
            for (double v : softmax_row(row, log)) EXPECT_TRUE(std::isnan(v)) << "log=" << log;
    }
    auto y = softmax_row({-kInf, 0, -kInf});
    EXPECT_EQ(y[0], 0.0);
    EXPECT_EQ(y[1], 1.0);
    auto l = softmax_row({-kInf, 0}, true);
    EXPECT_EQ(l[0], -kInf);
    EXPECT_EQ(l[1], 0.0);
}

TEST(Cpu, ExtremeFiniteValues) {
    auto y = softmax_row({-FLT_MAX, FLT_MAX});
    EXPECT_EQ(y[0], 0.0);
    EXPECT_EQ(y[1], 1.0);
}

TEST(Cpu, StridedAxisMatchesRows) {
    // A 2x3 tensor, softmax over axis 0 (inner 3) equals column-wise softmax.
    Problem p;
    p.shape = shape_for_axis({2, 3}, 0);
    ASSERT_EQ(p.shape.outer, 1u);
    ASSERT_EQ(p.shape.axis, 2u);
    ASSERT_EQ(p.shape.inner, 3u);
    std::vector<double> x = {1, 2, 3, 4, 6, 3}, y(6);
    cpu::softmax(p, x.data(), y.data());
    for (int c = 0; c < 3; ++c) {
        auto col = softmax_row({x[c], x[3 + c]});
        EXPECT_DOUBLE_EQ(y[c], col[0]) << "column " << c;
        EXPECT_DOUBLE_EQ(y[3 + c], col[1]) << "column " << c;
    }
}

// The sinks' gradient is the derivative of the loss sum_r sum_j dy_rj y_rj
// with respect to each head's sink logit: the reference's rows, summed over
// each head, against a central difference of its own forward (float64),
// softmax and log-softmax, 2 heads of 3 query rows.
TEST(Cpu, SinkGradientIsTheDerivative) {
    const uint64_t heads = 2, query_rows = 3, n = 50, rows = heads * query_rows;
    std::vector<double> x(rows * n), dy(rows * n);
    for (uint64_t i = 0; i < x.size(); ++i) {
        x[i] = std::sin(0.7 * static_cast<double>(i)) * 3.0;
        dy[i] = std::cos(1.3 * static_cast<double>(i));
    }
    for (bool log : {false, true}) {
        Problem forward;
        forward.shape = {rows, n, 1};
        forward.log = log;
        forward.attention.sinks = true;
        forward.attention.heads = heads;
        forward.attention.query_rows = query_rows;
        Problem backward = forward;
        backward.backward = true;
        const std::vector<float> sinks = {0.5f, 4.0f};
        // The loss at the sinks given (float, as the API takes them) plus `shift` on head h.
        auto loss = [&](uint64_t h, double shift) {
            std::vector<double> y(x.size());
            // Softmax and log-softmax are unchanged by one shift of every logit
            // and the sink together, so moving the sink by +shift is moving its
            // head's logits by -shift: done so, the float sinks stay exact.
            std::vector<double> shifted = x;
            for (uint64_t r = h * query_rows; r < (h + 1) * query_rows; ++r)
                for (uint64_t j = 0; j < n; ++j) shifted[r * n + j] -= shift;
            AttentionData data;
            data.sinks = sinks.data();
            cpu::softmax(forward, shifted.data(), y.data(), data);
            double l = 0;
            for (uint64_t i = 0; i < y.size(); ++i) l += dy[i] * y[i];
            return l;
        };
        std::vector<double> y(x.size()), dx(x.size()), sink_gradient(rows);
        AttentionData data;
        data.sinks = sinks.data();
        cpu::softmax(forward, x.data(), y.data(), data);
        cpu::softmax_backward(backward, y.data(), dy.data(), dx.data(), sink_gradient.data());
        for (uint64_t h = 0; h < heads; ++h) {
            double got = 0;
            for (uint64_t r = h * query_rows; r < (h + 1) * query_rows; ++r) got += sink_gradient[r];
            const double step = 1e-5;
            const double want = (loss(h, step) - loss(h, -step)) / (2 * step);
            EXPECT_NEAR(got, want, 1e-6 * (1 + std::fabs(want)))
                << (log ? "log-softmax" : "softmax") << ", head " << h << ": the rows' sink gradients sum to " << got
                << ", the central difference is " << want;
        }
    }
}

TEST(Cpu, ShapeForAxis) {
    Shape s = shape_for_axis({2, 3, 4}, -1);
    EXPECT_EQ(s.outer, 6u);
    EXPECT_EQ(s.axis, 4u);
    EXPECT_EQ(s.inner, 1u);
    s = shape_for_axis({2, 3, 4}, 1);
    EXPECT_EQ(s.outer, 2u);
    EXPECT_EQ(s.axis, 3u);
    EXPECT_EQ(s.inner, 4u);
    EXPECT_THROW(shape_for_axis({2, 3, 4}, 3), Error);
    EXPECT_THROW(shape_for_axis({2, 3, 4}, -4), Error);
}

// Rows of (outer 2, axis 3, inner 4): row r = o * 4 + k starts at o * 12 + k.
TEST(Cpu, RowStart) {
    const Shape s{2, 3, 4};
    ASSERT_EQ(s.rows(), 8u);
    const uint64_t want[8] = {0, 1, 2, 3, 12, 13, 14, 15};
    for (uint64_t r = 0; r < 8; ++r) EXPECT_EQ(s.row_start(r), want[r]) << "row " << r;
    EXPECT_EQ((Shape{5, 7, 1}.row_start(4)), 28u) << "contiguous rows are axis apart";
}

TEST(Cpu, Float32AndFloat16Entries) {
    Problem p;
    p.shape = {1, 2, 1};
    float xf[2] = {0.f, 0.f}, yf[2];
    cpu::softmax(p, xf, yf);
    EXPECT_EQ(yf[0], 0.5f);
    p.dtype = Dtype::f16;
    uint16_t xh[2] = {0x0000, 0x0000}, yh[2];
    cpu::softmax(p, xh, yh);
    EXPECT_EQ(yh[0], 0x3800) << "0.5 in binary16";
}

TEST(Cpu, Bfloat16Entry) {
    Problem p;
    p.shape = {1, 3, 1};
    p.dtype = Dtype::bf16;
    // 0, ln 2, 1e30: bf16 holds 1e30 (fp16 would overflow), so the row is
    // one-hot at it.
    uint16_t x[3] = {0x0000, float_to_bf16(0.693147f), float_to_bf16(1e30f)}, y[3];
    cpu::softmax(p, x, y);
    EXPECT_EQ(y[0], 0x0000);
    EXPECT_EQ(y[1], 0x0000);
    EXPECT_EQ(y[2], 0x3F80) << "1.0 in bfloat16";
    x[2] = 0x0000;
    cpu::softmax(p, x, y);  // weights 1 : 2 : 1 (ln 2 rounds to 0.69140625: 1.9966)
    EXPECT_EQ(bf16_to_float(y[0]), bf16_to_float(y[2]));
    EXPECT_NEAR(bf16_to_float(y[1]), 0.4996, 0.002) << "2 / 4.0032, rounded to bf16";
    p.dtype = Dtype::f32;
    EXPECT_THROW(cpu::softmax(p, x, y), Error) << "16-bit storage for an f32 problem";
}

TEST(Cpu, RejectsBadTemperature) {
    Problem p;
    p.shape = {1, 2, 1};
    double x[2] = {0, 1}, y[2];
    for (double t : {0.0, -1.0, kInf, kNaN}) {
        p.temperature = t;
        EXPECT_THROW(cpu::softmax(p, x, y), Error) << "T=" << t;
    }
}

// Lavapipe's output 1.92457426e-15 for 1.92455436e-15 (f32 3x40000,
// normal(0, 4) logits): exp at t = ln(1.92e-15) = -33.9, relative error
// 1.034e-5, within rel * |t| / 30 = 1.13e-5 (tests/TOLERANCES.md).
TEST(Accuracy, OutputsFarBelowTheirRowsLargestAllowForTheExpsError) {
    const double got = 1.92457426e-15, want = 1.92455436e-15, floor = 1e-30;
    const double raw = std::fabs(got - want) / want;
    ASSERT_NEAR(raw, 1.034e-5, 1e-8);
    const double t = std::log(want);
    EXPECT_NEAR(relative_error(false, got, want, 1.0, floor), raw * 30 / -t, 1e-12)
        << "an output e^" << t << " below its row's largest is held to rel * |t| / 30";
    EXPECT_LT(relative_error(false, got, want, 1.0, floor), 1e-5);
    EXPECT_DOUBLE_EQ(relative_error(false, got, want, want * std::exp(30.0), floor), raw)
        << "at |t| = 30 the bound is rel itself";
    EXPECT_DOUBLE_EQ(relative_error(true, got, want, 1.0, floor), raw) << "log-softmax takes no exp of t";
    EXPECT_DOUBLE_EQ(relative_error(false, got, want, 0.0, floor), raw) << "no row largest: unscaled";
    EXPECT_DOUBLE_EQ(relative_error(false, 2e-30, 0.0, 1.0, floor), 2e-30 / floor / (-std::log(floor) / 30))
        << "an output that underflows is judged against the floor, at the floor's |t|";
}

TEST(Accuracy, CompareScalesOnlyTheOutputsFarBelowTheRowsLargest) {
    Problem p;
    p.shape = {1, 3, 1};
    const double x[3] = {0.0, -0.5, -34.0};
    std::vector<double> ref(3);
    cpu::softmax(p, x, ref.data());
    EXPECT_EQ(row_largest(p.shape, ref, 0), ref[0]) << "the row's largest reference output is that of x = 0";
    std::vector<double> got = ref;
    got[2] *= 1 + 1.1e-5;
    EXPECT_TRUE(compare(p, got, ref).within(1e-5, 0.0))
        << "1.1e-5 at t = -34 is within 1e-5 * 34 / 30: " << compare(p, got, ref).describe();
    got[2] = ref[2] * (1 + 1.2e-5);
    EXPECT_FALSE(compare(p, got, ref).within(1e-5, 0.0)) << "1.2e-5 at t = -34 is over 1.13e-5";
    got = ref;
    got[1] *= 1 + 1.1e-5;
    EXPECT_FALSE(compare(p, got, ref).within(1e-5, 0.0)) << "1.1e-5 at t = -0.5 is over 1e-5";
    p.log = true;
    std::vector<double> log_ref(3);
    cpu::softmax(p, x, log_ref.data());
    got = log_ref;
    got[2] += 34 * 1.1e-5;
    EXPECT_FALSE(compare(p, got, log_ref).within(1e-5, 0.0)) << "log-softmax outputs are not scaled";
}

TEST(Half, KnownValues) {
    EXPECT_EQ(float_to_half(1.0f), 0x3C00);
    EXPECT_EQ(float_to_half(-2.0f), 0xC000);
    EXPECT_EQ(float_to_half(65504.0f), 0x7BFF);
    EXPECT_EQ(float_to_half(65520.0f), 0x7C00) << "65520 rounds to inf";
    EXPECT_EQ(float_to_half(65519.0f), 0x7BFF);
    EXPECT_EQ(float_to_half(std::ldexp(1.0f, -24)), 0x0001) << "smallest subnormal";
    EXPECT_EQ(float_to_half(std::ldexp(1.0f, -25)), 0x0000) << "a tie rounds to even (0)";
    EXPECT_EQ(float_to_half(std::ldexp(3.0f, -25)), 0x0002) << "1.5 ulp rounds to even (2)";
    EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3C00) << "tie at 1 + 2^-11 rounds to even";
    EXPECT_EQ(float_to_half(std::ldexp(1.0f, -14)), 0x0400) << "smallest normal";
    EXPECT_EQ(float_to_half(-std::numeric_limits<float>::infinity()), 0xFC00);
    EXPECT_EQ(float_to_half(std::numeric_limits<float>::quiet_NaN()) & 0x7E00, 0x7E00);
    EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));
    EXPECT_EQ(half_to_float(0x3555), 0.333251953125f);
}

TEST(Half, EveryHalfRoundTrips) {
    for (uint32_t h = 0; h < 0x10000; ++h) {
        const float f = half_to_float(static_cast<uint16_t>(h));
        if (std::isnan(f)) {
            EXPECT_TRUE(std::isnan(half_to_float(float_to_half(f)))) << std::hex << h;
            continue;
        }
        ASSERT_EQ(float_to_half(f), h) << "binary16 0x" << std::hex << h << " -> " << f;
    }
}

TEST(Bfloat16, KnownValues) {
    EXPECT_EQ(float_to_bf16(1.0f), 0x3F80);
    EXPECT_EQ(float_to_bf16(-2.0f), 0xC000);
    EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3F80) << "tie at 1 + 2^-8 rounds to even (down)";
    EXPECT_EQ(float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82) << "tie at 1 + 3 * 2^-8 rounds to even (up)";
    EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)), 0x3F81) << "just past a tie rounds up";
    EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::max()), 0x7F80) << "FLT_MAX rounds up to inf";
    EXPECT_EQ(float_to_bf16(3.3895314e38f), 0x7F7F) << "bf16's largest finite value";
    EXPECT_EQ(float_to_bf16(-std::numeric_limits<float>::infinity()), 0xFF80);
    EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::denorm_min()), 0x0000) << "2^-149 rounds to 0";
    EXPECT_EQ(float_to_bf16(std::ldexp(1.0f, -133)), 0x0001) << "smallest bf16 subnormal";
    const uint16_t nan = float_to_bf16(std::numeric_limits<float>::quiet_NaN());
    EXPECT_TRUE((nan & 0x7F80) == 0x7F80 && (nan & 0x0040)) << "NaN stays a quiet NaN: 0x" << std::hex << nan;
    uint32_t signalling_bits = 0x7F800001u;  // a NaN whose payload is only in the low half
    float signalling;
    std::memcpy(&signalling, &signalling_bits, 4);
    EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(signalling)))) << "a low-payload NaN must not become inf";
    EXPECT_EQ(bf16_to_float(0x3EAB), 0.333984375f);
}

// The shader's bf16 rounding (softmax_common.glsl, bf16_rounded()) is
// Veltkamp's split in fp32 arithmetic; the same operations here, each
// rounded to fp32 (volatile: no fusing), must give float_to_bf16()'s
// round-to-nearest-even. Every exponent and sign, with mantissas spread
// over the range, ties (low half 0x8000) and their neighbours: softmax's
// form for [2^-126, 1], the unbounded form for every value from 2^-110
// (below, it may flush: within 7.7e-34), inf and NaN.
namespace {
uint32_t bits_of(float f) {
    uint32_t b;
    std::memcpy(&b, &f, 4);
    return b;
}
float float_of(uint32_t b) {
    float f;
    std::memcpy(&f, &b, 4);
    return f;
}
uint16_t split_unit_range(float v) {
    volatile float split = v * 65537.0f;
    volatile float rest = v - split;
    volatile float hi = split + rest;
    return static_cast<uint16_t>(bits_of(hi) >> 16);
}
uint16_t split_unbounded(float v) {
    volatile float low = v * 1.52587890625e-05f;
    volatile float split = v * 1.0000152587890625f;
    volatile float rest = low - split;
    volatile float hi = (split + rest) * 65536.0f;
    volatile float twice = v * 2.0f;
    return static_cast<uint16_t>(bits_of(std::fabs(v) < float_of(0x7f7fff00u) ? hi : twice) >> 16);
}
}  // namespace

TEST(Bfloat16, ShaderSplitRoundsToNearestEven) {
    uint64_t checked = 0;
    for (uint32_t sign : {0u, 0x80000000u})
        for (uint32_t exponent = 1; exponent < 255; ++exponent)
            for (uint32_t m = 0; m < (1u << 23); m += 4093) {
                for (uint32_t low : {m, (m & ~0xffffu) | 0x7fffu, (m & ~0xffffu) | 0x8000u, (m & ~0xffffu) | 0x8001u}) {
                    const uint32_t b = sign | (exponent << 23) | (low & 0x7fffffu);
                    const float v = float_of(b);
                    const uint16_t want = float_to_bf16(v);
                    if (exponent >= 17) {  // |v| >= 2^-110
                        ASSERT_EQ(split_unbounded(v), want) << "unbounded form, 0x" << std::hex << b << " (" << v << ")";
                    }
                    if (exponent <= 127) {  // |v| <= 1 (and the negatives, which softmax never gives)
                        ASSERT_EQ(split_unit_range(v), want) << "unit-range form, 0x" << std::hex << b << " (" << v << ")";
                    }
                    ++checked;
                }
            }
    EXPECT_GT(checked, 2000000u);
    const float inf = std::numeric_limits<float>::infinity();
    EXPECT_EQ(split_unbounded(inf), 0x7F80);
    EXPECT_EQ(split_unbounded(-inf), 0xFF80);
    EXPECT_EQ(split_unbounded(std::numeric_limits<float>::max()), 0x7F80) << "FLT_MAX rounds up to inf";
    EXPECT_TRUE(std::isnan(bf16_to_float(split_unbounded(std::numeric_limits<float>::quiet_NaN()))));
    EXPECT_TRUE(std::isnan(bf16_to_float(split_unit_range(std::numeric_limits<float>::quiet_NaN()))));
    EXPECT_LT(std::fabs(bf16_to_float(split_unbounded(7.0e-34f))), 7.7e-34f) << "below 2^-110: within 7.7e-34";
}

TEST(Bfloat16, EveryBfloat16RoundTrips) {
    for (uint32_t b = 0; b < 0x10000; ++b) {
        const float f = bf16_to_float(static_cast<uint16_t>(b));
        if (std::isnan(f)) {
            EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(f)))) << std::hex << b;
            continue;
        }
        ASSERT_EQ(float_to_bf16(f), b) << "bfloat16 0x" << std::hex << b << " -> " << f;
    }
}

// divide() (and the attention modules' copy of it) against the hardware's
// division: divisors of every bit length with their neighbours, the row
// counts attention tensors have, and numerators at the quotient's steps
// (k*d - 1, k*d), at the ends of the range and spread across it.
TEST(Divisor, MatchesDivisionForEveryBitLength) {
    std::vector<uint32_t> divisors = {1, 3, 5, 6, 7, 12, 25, 32, 48, 96, 100, 641, 1000, 2048, 4095, 6700417,
                                      0x7fffffffu, 0x80000001u, 0xfffffffeu, 0xffffffffu};
    for (uint32_t bit = 0; bit < 32; ++bit) {
        const uint32_t p = uint32_t{1} << bit;
        divisors.insert(divisors.end(), {p, p - 1 ? p - 1 : 1, p + 1});
    }
    uint64_t checked = 0;
    for (uint32_t d : divisors) {
        const vksoftmax::Divisor v = vksoftmax::divisor_for(d);
        std::vector<uint32_t> numerators = {0, 1, d - 1, d, d + 1, 0x7fffffffu, 0x80000000u, 0xfffffffeu, 0xffffffffu};
        for (uint64_t k = 1; k < 5000; ++k) {
            const uint64_t step = k * d;
            if (step > 0xffffffffu) break;
            numerators.push_back(static_cast<uint32_t>(step - 1));
            numerators.push_back(static_cast<uint32_t>(step));
        }
        for (uint32_t n = 0x9e3779b9u, i = 0; i < 5000; ++i, n = n * 1664525u + 1013904223u) numerators.push_back(n);
        for (uint32_t n : numerators) {
            ASSERT_EQ(vksoftmax::divide(n, v), n / d)
                << n << " / " << d << " with magic " << v.magic << " and shifts " << v.shifts;
            ++checked;
        }
    }
    EXPECT_GT(checked, 500000u);
}

TEST(Divisor, ZeroIsTakenAsOne) {
    EXPECT_EQ(vksoftmax::divide(123456789u, vksoftmax::divisor_for(0)), 123456789u);
}
