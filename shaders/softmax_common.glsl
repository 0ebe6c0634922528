// Shared pieces of every softmax variant: storage access and the group
// reductions here; the non-finite classification, the exp and the online
// (m, d) statistic from the public include vksoftmax/softmax.glsl, which
// hosts compile into their own shaders.
//
// Defines chosen at build time (one SPIR-V module each):
//   STORAGE_F16   tensors are float16 in memory; all arithmetic stays fp32,
//                 because fp16 sums overflow past 65504 and log-softmax
//                 underflows in fp16.
//   STORAGE_BF16  tensors are bfloat16 in memory (the top half of an fp32,
//                 moved as 16-bit integers: 16-bit storage is all it needs),
//                 fp32 arithmetic; stores round to nearest even.
//   USE_SUBGROUP  reductions use subgroup arithmetic; without it a
//                 shared-memory tree is used, for devices that lack
//                 GL_KHR_shader_subgroup_arithmetic in compute.
//   SUBGROUP_UNIFORM_CONTROL_FLOW  (with USE_SUBGROUP) main() is
//                 declared [[subgroup_uniform_control_flow]] (MAIN_ATTRIBUTES).
//   USE_SHUFFLE   (with USE_SUBGROUP) KIND_ROWS_PER_SLOT rows are held by
//                 clusters of ROW_LANES lanes each, reduced by subgroup
//                 shuffles: a module of its own, because it declares a
//                 capability (GroupNonUniformShuffle) that devices may lack.
//   SUBGROUP_MAX_BY_KEY  (single-pass modules, with USE_SUBGROUP) a
//                 subgroup's max taken on integer keys in workgroups of up
//                 to 256 invocations (softmax_single_pass.comp).
//   ATTENTION     scale, masks, ALiBi, sinks and the log-sum-exp
//                 (softmax_attention.glsl): modules of their own, so that
//                 plain softmax keeps its code exactly.

#ifdef SUBGROUP_UNIFORM_CONTROL_FLOW
// Vulkan alone does not promise that a subgroup which diverged in an if is
// whole again at the merge, where a later subgroup reduction runs (lanes
// left out would lose their partials); this mode does, on devices that
// enable it. (On NVIDIA 580.159.04 it changed no result and no timing:
// bench/NOTES.md.)
#extension GL_EXT_subgroup_uniform_control_flow : require
#define MAIN_ATTRIBUTES [[subgroup_uniform_control_flow]]
#else
#define MAIN_ATTRIBUTES
#endif
#extension GL_EXT_shader_16bit_storage : enable
// [[unroll]]: UNROLL_SLOTS (bf16, and the 16-bit single-pass modules),
// UNROLL_TILE_LOADS (attention and single-pass modules of 16-bit types,
// below; STORAGE_16BIT is not defined yet here), the attention modules'
// tile loads (softmax_tiles.glsl) and the backward modules' re-read of dy
// (softmax_backward.comp).
#if defined(STORAGE_BF16) || defined(ATTENTION) || defined(BACKWARD) || (defined(SINGLE_PASS) && defined(STORAGE_F16))
#extension GL_EXT_control_flow_attributes : require
#endif
#ifdef USE_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#ifdef USE_SHUFFLE
#extension GL_KHR_shader_subgroup_shuffle : require
#endif

#include "specialization_ids.h"

