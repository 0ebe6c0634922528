// The backward pass (modules built with BACKWARD, softmax_backward.comp):
// from the forward output y (binding 0) and its gradient dy (binding 3),
// the gradient of the logits x (binding 1):
//   softmax:     dx = k * y * (dy - sum_j y_j dy_j)
//   log-softmax: dx = k * (dy - exp(y) * sum_j dy_j)
// with k the forward's multiplier of x (scale, or 1/T: pc.inv_t), as
// ggml's soft_max_back and PyTorch's _softmax_backward_data compute it.
// A row's sum is its statistic: s.d of the VksmStat the tile functions of
// softmax_tiles.glsl pass along. Included by softmax_tiles.glsl.
//
// Non-finite values: a NaN or +-inf in y or dy (log-softmax: a NaN or +inf
// in y, which may hold -inf, or a non-finite dy), or a sum past the fp32
// range, makes the row's dx NaN. A -inf in a log-softmax y (an element the
// forward hid) gives exactly k * dy there: exp(-inf) is never evaluated.

layout(std430, binding = 3) readonly buffer GradS { ELEM dy_s[]; };
layout(std430, binding = 3) readonly buffer GradV { V4 dy_v[]; };
#ifdef STORAGE_16BIT
layout(std430, binding = 3) readonly buffer GradW { V8 dy_w[]; };
#endif
float grad_load1(uint i) { return ELEM_TO_FLOAT(dy_s[i]); }
vec4 grad_load4(uint i) {
    V4 p = dy_v[i];
    return UNPACK4(p);
}
void grad_load8(uint i, out vec4 a, out vec4 b) {
#ifdef STORAGE_16BIT
    V8 p = dy_w[i];
    UNPACK8(p, a, b);
#else
    a = dy_v[2u * i];
    b = dy_v[2u * i + 1u];
#endif
}

// The tile loads (softmax_tiles.glsl) read dy where their `gradient`
// argument says so, else y. Elements outside a span read as 0 in both, so
// that they add nothing to the row's sum; with SINKS a log-softmax y reads
// as -inf there, so that it adds nothing to the row's mass (exp(0) would
// add 1).
#define SOURCE_PARAM , bool gradient
#define SOURCE_ARG , gradient
#define LOAD1(i) (gradient ? grad_load1(i) : load1(i))
#define LOAD4(i) (gradient ? grad_load4(i) : load4(i))
#define LOAD8(i, a, b)              \
    if (gradient)                   \
        grad_load8(i, a, b);        \
    else                            \
        load8(i, a, b)
#define MISSING (gradient || !(SINKS && LOG) ? 0.0 : vksm_neg_inf())

// dy of the tile held in `slots` (which hold y).
vec4 grads[SLOTS];

// The backward pass of a forward with attention sinks (SINKS): dx is the
// formula above (the sink has no output, so no dy), and the sink logit's
// own gradient is, for each row,
//   softmax:     d sink = -p * sum_j y_j dy_j
//   log-softmax: d sink = -p * sum_j dy_j
// with p the sink's share of the forward's normaliser, 1 - sum_j y_j
// (log-softmax: 1 - sum_j exp(y_j)), clamped at 0 against rounding. It
// is written to binding 4 (fp32, one per row of the whole tensor: r +
// first_row); a head's gradient is the sum over its rows. p taken from y
// is exact to the sum's rounding (fp32) of the stored y: an absolute
// error, where exp(sink - lse) from the forward would be relative, at
// the price of two more buffers.
layout(constant_id = SPEC_ID_SINKS) const bool SINKS = false;
layout(std430, binding = 4) writeonly buffer SinkGradient { float sink_gradient[]; };

// Whether a sum is NaN or +-inf: by its bits, which no compiler may assume
// away (the Vulkan environment lets it assume operands of arithmetic are
// finite).
bool non_finite(float v) { return (floatBitsToUint(v) & 0x7f800000u) == 0x7f800000u; }

// This lane's part of its row's sum over slots [j0, j1): sum y dy
// (log-softmax: sum dy), NaN where the row's dx must be.
float lane_sum(uint j0, uint j1) {
    float s = 0.0;
    uint hu = 0u;
    int hi = -2147483647 - 1;
    for (uint j = j0; j < j1; ++j)
        for (uint c = 0u; c < 4u; ++c) {
            if (LOG) {
                // y may be -inf; NaN and +inf are the largest patterns as
                // signed integers (positive NaNs) or unsigned ones (negative).
                s += grads[j][c];
                hu = max(hu, floatBitsToUint(slots[j][c]));
                hi = max(hi, floatBitsToInt(slots[j][c]));
            } else {
                s += slots[j][c] * grads[j][c];
            }
        }
    // A non-finite y or dy makes its product (or dy itself) non-finite, and
    // so the sum.
    if ((LOG && (hu > 0xff800000u || hi >= 0x7f800000)) || non_finite(s)) return vksm_nan();
    return s;
}

// exp(y) of a log-softmax output (y <= 0, or -inf), with the module's exp
// (ACCURATE: our own); below -104 it is 0 in fp32, and selected rather
// than computed, so that exp(-inf) is never evaluated.
float exp_of_log(float y) {
    float e = VKSM_ACCURATE ? vksm_exp_accurate(max(y, -104.0)) : exp(max(y, -104.0));
    return y > -104.0 ? e : 0.0;
}

// This lane's part of its row's probability mass over slots [j0, j1):
// sum y (log-softmax: sum exp(y)), for SINKS (elements outside a span add
// nothing: see MISSING).
float lane_mass(uint j0, uint j1) {
    float s = 0.0;
    for (uint j = j0; j < j1; ++j)
        for (uint c = 0u; c < 4u; ++c) s += LOG ? exp_of_log(slots[j][c]) : slots[j][c];
    return s;
}

// Row r's sink gradient from its sum and its mass (one lane writes it); a
// non-finite sum (the row's dx is NaN) gives NaN.
void write_sink_gradient(uint r, uint lane, float sum, float mass) {
    if (!SINKS || lane != 0u) return;
    sink_gradient[r + pc.first_row] = non_finite(sum) ? vksm_nan() : -max(1.0 - mass, 0.0) * sum;
}

// dx of slot j, given its row's sum.
vec4 gradient_output(uint j, float sum) {
    if (non_finite(sum)) return vec4(vksm_nan());
    vec4 y = slots[j], dy = grads[j];
    if (!LOG) return pc.inv_t * y * (dy - sum);
    vec4 p;
    for (uint c = 0u; c < 4u; ++c) p[c] = exp_of_log(y[c]);
    return pc.inv_t * (dy - p * sum);
}
