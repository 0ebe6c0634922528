// vksoftmax/softmax.glsl: numerically stable softmax inside your own compute
// shader. The same code the engine's shaders are built on: the online
// (m, d) statistic, its merge, the non-finite rules (SciPy's and PyTorch's)
// and the exp that keeps them; plus, where you define how elements are
// loaded and stored, whole rows held by a subgroup or by a workgroup.
//
// Contract (GLSL 450, Vulkan 1.1; names start with vksm_ / Vksm / VKSM_):
//   Before including, optionally:
//     #define VKSM_INV_T expr      1 / temperature as a float expression (default 1.0)
//     #define VKSM_ACCURATE expr   bool: the range-reduced exp (same results on
//                                   every vendor) instead of the driver's exp2
//     #define VKSM_EXP_UNCLAMPED expr  bool: vksm_element_exp() passes its
//                                   argument to exp2 unclamped, so that -inf
//                                   gives exp2(-inf) and NaN exp2(NaN)
//                                   (default false; only for a driver whose
//                                   exp2 gives 0 and NaN there, which Vulkan
//                                   leaves undefined)
//     #define VKSM_LOG_SHIFT_GUARD expr  bool: log-softmax outputs guard
//                                   against x - m overflowing (default true);
//                                   only T > 1 needs it, so define it false
//                                   where VKSM_INV_T >= 1 (T = 1: the default)
//     #define VKSM_SUBGROUP_MAX_BY_KEY expr  bool: subgroup maxima taken on
//                                   integer keys (fewer cycles on NVIDIA; read
//                                   vksm_subgroup_max() before defining it)
//     #define VKSM_SUBGROUP_ARITHMETIC  with GL_KHR_shader_subgroup_arithmetic
//                                   enabled: declares vksm_subgroup_stat()
//                                   (the row entry points declare it anyway)
//   For the row entry points, also:
//     layout(local_size_x = ...) in;  declared before the include
//     #define VKSM_LOAD(row, i)      float expression: element i of row `row`
//                                     (called twice per element: compute or
//                                     load it, it must give the same value)
//     #define VKSM_STORE(row, i, y)  statement: store output y of element i
//   and enable GL_KHR_shader_subgroup_arithmetic (it is required here).
//   The include then declares:
//     void vksm_softmax_subgroup_row(uint row, uint n, bool log_softmax)
//       one subgroup reads, reduces and writes row `row` of n elements; no
//       barrier, so it may be called from divergent subgroups (each subgroup
//       its own row, every invocation of the subgroup taking part).
//     void vksm_softmax_workgroup_row(uint row, uint n, bool log_softmax)
//       the whole workgroup does it; it must be called in uniform control
//       flow (it holds barriers) and uses 3 x VKSM_MAX_SUBGROUPS words of
//       shared memory (default: gl_WorkGroupSize.x, right for any subgroup
//       size; define it smaller if you know the subgroup size).
//   Both read each element twice (once for the statistic, once for the
//   output) and keep nothing of the row in registers, so any n works.
//     void vksm_softmax_subgroup_row_cached(uint row, uint n, bool log_softmax)
//     void vksm_softmax_workgroup_row_cached(uint row, uint n, bool log_softmax)
//       the same, each element loaded once and kept in registers, for rows
//       of up to VKSM_ROW_CACHE (default 16) elements per invocation
//       (longer rows: the functions above); the same call rules.
//
// Non-finite inputs, as in SciPy and PyTorch: a row holding a NaN or +inf is
// NaN everywhere; a row with no finite element (all -inf) is NaN; a -inf
// element beside finite ones gives 0 (log-softmax: -inf).

#ifndef VKSOFTMAX_SOFTMAX_GLSL
#define VKSOFTMAX_SOFTMAX_GLSL