layout(local_size_x_id = SPEC_ID_WORKGROUP_SIZE) in;
// vec4 slots held per invocation: a tile is 4 * SLOTS * group_size elements.
layout(constant_id = SPEC_ID_SLOTS) const uint SLOTS = 1;
// Elements per memory access: 1 (scalar, strided rows), 4 (contiguous rows),
// 8 (fp16 only, contiguous rows: 16-byte accesses, as wide as fp32's vec4;
// SLOTS is then even). Rows not a multiple of VEC long are ODD_ROWS.
layout(constant_id = SPEC_ID_VEC) const uint VEC = 1;
layout(constant_id = SPEC_ID_LOG) const bool LOG = false;
// Log-softmax at T > 1: x - m may overflow where (x - m) / T is finite, so
// each output tests its inputs' magnitude (vksm_log_shift). Off, at T <= 1,
// a log-softmax output is a subtract, a multiply and a subtract: with the
// test on every row, rows of 2048 ran at 70% of the copy ceiling where
// softmax ran at 99% (H200, bench/NOTES.md, v17). Attention modules never
// test: they take T = 1, or their scale as T = 1 / s only where s >= 1 for
// log-softmax (SCALE_IN_EXP below).
layout(constant_id = SPEC_ID_LOG_OVERFLOW_GUARD) const bool LOG_OVERFLOW_GUARD = true;
// A subgroup owns a row (short rows); otherwise the workgroup owns it.
layout(constant_id = SPEC_ID_SUBGROUP_ROWS) const bool SUBGROUP_ROWS = false;
// Our own range-reduced exp instead of the driver's, so that results agree
// across vendors whatever precision their exp has.
layout(constant_id = SPEC_ID_ACCURATE) const bool ACCURATE = false;
// What this dispatch does: one of the KIND_* values below (ShaderKind in
// engine/include/vksoftmax/pipeline.hpp, same values).
layout(constant_id = SPEC_ID_KIND) const uint KIND = 0;
// A group (subgroup or workgroup) owns a row: read once into registers if
// it fits one tile, else folded tile by tile into (m, d) and re-read.
const uint KIND_ROW_IN_REGISTERS = 0u;
// Split pass 1: each chunk's (m, d) and flags, into the workspace.
const uint KIND_SPLIT_STATISTICS = 1u;
// Split pass 2: merge the row's partials, then write the chunk.
const uint KIND_SPLIT_NORMALIZE = 2u;
// The split passes' work item at step w of a group's grid-stride loop
// (w = first, first + step, ...): pass 1 takes w itself; pass 2 takes the
// same group's items in reverse, so that each group first re-reads the
// chunk it read last, itself. Reversing the whole order (items - 1 - w)
// also re-reads the last chunks first, but hands each to another
// workgroup: on the H200 that was 2-8% slower on rows of 16M elements (f16
// 1x16777216 31.8-33.1 against 30.4-30.5 us; bench/NOTES.md, v53).
uint split_item(uint w, uint first, uint step, uint items) {
    if (KIND != KIND_SPLIT_NORMALIZE) return w;
    uint last_own = first + ((items - 1u - first) / step) * step;
    return last_own + first - w;
}
// A group owns a row the plan knows is longer than a tile: only the
// tile-by-tile form is compiled.
const uint KIND_ROW_IN_TILES = 3u;
// A subgroup holds SLOTS rows of at most 4 x its size, one in each vec4
// slot (SUBGROUP_ROWS).
const uint KIND_ROWS_PER_SLOT = 4u;
#ifdef SINGLE_PASS
// Long rows in one dispatch (softmax_single_pass.comp): a workgroup per
// chunk, which gathers its row's partials from the others.
const uint KIND_SINGLE_PASS = 5u;
// Polling rounds a workgroup waits for its row's partials before it
// computes the missing ones itself.
layout(constant_id = SPEC_ID_PATIENCE) const uint PATIENCE = 4096;
#endif
#ifdef USE_SHUFFLE
// Lanes that hold one KIND_ROWS_PER_SLOT row: a power of two, below the
// subgroup size, for rows of at most 4 x ROW_LANES elements (a row of 10
// takes 4 lanes, so a subgroup of 32 holds 8 such rows in each slot).
layout(constant_id = SPEC_ID_ROW_LANES) const uint ROW_LANES = 1;
#endif

// Rows are contiguous but not a multiple of VEC (4 or 8) long: each is read
// over a window from the vector boundary at or before its first element,
// so that its body moves in whole vectors and only the vectors it shares
// with its neighbours (its head and tail) move element by element.
layout(constant_id = SPEC_ID_ODD_ROWS) const bool ODD_ROWS = false;

// How elements move in memory, per storage type: ELEM, one element; V4,
// four (vec4, or uvec2 for 16-bit types: a driver may split f16vec4
// accesses into 2-byte ones); for 16-bit types V8, eight in 16 bytes. The
// macros convert them to and from fp32, so that every binding of a module
// (softmax_backward.glsl's gradient too) reads its elements the same way.
#if defined(STORAGE_F16)
#define STORAGE_16BIT
#define ELEM float16_t
#define ELEM_TO_FLOAT(e) float(e)
#define FLOAT_TO_ELEM(v) ELEM(v)
#define UNPACK4(p) vec4(unpackHalf2x16(p.x), unpackHalf2x16(p.y))
#define PACK4(v) uvec2(packHalf2x16(v.xy), packHalf2x16(v.zw))
#define UNPACK8(p, a, b)                                    \
    a = vec4(unpackHalf2x16(p.x), unpackHalf2x16(p.y));     \
    b = vec4(unpackHalf2x16(p.z), unpackHalf2x16(p.w))
