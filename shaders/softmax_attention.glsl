// The attention options (modules built with ATTENTION): the logits of
// row r of a (batch, heads, query rows, n) tensor become
//   z_j = scale * x_j + slope_h * mask[b % MB, h % MH, q % MQ, j]
// with z_j = -inf where the causal mask hides column j (j > q + offset);
// a per-head sink logit joins the row's statistic and yields no output;
// each row's log-sum-exp may be written to a buffer of its own. Modules
// without a mask may leave the scale to the exp (SCALE_IN_EXP,
// softmax_common.glsl): their statistic is then of x, in x's units. Included
// by softmax_tiles.glsl after Span, which carries the row's part of it
// (row_attention()), so that a load pays one add and one compare.
//
// Bindings beside softmax_common.glsl's: 3 the mask as 32-bit words (an
// fp16 or bf16 mask two to a word, low half first), 4 the sinks (fp32, one per
// head), 5 the log-sum-exp (fp32, one per row). Where an option is off its
// binding holds a stand-in buffer that is never read.

layout(std430, binding = 3) readonly buffer MaskWords { uint mask_word[]; };
// The same binding four elements at a time: fp32 as vec4, 16-bit as uvec2.
layout(std430, binding = 3) readonly buffer MaskF32x4 { vec4 mask_f32x4[]; };
layout(std430, binding = 3) readonly buffer MaskF16x4 { uvec2 mask_f16x4[]; };
layout(std430, binding = 3) readonly buffer MaskF16x8 { uvec4 mask_f16x8[]; };
layout(std430, binding = 4) readonly buffer Sinks { float sink[]; };
layout(std430, binding = 5) writeonly buffer LogSumExp { float lse[]; };

// The options as specialization constants, so that a module specialized
// without one has none of its code.
const uint MASK_NONE = 0u, MASK_F32 = 1u, MASK_F16 = 2u, MASK_BF16 = 3u;
layout(constant_id = SPEC_ID_MASK) const uint MASK = MASK_NONE;
layout(constant_id = SPEC_ID_CAUSAL) const bool CAUSAL = false;
layout(constant_id = SPEC_ID_SINKS) const bool SINKS = false;
layout(constant_id = SPEC_ID_LSE) const bool LSE = false;
// ALiBi's per-head slopes; without, every slope is 1 and a masked element
// costs one multiply-add (x * scale + mask), not two.
layout(constant_id = SPEC_ID_ALIBI) const bool ALIBI = false;
// A mask with a batch or head dimension over 1; without (a (query rows, n)
// mask broadcast over batch and heads, the common one), a row's mask row
// follows from its query row alone, and a row that needs no head (no
// ALiBi, no sink) never takes its index apart further.
layout(constant_id = SPEC_ID_MASK_PER_HEAD) const bool MASK_PER_HEAD = false;
// The order in which the row kinds take the rows: head-major (the tensor's,
// every query row of a head before the next head) or query-major (every
// (batch, head) slice of query row q before q + 1). In head-major order a
// mask slice is read again by the next slice that shares it (the next head,
// for a mask broadcast over heads), after that slice's rows of x in and out
// have passed through the cache; where they evict it, query-major order
// reads each mask row while it is still there (engine/src/attention_plan.cpp,
// query_major_rows()).
layout(constant_id = SPEC_ID_QUERY_MAJOR) const bool QUERY_MAJOR = false;
// Query-major order in blocks of 2^QUERY_BLOCK_SHIFT query rows: each slice
// takes a block of consecutive rows before the next slice takes the same
// block, so that a workgroup's neighbours read neighbouring rows of x while
// a mask row is read again a block later (query_block_rows() in
// attention_plan.cpp).
layout(constant_id = SPEC_ID_QUERY_BLOCK_SHIFT) const uint QUERY_BLOCK_SHIFT = 0u;
// Subgroup rows issue a tile's loads together (softmax_tiles.glsl:
// ATTENTION_LOADS_FIRST, ATTENTION_LOGITS_AFTER), on the drivers where
// that was measured faster; elsewhere each vector's load and logits stay
// in a branch of their own, which lavapipe compiles up to 4x faster
// (engine/src/tile_loads_rule.cpp).
layout(constant_id = SPEC_ID_TILE_LOADS_TOGETHER) const bool TILE_LOADS_TOGETHER = false;

// A row's share of the options (row_attention()).
struct RowAttention { uint mask_base; uint visible; float slope; };

// Two 16-bit mask elements of one word (low half first) as fp32: bf16 is
// the top half of an fp32, so widening it is a shift.
vec2 mask_pair(uint w) {
    return MASK == MASK_BF16 ? vec2(uintBitsToFloat(w << 16), uintBitsToFloat(w & 0xffff0000u)) : unpackHalf2x16(w);
}

// Element e of the mask, as fp32.
float mask_value(uint e) {
    if (MASK == MASK_F32) return uintBitsToFloat(mask_word[e]);
    uint w = mask_word[e >> 1];
    return mask_pair((e & 1u) != 0u ? w >> 16 : w).x;
}