#ifndef VKSM_INV_T
#define VKSM_INV_T 1.0
#endif
#ifndef VKSM_EXP_UNCLAMPED
#define VKSM_EXP_UNCLAMPED false
#endif
#ifndef VKSM_ACCURATE
#define VKSM_ACCURATE false
#endif
#ifndef VKSM_LOG_SHIFT_GUARD
#define VKSM_LOG_SHIFT_GUARD true
#endif

const float VKSM_FLT_MAX = 3.402823466e38;
// Flags, OR-reduced over a row.
const uint VKSM_F_POISON = 1u;  // a NaN or +inf: the whole row is NaN (SciPy, PyTorch)
const uint VKSM_F_FINITE = 2u;  // at least one finite element: else the row is NaN
const uint VKSM_C_FINITE = 0u, VKSM_C_NEGINF = 1u, VKSM_C_POISON = 2u;

// Classified on the bits: the Vulkan environment lets the compiler assume
// float operands are not Inf or NaN, so isnan()/isinf() may be folded away.
uint vksm_classify(float x) {
    uint b = floatBitsToUint(x);
    uint a = b & 0x7fffffffu;
    if (a < 0x7f800000u) return VKSM_C_FINITE;
    return (b == 0xff800000u) ? VKSM_C_NEGINF : VKSM_C_POISON;
}
float vksm_nan() { return uintBitsToFloat(0x7fc00000u); }
float vksm_neg_inf() { return uintBitsToFloat(0xff800000u); }

// exp on [-104, 0]: ln2 split in two (Cody-Waite) so r is exact to ~2^-32,
// then a degree-7 Taylor polynomial on |r| <= ln2/2 (error < 2^-27),
// scaled by 2^k in two steps so that subnormal results stay exact.
float vksm_exp_accurate(float t) {
    precise float k = floor(t * 1.44269504 + 0.5);
    precise float r = (t - k * 0.693145752) - k * 1.42860677e-6;
    float p = 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    int ki = int(k);
    int k1 = ki / 2;
    return ldexp(ldexp(p, k1), ki - k1);
}

// exp(t * inv_t) for t <= 0. exp(-inf) is undefined in Vulkan and t may be
// -inf (an overflowed difference) or the statistic's sentinel: anything
// below -104 underflows to 0 in fp32, so select 0 instead of calling exp.
float vksm_scaled_exp(float t) {
    float s = t * VKSM_INV_T;
    float e = VKSM_ACCURATE ? vksm_exp_accurate(max(s, -104.0)) : exp(max(s, -104.0));
    return s > -104.0 ? e : 0.0;
}

// The same for every element of a row, in fewer instructions (fp16 rows are
// bound by per-element work): no select, because the argument is clamped
// where 2^t is exactly 0 in fp32 (2^-200 is far below the smallest
// subnormal), so a -inf element (x - m = -inf) gives exactly 0 without ever
// reaching exp of -inf. VKSM_EXP_UNCLAMPED leaves the clamp out.
float vksm_element_exp(float t) {
    if (VKSM_ACCURATE) return vksm_scaled_exp(t);
    if (VKSM_EXP_UNCLAMPED) return exp2(t * (VKSM_INV_T * 1.44269504));
    return exp2(max(t * (VKSM_INV_T * 1.44269504), -200.0));
}