#define PACK8(a, b) uvec4(packHalf2x16(a.xy), packHalf2x16(a.zw), packHalf2x16(b.xy), packHalf2x16(b.zw))
#elif defined(STORAGE_BF16)
// bf16 <-> fp32: widening is a shift; narrowing rounds to nearest even
// and keeps NaN quiet, as engine/include/vksoftmax/half.hpp does on the
// host. bf16_rounded() returns fp32 bits whose top half is the bf16.
#define STORAGE_16BIT
#define ELEM uint16_t
float bf16_lo(uint w) { return uintBitsToFloat(w << 16); }
float bf16_hi(uint w) { return uintBitsToFloat(w & 0xffff0000u); }
// Rounding to 8 significant bits by Veltkamp's split: hi = (v * 65537) +
// (v - v * 65537) is v rounded to nearest even, in three fp32 operations
// instead of six integer ones and a NaN test (NVIDIA issues integer
// operations at half the fp32 rate). Bfloat16.ShaderSplitRoundsToNearestEven
// (tests/test_cpu.cpp) checks these operations against half.hpp's rounding.
// `precise` keeps the compiler from fusing or reassociating them.
// Softmax outputs lie in [0, 1] (or are NaN), where the split is exact for
// every normal value. Log-softmax outputs and gradients are unbounded:
// they are split at v / 2^16, written v * (1 + 2^-16) = v / 2^16 * 65537
// so that nothing overflows, exact from 2^-110 up (below, within 7.7e-34,
// far under the bf16 bound's floor); past the largest value that rounds
// to a finite bf16, and for +-inf, v * 2 is the rounding (+-inf); NaN
// stays a quiet NaN.
#ifdef BACKWARD
const bool BF16_OUTPUT_IN_UNIT_RANGE = false;
#else
const bool BF16_OUTPUT_IN_UNIT_RANGE = !LOG;
#endif
uint bf16_rounded(float v) {
    if (BF16_OUTPUT_IN_UNIT_RANGE) {
        precise float split = v * 65537.0;
        precise float rest = v - split;
        precise float hi = split + rest;
        return floatBitsToUint(hi);
    }
    precise float low = v * 1.52587890625e-05;           // v / 2^16
    precise float split = v * 1.0000152587890625;        // v / 2^16 * 65537
    precise float rest = low - split;
    precise float hi = (split + rest) * 65536.0;
    const float largest_finite = uintBitsToFloat(0x7f7fff00u);  // above: rounds to inf
    return floatBitsToUint(abs(v) < largest_finite ? hi : v * 2.0);
}
uint bf16_bits(float v) { return bf16_rounded(v) >> 16; }
uint pack_bf16x2(vec2 v) { return (bf16_rounded(v.x) >> 16) | (bf16_rounded(v.y) & 0xffff0000u); }
vec4 unpack_bf16x4(uvec2 p) { return vec4(bf16_lo(p.x), bf16_hi(p.x), bf16_lo(p.y), bf16_hi(p.y)); }
#define ELEM_TO_FLOAT(e) uintBitsToFloat(uint(e) << 16)
#define FLOAT_TO_ELEM(v) uint16_t(bf16_bits(v))
#define UNPACK4(p) unpack_bf16x4(p)
#define PACK4(v) uvec2(pack_bf16x2(v.xy), pack_bf16x2(v.zw))
#define UNPACK8(p, a, b)        \
    a = unpack_bf16x4(p.xy);    \
    b = unpack_bf16x4(p.zw)