// floor(n / d) for a divisor d given as the magic number and shifts the
// host computed (divisor_for() in the engine's divisor.hpp, exact for every
// 32-bit n): a multiply-high and three steps, where dividing by a push
// constant is a long instruction sequence on a GPU, and a masked row takes
// its index apart with up to five (bench/NOTES.md, v14).
uint divide(uint n, uint magic, uint shifts) {
    uint high, low;
    umulExtended(n, magic, high, low);
    return (high + ((n - high) >> (shifts & 1u))) >> (shifts >> 1);
}

// The row of the dispatch's range that the i-th row handed out is: i
// itself, or with QUERY_MAJOR, in blocks of b = 2^QUERY_BLOCK_SHIFT query
// rows, row k of block j (j = i / b, k = i % b) is row
// (j % query_slices) * query_rows + (j / query_slices) * b + k: a bijection
// on the range (its rows are query_slices * query_rows, and b divides
// query_rows).
uint row_in_order(uint i) {
    if (!QUERY_MAJOR) return i;
    uint block = i >> QUERY_BLOCK_SHIFT;
    uint q = divide(block, pc.query_slices_magic, pc.query_slices_shifts);
    uint in_block = i & ((1u << QUERY_BLOCK_SHIFT) - 1u);
    return (block - q * pc.query_slices) * pc.query_rows + (q << QUERY_BLOCK_SHIFT) + in_block;
}

// Row r's (batch * heads + head) and query row. Rows are numbered within
// the dispatch's range of the tensor; r + first_row in the whole tensor
// (the mask, sinks and log-sum-exp are bound whole).
uvec2 row_head_batch_and_query(uint r) {
    uint row = r + pc.first_row;
    uint hb = divide(row, pc.query_rows_magic, pc.query_rows_shifts);
    return uvec2(hb, row - hb * pc.query_rows);
}

// n % d where d is the divisor given (n - d * floor(n / d)).
uint remainder(uint n, uint d, uint magic, uint shifts) { return n - d * divide(n, magic, shifts); }

// The batch and head of a row's (batch * heads + head).
uvec2 batch_and_head(uint hb) {
    uint b = divide(hb, pc.heads_magic, pc.heads_shifts);
    return uvec2(b, hb - b * pc.heads);
}

// The head of row r (whose sink joins its statistic).
uint row_head(uint r) { return batch_and_head(row_head_batch_and_query(r).x).y; }

// ALiBi's slope of head h, as ggml defines it: m0^(h + 1) for the first
// 2^floor(log2(heads)) heads, m1^(2 (h - that) + 1) after, with m0 =
// 2^alibi_e0 and m1 = 2^alibi_e1.
float alibi_slope(uint h) {
    return h < pc.alibi_heads_log2 ? exp2(pc.alibi_e0 * float(h + 1u))
                                   : exp2(pc.alibi_e1 * float(2u * (h - pc.alibi_heads_log2) + 1u));
}

// Row r's share of the options: its mask row's first element, the first
// column the causal mask hides, the slope of its head (1 without ALIBI).
RowAttention row_attention(uint r) {
    uvec2 hb_q = row_head_batch_and_query(r);
    uint q = hb_q.y;
    uint mask_row = remainder(q, pc.mask_rows, pc.mask_rows_magic, pc.mask_rows_shifts);
    float slope = 1.0;
    if (MASK_PER_HEAD || ALIBI) {
        uvec2 bh = batch_and_head(hb_q.x);
        uint mask_b = remainder(bh.x, pc.mask_batch, pc.mask_batch_magic, pc.mask_batch_shifts);
        uint mask_h = remainder(bh.y, pc.mask_heads, pc.mask_heads_magic, pc.mask_heads_shifts);
        if (MASK_PER_HEAD) mask_row += (mask_b * pc.mask_heads + mask_h) * pc.mask_rows;
        if (ALIBI) slope = alibi_slope(bh.y);
    }
    // Columns past q + offset are hidden (an offset below -q hides all).
    int visible = clamp(int(q) + pc.causal_offset + 1, 0, int(pc.axis));
    return RowAttention(mask_row * pc.axis, CAUSAL ? uint(visible) : pc.axis, slope);
}

// The mask's term: slope * mask with ALIBI, else the mask itself (the
// slope is 1, so the logit is the same either way).
float slope_times(RowAttention a, float m) { return ALIBI ? a.slope * m : m; }
vec4 slope_times(RowAttention a, vec4 m) { return ALIBI ? a.slope * m : m; }