// ---- the online statistic (m, d, flags) ----
// m: max over finite elements (-FLT_MAX while there is none; emptiness is
// told by VKSM_F_FINITE, not by m); d = sum of exp((x - m) / T) over them.
struct VksmStat { float m; float d; uint f; };
VksmStat vksm_stat_empty() { return VksmStat(-VKSM_FLT_MAX, 0.0, 0u); }
// d is rescaled by exp(m_old - m_new) whenever the max grows.
VksmStat vksm_stat_merge(VksmStat a, VksmStat b) {
    float m = max(a.m, b.m);
    return VksmStat(m, a.d * vksm_scaled_exp(a.m - m) + b.d * vksm_scaled_exp(b.m - m), a.f | b.f);
}
// One element folded into a statistic: a finite element that raises the max
// rescales d once (one exp per element either way).
VksmStat vksm_stat_add(VksmStat s, float x) {
    uint c = vksm_classify(x);
    if (c == VKSM_C_POISON) s.f |= VKSM_F_POISON;
    if (c != VKSM_C_FINITE) return s;
    if (x > s.m) {
        s.d = s.d * vksm_scaled_exp(s.m - x) + 1.0;
        s.m = x;
    } else {
        s.d += vksm_scaled_exp(x - s.m);
    }
    s.f |= VKSM_F_FINITE;
    return s;
}
// v / 2, exactly, by lowering the exponent where v is large: written on the
// bits so that no algebraic rewrite can fold it back into v (Vulkan allows
// reassociation; 0.5 * x - 0.5 * m became x - m again on NVIDIA).
float vksm_halve(float v) {
    return abs(v) >= 1.0 ? uintBitsToFloat(floatBitsToUint(v) - 0x00800000u) : 0.5 * v;
}

// Whether vksm_log_shift guards against x - m overflowing. Only T > 1 needs
// it: at T <= 1 an x - m that overflows to -inf stands for an exact
// (x - m) / T below -FLT_MAX, which rounds to -inf as well, and where x - m
// does not overflow both forms give the same bits. A shader that knows its
// T <= 1 defines it false, as a constant: the guard is several instructions
// per output (the engine's modules take it as a specialization constant,
// set where T > 1).
// (x - m) / T for log-softmax. x - m overflows fp32 when x and m are far
// apart (-FLT_MAX beside FLT_MAX) although (x - m) / T may be finite for
// T > 1. Decided on the inputs, not by testing x - m for infinity: a
// computed value may be assumed finite and the test folded away.
float vksm_log_shift(float x, float m) {
    if (!VKSM_LOG_SHIFT_GUARD) return (x - m) * VKSM_INV_T;
    bool huge = max(abs(x), abs(m)) >= 8.5070592e37;  // 2^126: x - m may overflow
    return huge ? (vksm_halve(x) - vksm_halve(m)) * (2.0 * VKSM_INV_T) : (x - m) * VKSM_INV_T;
}

// Output of element x given its row's statistic.
float vksm_output(float x, VksmStat s, bool log_softmax) {
    if ((s.f & VKSM_F_POISON) != 0u || (s.f & VKSM_F_FINITE) == 0u) return vksm_nan();
    if (vksm_classify(x) != VKSM_C_FINITE) return log_softmax ? vksm_neg_inf() : 0.0;
    return log_softmax ? vksm_log_shift(x, s.m) - log(s.d) : vksm_scaled_exp(x - s.m) / s.d;
}

#if defined(VKSM_LOAD) || defined(VKSM_SUBGROUP_ARITHMETIC)
// The subgroup's max of m. Where VKSM_SUBGROUP_MAX_BY_KEY is defined and
// holds, a max of signed integer keys that order as the floats do (a
// negative float's magnitude bits flipped; the map is its own inverse):
// one instruction on NVIDIA, about 90 cycles on 580.159.04 against about
// 200 for a float max. A NaN whose sign is clear wins that max and one
// whose sign is set loses it; either way it reaches the row's sum, and the
// non-finite rules see it there or in the flags. Check it on your driver
// before you define it: 580.159.04 compared such keys as if unsigned in
// one of the engine's subgroup-row modules (wrong maxima: bench/NOTES.md,
// v67), so the engine takes them only in single-pass and workgroup-row
// modules of their own, where every test and conformance case passed with
// them.
#ifdef VKSM_SUBGROUP_MAX_BY_KEY
int vksm_order_key(int bits) { return bits ^ ((bits >> 31) & 0x7fffffff); }
float vksm_subgroup_max(float m) {
    if (!(VKSM_SUBGROUP_MAX_BY_KEY)) return subgroupMax(m);
    return intBitsToFloat(vksm_order_key(subgroupMax(vksm_order_key(floatBitsToInt(m)))));
}
#else
#define vksm_subgroup_max subgroupMax
#endif