#define PACK8(a, b) uvec4(pack_bf16x2(a.xy), pack_bf16x2(a.zw), pack_bf16x2(b.xy), pack_bf16x2(b.zw))
// Loops over the slots that the driver must unroll, so that the slots stay
// in registers: with the rounding's longer code, NVIDIA's compiler left
// write_tile()'s loops rolled in the log-softmax and backward modules at 8
// slots, and the slots, indexed by the loop counter, went to local memory
// (H200: bf16 backward 4096x1024 19.6 us, unrolled 7.3; bench/NOTES.md, v15).
#define UNROLL_SLOTS [[unroll]]
#else
#define ELEM float
#define ELEM_TO_FLOAT(e) float(e)
#define FLOAT_TO_ELEM(v) ELEM(v)
#define UNPACK4(p) (p)
#endif
// The 16-bit single-pass modules (forward and backward) unroll their slot
// loops and their 16-byte tile loads too: in rows whose length is not a
// multiple of 4 (ODD_ROWS), whose heads and tails are read and written
// element by element under a branch, NVIDIA's compiler (580.159.04) left
// those loops rolled at 256 x 8 slots and the slots went to local memory
// (128 bytes a lane). H200, us: f16 16x100003 13.6 -> 8.0, 32x32001 9.5
// -> 7.2, 8x151937 13.4 -> 7.9; bf16 32x32001 9.4 -> 7.4 (the loads
// alone); backward f16 16x100003 9.8 -> 8.1; rows a multiple of 8 long,
// which the driver unrolled by itself, within 1% (bench/NOTES.md, v70).
// The attention modules keep theirs as they are (below).
#if defined(SINGLE_PASS) && defined(STORAGE_16BIT) && !defined(ATTENTION) && !defined(UNROLL_SLOTS)
#define UNROLL_SLOTS [[unroll]]
#endif
#ifndef UNROLL_SLOTS
// fp32 and the other fp16 modules: the driver unrolls these loops itself,
// and the modules keep their code exactly.
#define UNROLL_SLOTS
#endif
// The 16-byte load loop of a tile (load_tile()) in the attention and
// single-pass modules of 16-bit types, unrolled (single-pass: above). In
// the attention modules, with the mask's term in it, NVIDIA's compiler
// (580.159.04) left it rolled at 9-16 slots and the slots went to local
// memory. H200, masked rows of 8192 (128 x 16 slots): f16 265 -> 136 us,
// bf16 277 -> 138, causal f16 214 -> 79; rows of 512-4096 (4-8 slots)
// unchanged. Unrolling every slot loop of those modules instead gave NaN
// rows of 4097 on that driver (bench/NOTES.md, v52); the other modules keep
// their code exactly.
#if (defined(ATTENTION) || defined(SINGLE_PASS)) && defined(STORAGE_16BIT)
#define UNROLL_TILE_LOADS [[unroll]]
#else
#define UNROLL_TILE_LOADS
#endif
#ifdef STORAGE_16BIT
#define V4 uvec2
#define V8 uvec4
#else
#define V4 vec4
#endif

// The same binding seen as scalars and as vectors: vector access is only
// used when VEC says every row starts and ends on a vector boundary.
// Scalar access: strided rows, and the heads and tails of ODD_ROWS rows.
layout(std430, binding = 0) readonly buffer InS { ELEM x_s[]; };
layout(std430, binding = 1) writeonly buffer OutS { ELEM y_s[]; };
layout(std430, binding = 0) readonly buffer InV { V4 x_v[]; };
layout(std430, binding = 1) writeonly buffer OutV { V4 y_v[]; };
#define load1(i) ELEM_TO_FLOAT(x_s[i])
#define store1(i, v) (y_s[i] = FLOAT_TO_ELEM(v))
#ifdef STORAGE_16BIT
layout(std430, binding = 0) readonly buffer InW { V8 x_w[]; };
layout(std430, binding = 1) writeonly buffer OutW { V8 y_w[]; };
vec4 load4(uint i) { V4 p = x_v[i]; return UNPACK4(p); }
void store4(uint i, vec4 v) { y_v[i] = PACK4(v); }
void load8(uint i, out vec4 a, out vec4 b) {
    V8 p = x_w[i];
    UNPACK8(p, a, b);
}
void store8(uint i, vec4 a, vec4 b) { y_w[i] = PACK8(a, b); }
#else
vec4 load4(uint i) { return x_v[i]; }
void store4(uint i, vec4 v) { y_v[i] = v; }
void load8(uint i, out vec4 a, out vec4 b) { a = x_v[2u * i]; b = x_v[2u * i + 1u]; }
void store8(uint i, vec4 a, vec4 b) { y_v[2u * i] = a; y_v[2u * i + 1u] = b; }
#endif
struct Partial { float m; float d; uint f; uint pad; };
#ifdef SINGLE_PASS
// Workgroups of one dispatch read each other's partials: device-coherent,
// so that every access is made available and visible at device scope (the
// atomics that order them are in softmax_single_pass.comp).
layout(std430, binding = 2) coherent buffer Work { Partial part[]; };
#else
layout(std430, binding = 2) buffer Work { Partial part[]; };
#endif