// z of the element at column `col` of the row (an element of the row:
// callers never pass the -inf that stands for a missing one, whose mask
// element may not exist). A hidden column reads no mask.
float attend(RowAttention a, uint col, float x) {
    if (CAUSAL && col >= a.visible) return vksm_neg_inf();
    float z = SCALE_IN_EXP ? x : x * pc.scale;
    return MASK != MASK_NONE ? z + slope_times(a, mask_value(a.mask_base + col)) : z;
}
// The same for columns col .. col + 3 with the mask's bits w (from
// load_mask4(); unread where the vector form does not apply, and each
// column then reads its own). Rows of whole vectors (VEC 4 or 8, not
// ODD_ROWS) have rows a multiple of 4 long and col a multiple of 4, so
// their mask elements come as one vector access: read element by element,
// the fp16 mask cost 2x the time of the softmax itself (H200, (8,32,512,512)).
// Tiles that load every vector before any takes its logits
// (load_attention_tile(), softmax_tiles.glsl) pass the bits they loaded;
// attend4() loads them itself.
bool mask4_whole(RowAttention a, uint col) {
    return MASK != MASK_NONE && VEC >= 4u && !ODD_ROWS && (!CAUSAL || col + 3u < a.visible);
}
uvec4 load_mask4(RowAttention a, uint col) {
    uint e = a.mask_base + col;
    if (MASK == MASK_F32) return floatBitsToUint(mask_f32x4[e >> 2]);
    return uvec4(mask_f16x4[e >> 2], 0u, 0u);
}
vec4 attend4_loaded(RowAttention a, uint col, vec4 v, uvec4 w) {
    if (mask4_whole(a, col))
        return v * pc.scale + slope_times(a, MASK == MASK_F32 ? uintBitsToFloat(w) : vec4(mask_pair(w.x), mask_pair(w.y)));
    for (uint c = 0u; c < 4u; ++c) v[c] = attend(a, col + c, v[c]);
    return v;
}
vec4 attend4(RowAttention a, uint col, vec4 v) {
    return attend4_loaded(a, col, v, mask4_whole(a, col) ? load_mask4(a, col) : uvec4(0u));
}

// Columns col .. col + 7 (col a multiple of 8: VEC 8 rows) into lo and hi:
// a 16-bit mask in one 16-byte access, as wide as the row's own. The same
// two forms: with the bits loaded (load_mask8()), or loading them.
bool mask8_whole(RowAttention a, uint col) {
    return (MASK == MASK_F16 || MASK == MASK_BF16) && !ODD_ROWS && (!CAUSAL || col + 7u < a.visible);
}
uvec4 load_mask8(RowAttention a, uint col) { return mask_f16x8[(a.mask_base + col) >> 3]; }
void attend8_loaded(RowAttention a, uint col, uvec4 w, inout vec4 lo, inout vec4 hi) {
    if (mask8_whole(a, col)) {
        lo = lo * pc.scale + slope_times(a, vec4(mask_pair(w.x), mask_pair(w.y)));
        hi = hi * pc.scale + slope_times(a, vec4(mask_pair(w.z), mask_pair(w.w)));
        return;
    }
    lo = attend4(a, col, lo);
    hi = attend4(a, col + 4u, hi);
}
void attend8(RowAttention a, uint col, inout vec4 lo, inout vec4 hi) {
    attend8_loaded(a, col, mask8_whole(a, col) ? load_mask8(a, col) : uvec4(0u), lo, hi);
}

// The sink of row r's head as a statistic: a finite sink is one element of
// the normaliser, -inf none, a NaN or +inf poisons the row (as an element
// would).
VksmStat sink_stat(uint r) {
    if (!SINKS) return vksm_stat_empty();
    float s = sink[row_head(r)];
    uint c = vksm_classify(s);
    if (c == VKSM_C_POISON) return VksmStat(-VKSM_FLT_MAX, 0.0, VKSM_F_POISON);
    // In x's units where the scale is in the exp (the host sets SCALE_IN_EXP
    // with sinks only at a scale of 1 or more, so s / scale stays finite).
    if (SCALE_IN_EXP) s /= pc.scale;
    return c == VKSM_C_FINITE ? VksmStat(s, 1.0, VKSM_F_FINITE) : vksm_stat_empty();
}

// Row r's statistic with its sink merged in.
VksmStat with_sink(uint r, VksmStat s) { return SINKS ? vksm_stat_merge(s, sink_stat(r)) : s; }

// Row r's log-sum-exp (with its sink): NaN where the row's outputs are.
void store_lse(uint r, VksmStat s) {
    if (!LSE) return;
    bool bad = row_bad(s.f, s.d);
    // With SCALE_IN_EXP, m is x's max: the logits' is s times it.
    float m = SCALE_IN_EXP ? pc.scale * s.m : s.m;
    lse[r + pc.first_row] = bad ? vksm_nan() : m + log(s.d);
}

// The sink in a row's max and flags, before the row's exps are taken
// against the max (the paths that hold the row in registers)...
void sink_into_max(uint r, inout float m, inout uint f) {
    VksmStat k = sink_stat(r);
    m = max(m, k.m);
    f |= k.f;
}
// ... and its term of the normaliser once the max is known.
float sink_term(uint r, float m) {
    if (!SINKS) return 0.0;
    VksmStat k = sink_stat(r);  // d = 0 where the sink is -inf
    return k.d * vksm_scaled_exp(k.m - m);
}

// Row r's statistic as its outputs take it (with its sink), its
// log-sum-exp stored by the `writer` invocation.
VksmStat finish_row(uint r, VksmStat s, bool writer) {
    s = with_sink(r, s);
    if (writer) store_lse(r, s);
    return s;
}