// Every statistic of the subgroup merged into one, known to every lane.
VksmStat vksm_subgroup_stat(VksmStat s) {
    float m = vksm_subgroup_max(s.m);
    uint f = subgroupOr(s.f);
    return VksmStat(m, subgroupAdd(s.d * vksm_scaled_exp(s.m - m)), f);
}
#endif

#ifdef VKSM_LOAD
// ---- rows, for hosts that define VKSM_LOAD and VKSM_STORE ----
#ifndef VKSM_MAX_SUBGROUPS
#define VKSM_MAX_SUBGROUPS gl_WorkGroupSize.x
#endif
#ifndef VKSM_ROW_CACHE
#define VKSM_ROW_CACHE 16
#endif
shared float vksm_shared_m[VKSM_MAX_SUBGROUPS];
shared float vksm_shared_d[VKSM_MAX_SUBGROUPS];
shared uint vksm_shared_f[VKSM_MAX_SUBGROUPS];

// The workgroup's max of m and OR of f, known to every lane: each subgroup
// publishes its own, then every lane folds a strided slice of all of them
// (however many subgroups there are against the subgroup size). Its shared
// arrays stay in use until the barrier of the vksm_workgroup_add() that
// follows it (callers alternate the two).
void vksm_workgroup_max_or(inout float m, inout uint f) {
    m = vksm_subgroup_max(m);
    f = subgroupOr(f);
    if (subgroupElect()) {
        vksm_shared_m[gl_SubgroupID] = m;
        vksm_shared_f[gl_SubgroupID] = f;
    }
    barrier();
    for (uint i = gl_SubgroupInvocationID; i < gl_NumSubgroups; i += gl_SubgroupSize) {
        m = max(m, vksm_shared_m[i]);
        f |= vksm_shared_f[i];
    }
    m = vksm_subgroup_max(m);
    f = subgroupOr(f);
}

// The workgroup's sum of v, known to every lane, in the same way. The
// closing barrier frees the shared arrays (its own and those of the
// vksm_workgroup_max_or() before it) for the next call.
float vksm_workgroup_add(float v) {
    v = subgroupAdd(v);
    if (subgroupElect()) vksm_shared_d[gl_SubgroupID] = v;
    barrier();
    float r = 0.0;
    for (uint i = gl_SubgroupInvocationID; i < gl_NumSubgroups; i += gl_SubgroupSize) r += vksm_shared_d[i];
    r = subgroupAdd(r);
    barrier();
    return r;
}

// Every invocation's statistic merged across the workgroup: the max and
// flags first, then each d rescaled to that max and summed.
VksmStat vksm_workgroup_stat(VksmStat s) {
    float m = s.m;
    uint f = s.f;
    vksm_workgroup_max_or(m, f);
    return VksmStat(m, vksm_workgroup_add(s.d * vksm_scaled_exp(s.m - m)), f);
}

void vksm_softmax_subgroup_row(uint row, uint n, bool log_softmax) {
    VksmStat s = vksm_stat_empty();
    for (uint i = gl_SubgroupInvocationID; i < n; i += gl_SubgroupSize) s = vksm_stat_add(s, VKSM_LOAD(row, i));
    s = vksm_subgroup_stat(s);
    for (uint i = gl_SubgroupInvocationID; i < n; i += gl_SubgroupSize) VKSM_STORE(row, i, vksm_output(VKSM_LOAD(row, i), s, log_softmax));
}

void vksm_softmax_workgroup_row(uint row, uint n, bool log_softmax) {
    VksmStat s = vksm_stat_empty();
    for (uint i = gl_LocalInvocationIndex; i < n; i += gl_WorkGroupSize.x) s = vksm_stat_add(s, VKSM_LOAD(row, i));
    s = vksm_workgroup_stat(s);
    for (uint i = gl_LocalInvocationIndex; i < n; i += gl_WorkGroupSize.x)
        VKSM_STORE(row, i, vksm_output(VKSM_LOAD(row, i), s, log_softmax));
}