layout(push_constant) uniform Params {
    uint rows;      // outer * inner
    uint axis;      // length of the softmax axis
    uint inner;     // stride between neighbours on the axis
    uint chunks;    // split path: chunks per row
    uint chunk;     // split path: elements per chunk (a multiple of a tile)
    float inv_t;    // 1 / temperature
#if defined(ATTENTION) || defined(BACKWARD)
    // softmax_attention.glsl: the tensor as (batch, heads, query_rows, axis)
    // (the backward modules use first_row, for their sink gradient)
    uint heads;
    uint query_rows;
    uint mask_batch;  // the mask's dims, each dividing the tensor's
    uint mask_heads;
    uint mask_rows;
    int causal_offset;  // column j of query row q is hidden past q + offset
    float scale;        // the logits' multiplier (inv_t is then 1)
    float alibi_e0;     // log2 of ALiBi's m0 and m1; 0: no ALiBi
    float alibi_e1;
    uint alibi_heads_log2;  // 2^floor(log2(heads))
    uint first_row;         // this dispatch's first row in the whole tensor (a range of it)
    uint query_slices;      // this dispatch's (batch, head) slices: rows / query_rows
    // query_rows, heads, mask_batch, mask_heads, mask_rows and query_slices
    // as divisors, each a magic number and its shifts (divide() in
    // softmax_attention.glsl; scalars, as the host lays them out: a uvec2
    // would be aligned to 8)
    uint query_rows_magic, query_rows_shifts;
    uint heads_magic, heads_shifts;
    uint mask_batch_magic, mask_batch_shifts;
    uint mask_heads_magic, mask_heads_shifts;
    uint mask_rows_magic, mask_rows_shifts;
    uint query_slices_magic, query_slices_shifts;
#endif
} pc;

// The statistic, its merge, the non-finite rules and exp: the public
// include, which hosts compile into their own shaders too.
#ifdef ATTENTION
// Where an attention module's statistic lives. With a mask, each logit
// x * s + M is made as it is loaded and the statistic is of the logits (T =
// 1). Without one (causal, sinks, log-sum-exp) SCALE_IN_EXP may take the
// statistic of x itself and put the scale in the exp as T = 1 / s (the host
// sets inv_t to s), which spares the multiply per element made as it is
// loaded: causal rows f32 1-5% faster, 16-bit 0-0.4% (H100, bench/NOTES.md,
// v28). The host leaves it off for log-softmax and sinks at s < 1, where
// x - m, and a sink carried into x's units (sink / s), could leave fp32
// although the logits do not.
layout(constant_id = SPEC_ID_SCALE_IN_EXP) const bool SCALE_IN_EXP = false;
#define VKSM_INV_T (SCALE_IN_EXP ? pc.inv_t : 1.0)
#define VKSM_LOG_SHIFT_GUARD false
#else
#define VKSM_INV_T pc.inv_t
#define VKSM_LOG_SHIFT_GUARD LOG_OVERFLOW_GUARD
#endif
#define VKSM_ACCURATE ACCURATE
// How a row's NaN and +inf are found. Off: each element is tested as it
// joins the lane's max (two integer maxima of its bits), and exp2's
// argument is clamped so that a -inf element never reaches it (Vulkan
// leaves exp2(-inf) undefined). On, where the plan's device table says
// that exp2(-inf) is 0 and exp2(NaN) is NaN (NONFINITE_BY_SUM,
// engine/src/nonfinite_rule.cpp): neither, because a NaN or +inf element
// makes the row's sum NaN by itself (a NaN's exp is NaN; +inf becomes the
// max, and inf - inf is NaN), and the row is told poisoned by its sum's
// bits once (row_bad). Fewer instructions an element: 16-bit rows 2-8%
// faster on an H200 (bench/NOTES.md, v49). Never with ACCURATE, whose exp
// selects 0 for a NaN argument. The unclamped exp is the include's own
// (VKSM_EXP_UNCLAMPED): a wrapper choosing between two exps here ran
// rows of 128 (KIND_ROWS_PER_SLOT) 1.3-1.7x slower on the H200, with or
// without BY_SUM (v49).
layout(constant_id = SPEC_ID_NONFINITE_BY_SUM) const bool NONFINITE_BY_SUM = false;
const bool BY_SUM = NONFINITE_BY_SUM && !ACCURATE;
#define VKSM_EXP_UNCLAMPED BY_SUM
#ifdef USE_SUBGROUP
// vksm_subgroup_max() and vksm_subgroup_stat().
#define VKSM_SUBGROUP_ARITHMETIC
#endif
#include "vksoftmax/softmax.glsl"

// Whether a row's outputs are all NaN, given its statistic's flags and
// sum: a NaN or +inf in it (its flags, or with BY_SUM its sum), or no
// finite element.
bool row_bad(uint flags, float sum) {
    bool poisoned = (flags & VKSM_F_POISON) != 0u || (BY_SUM && (floatBitsToUint(sum) & 0x7fffffffu) > 0x7f800000u);
    return poisoned || (flags & VKSM_F_FINITE) == 0u;
}

// ---- group reductions: over a subgroup (SUBGROUP_ROWS) or the workgroup ----
// A row takes two: the max with the flags' OR (exchanged together), then
// the sum; one_exchange_stat() takes both in one exchange, from each
// invocation's (m, d, flags).
#ifdef USE_SUBGROUP
// One slot per subgroup; sized for subgroups of one invocation, because the
// subgroup size a driver reports is not always the one shaders get. Each
// reduction has its own arrays, and callers alternate max-or and add: the
// next write to red_m/red_u comes after group_add's barrier, which no
// invocation passes before every one has read them, so neither reduction
// needs a closing barrier.
shared float red_m[gl_WorkGroupSize.x];
shared uint red_u[gl_WorkGroupSize.x];
shared float red_f[gl_WorkGroupSize.x];

// Cross-subgroup step: every lane folds a strided slice of ALL subgroup
// partials before the subgroup op, so that no partial is lost however many
// subgroups there are relative to the subgroup size.
// The max is a float max unless the module takes it on integer keys
// (vksm_subgroup_max(): SUBGROUP_MAX_BY_KEY, the *_key modules only),
// because integer subgroup maxima gave wrong results on NVIDIA
// 580.159.04 in some pipelines: a uint key packing the max and the flags
// (bench/NOTES.md, v3), and signed keys that order as the floats do,
// compared there as if unsigned in a subgroup-row module (v67).
void group_max_or(inout float m, inout uint f) {
    m = vksm_subgroup_max(m);
    f = subgroupOr(f);
    if (SUBGROUP_ROWS) return;
    if (subgroupElect()) {
        red_m[gl_SubgroupID] = m;
        red_u[gl_SubgroupID] = f;
    }
    barrier();
    float r = -VKSM_FLT_MAX;
    uint o = 0u;
    for (uint i = gl_SubgroupInvocationID; i < gl_NumSubgroups; i += gl_SubgroupSize) {
        r = max(r, red_m[i]);
        o |= red_u[i];
    }
    m = vksm_subgroup_max(r);
    f = subgroupOr(o);
}
float group_add(float v) {
    v = subgroupAdd(v);
    if (SUBGROUP_ROWS) return v;
    if (subgroupElect()) red_f[gl_SubgroupID] = v;
    barrier();
    float r = 0.0;
    for (uint i = gl_SubgroupInvocationID; i < gl_NumSubgroups; i += gl_SubgroupSize) r += red_f[i];
    return subgroupAdd(r);
}
// The workgroup's statistic in one exchange between subgroups: each
// subgroup merges its lanes' (m, d, flags), then every invocation merges
// the subgroups' in the same order (so every one gets the same bits):
// their max first, then one exp per subgroup, where vksm_stat_merge() in
// a loop would take two. group_stat() takes the max across subgroups,
// then the rescaled sum: two exchanges behind a barrier each, about 2200
// of the 3200 cycles a held single-pass chunk's statistic took on an H200
// with its data in L1 (bench/NOTES.md, v65). The caller puts a barrier
// between its reads of the arrays and their next write.
VksmStat one_exchange_stat(VksmStat s) {
    VksmStat sub = vksm_subgroup_stat(s);
    if (subgroupElect()) {
        red_m[gl_SubgroupID] = sub.m;
        red_f[gl_SubgroupID] = sub.d;
        red_u[gl_SubgroupID] = sub.f;
    }
    barrier();
    if (gl_WorkGroupSize.x > 256u) {
        // 16 subgroups or more (32 lanes): each lane folds a strided share
        // of their statistics and the subgroup merges the lanes', instead
        // of every lane taking one exp per subgroup in turn. Every subgroup
        // folds the same shares in the same order: the same bits in each.
        VksmStat t = vksm_stat_empty();
        for (uint i = gl_SubgroupInvocationID; i < gl_NumSubgroups; i += gl_SubgroupSize)
            t = vksm_stat_merge(t, VksmStat(red_m[i], red_f[i], red_u[i]));
        return vksm_subgroup_stat(t);
    }
    float m = -VKSM_FLT_MAX;
    uint f = 0u;
    for (uint i = 0u; i < gl_NumSubgroups; ++i) {
        m = max(m, red_m[i]);
        f |= red_u[i];
    }
    float d = 0.0;
    for (uint i = 0u; i < gl_NumSubgroups; ++i) d += red_f[i] * vksm_scaled_exp(red_m[i] - m);
    return VksmStat(m, d, f);
}
#ifdef USE_SHUFFLE
// The reductions of one row held by a cluster of ROW_LANES lanes
// (KIND_ROWS_PER_SLOT): butterflies of subgroupShuffleXor, which leave the
// cluster's result in each of its lanes, bit-identical (each step adds the
// same two values in each lane of a pair, and addition commutes exactly).
// Shuffles rather than clustered operations: more devices have them
// (lavapipe 22.3 has shuffles and no clustered operations).
float cluster_max(float v) {
    for (uint o = ROW_LANES / 2u; o > 0u; o >>= 1u) v = max(v, subgroupShuffleXor(v, o));
    return v;
}
uint cluster_or(uint v) {
    for (uint o = ROW_LANES / 2u; o > 0u; o >>= 1u) v |= subgroupShuffleXor(v, o);
    return v;
}
float cluster_add(float v) {
    for (uint o = ROW_LANES / 2u; o > 0u; o >>= 1u) v += subgroupShuffleXor(v, o);
    return v;
}
void slot_row_max_or(inout float m, inout uint f) {
    m = cluster_max(m);
    f = cluster_or(f);
}
#define slot_row_add cluster_add
#endif
uint group_size() { return SUBGROUP_ROWS ? gl_SubgroupSize : gl_WorkGroupSize.x; }
uint group_lane() { return SUBGROUP_ROWS ? gl_SubgroupInvocationID : gl_LocalInvocationID.x; }
uint groups_per_workgroup() { return SUBGROUP_ROWS ? gl_NumSubgroups : 1u; }
uint group_index() { return SUBGROUP_ROWS ? gl_SubgroupID : 0u; }
#else
// Shared-memory tree over a power-of-two workgroup; each step folds the
// upper half into the lower: red[i] = op(red[i], red[i + s]).
shared float red_f[gl_WorkGroupSize.x];
shared uint red_u[gl_WorkGroupSize.x];
void group_max_or(inout float m, inout uint f) {
    uint t = gl_LocalInvocationID.x;
    red_f[t] = m;
    red_u[t] = f;
    barrier();
    for (uint s = gl_WorkGroupSize.x / 2u; s > 0u; s >>= 1u) {
        if (t < s) {
            red_f[t] = max(red_f[t], red_f[t + s]);
            red_u[t] = red_u[t] | red_u[t + s];
        }
        barrier();
    }
    m = red_f[0];
    f = red_u[0];
    barrier();
}
float group_add(float v) {
    uint t = gl_LocalInvocationID.x;
    red_f[t] = v;
    barrier();
    for (uint s = gl_WorkGroupSize.x / 2u; s > 0u; s >>= 1u) {
        if (t < s) red_f[t] = red_f[t] + red_f[t + s];
        barrier();
    }
    float r = red_f[0];
    barrier();
    return r;
}
uint group_size() { return gl_WorkGroupSize.x; }
uint group_lane() { return gl_LocalInvocationID.x; }
uint groups_per_workgroup() { return 1u; }
uint group_index() { return 0u; }
#endif
#ifndef USE_SHUFFLE
// A KIND_ROWS_PER_SLOT row is held by the whole subgroup.
#define slot_row_max_or group_max_or
#define slot_row_add group_add
#endif

// All of a group's statistics merged into one, known to every lane.
VksmStat group_stat(VksmStat s) {
    float m = s.m;
    uint f = s.f;
    group_max_or(m, f);
    float d = group_add(s.d * vksm_scaled_exp(s.m - m));
    return VksmStat(m, d, f);
}