// The same, each element loaded once and kept in registers between the
// statistic and the output, for rows of up to VKSM_ROW_CACHE elements per
// invocation: where computing an element costs more than reading it (a
// host's own layer), this computes it once instead of twice. With the row
// held, the statistic takes the max first and then one exp per element (no
// rescaling), as the engine's shaders do. Longer rows take the two-pass
// functions above.

// This invocation's max over the finite elements it holds, and its flags.
VksmStat vksm_cached_max(float v[VKSM_ROW_CACHE]) {
    VksmStat s = vksm_stat_empty();
    for (uint k = 0u; k < VKSM_ROW_CACHE; ++k) {
        uint c = vksm_classify(v[k]);
        if (c == VKSM_C_FINITE) s.m = max(s.m, v[k]);
        s.f |= c == VKSM_C_FINITE ? VKSM_F_FINITE : c == VKSM_C_POISON ? VKSM_F_POISON : 0u;
    }
    return s;
}
// Sum of exp((x - m) / T) over the elements held (-inf gives exactly 0; a
// NaN or +inf makes the row NaN whatever the sum).
float vksm_cached_sum(float v[VKSM_ROW_CACHE], float m) {
    float d = 0.0;
    for (uint k = 0u; k < VKSM_ROW_CACHE; ++k) d += vksm_classify(v[k]) == VKSM_C_FINITE ? vksm_element_exp(v[k] - m) : 0.0;
    return d;
}

void vksm_softmax_subgroup_row_cached(uint row, uint n, bool log_softmax) {
    if (n > VKSM_ROW_CACHE * gl_SubgroupSize) {
        vksm_softmax_subgroup_row(row, n, log_softmax);
        return;
    }
    float v[VKSM_ROW_CACHE];
    for (uint k = 0u; k < VKSM_ROW_CACHE; ++k) {
        uint i = gl_SubgroupInvocationID + k * gl_SubgroupSize;
        v[k] = i < n ? VKSM_LOAD(row, i) : vksm_neg_inf();
    }
    VksmStat s = vksm_cached_max(v);
    s.m = vksm_subgroup_max(s.m);
    s.f = subgroupOr(s.f);
    s.d = subgroupAdd(vksm_cached_sum(v, s.m));
    for (uint k = 0u; k < VKSM_ROW_CACHE; ++k) {
        uint i = gl_SubgroupInvocationID + k * gl_SubgroupSize;
        if (i < n) VKSM_STORE(row, i, vksm_output(v[k], s, log_softmax));
    }
}

void vksm_softmax_workgroup_row_cached(uint row, uint n, bool log_softmax) {
    if (n > VKSM_ROW_CACHE * gl_WorkGroupSize.x) {
        vksm_softmax_workgroup_row(row, n, log_softmax);
        return;
    }
    float v[VKSM_ROW_CACHE];
    for (uint k = 0u; k < VKSM_ROW_CACHE; ++k) {
        uint i = gl_LocalInvocationIndex + k * gl_WorkGroupSize.x;
        v[k] = i < n ? VKSM_LOAD(row, i) : vksm_neg_inf();
    }
    VksmStat s = vksm_cached_max(v);
    vksm_workgroup_max_or(s.m, s.f);
    s.d = vksm_workgroup_add(vksm_cached_sum(v, s.m));
    for (uint k = 0u; k < VKSM_ROW_CACHE; ++k) {
        uint i = gl_LocalInvocationIndex + k * gl_WorkGroupSize.x;
        if (i < n) VKSM_STORE(row, i, vksm_output(v[k], s, log_softmax));
    }
}
#endif  // VKSM_LOAD

#endif  // VKSOFTMAX_SOFTMAX_GLSL
