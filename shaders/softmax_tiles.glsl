// The tiles of a row held in vec4 slots: a window onto a row (Span), its
// loads and stores (whole vectors, or the head and tail of an ODD_ROWS row
// element by element), the lane's statistic of a tile, and a span's
// statistic and write tile by tile. Included by softmax.comp,
// softmax_backward.comp and softmax_single_pass.comp after
// softmax_common.glsl.

// The vec4 slots this invocation holds: a tile's elements, then its outputs.
vec4 slots[SLOTS];

// Elements [first, end) of a window onto a row: the window starts at
// element `base` of the tensor, its neighbours `stride` apart. It starts at
// the row's first element (first = 0) unless ODD_ROWS; the single-pass
// path's chunks and the backward split's are windows of their own (end at
// the chunk's end). The forward split's chunks are whole rows' tiles
// interleaved (softmax.comp).
// With ATTENTION a span also carries its row's share of the options, and
// every element is turned into its logit as it is loaded (ATTEND, ATTEND4:
// column `col` of the row); without, they are the element itself.
#ifdef ATTENTION
#include "softmax_attention.glsl"
struct Span { uint base; uint stride; uint first; uint end; RowAttention attn; };
#define ATTEND(row, col, x) attend(row.attn, col, x)
// Causal tiles (no mask buffer) of more than 4 slots load every vector,
// each behind its branch as before, and take the logits in a loop of their
// own after: the loads of one tile then issue together. H200, causal, us
// (bench/NOTES.md, v77): f16 (1, 32, 2048, 2048), workgroup rows of 8
// slots, 114.4 -> 109.2, bf16 121.8 -> 118.9; f16 (1, 1, 8192, 8192) at 16
// slots 74.3 -> 65.6. At 4 slots ((8, 32, 512, 512)) slower, f16 58.4 ->
// 61.3, bf16 63.8 -> 67.4, so those keep their logits beside their loads,
// as do single-pass chunks (not timed in this form) and fp32 workgroup
// rows (level). Subgroup rows of 8 slots are faster so (v78: f16 (1, 32,
// 1024, 1024) 32.0 -> 29.5, bf16 33.5 -> 31.8, fp32 53.9 -> 53.1), but
// lavapipe takes 18 s against 10 to compile the f16 module at subgroup
// size 16: subgroup rows take this form with TILE_LOADS_TOGETHER only.
#ifdef SINGLE_PASS
const bool ATTENTION_LOGITS_AFTER = false;
#else
const bool ATTENTION_LOGITS_AFTER = CAUSAL && MASK == MASK_NONE && SLOTS > 4u &&
                                    (SUBGROUP_ROWS ? TILE_LOADS_TOGETHER && VEC >= 4u : VEC == 8u);
#endif
bool attention_logits_after() { return ATTENTION_LOGITS_AFTER; }
// A whole 4-wide vector's logits as load_slot() loads it, unless its tile
// takes them after all of its loads (load_tile()).
#define ATTEND4(row, col, v) (attention_logits_after() ? (v) : attend4(row.attn, col, v))
// Where a span's loads end: a causal row's columns past q + offset are
// -inf whatever they hold, so they are not read (their outputs are still
// written).
#define LOAD_END(row) (CAUSAL ? min(row.end, row.first + row.attn.visible) : row.end)
// A row's sink and log-sum-exp, where its statistic is complete.
#define SINK_INTO_MAX(r, m, f) sink_into_max(r, m, f)
#define ADD_SINK(r, m, d) d += sink_term(r, m)
#define STORE_LSE(r, s, writer) if (writer) store_lse(r, s)
#define FINISH_ROW(r, s, writer) finish_row(r, s, writer)
// The row that the i-th row handed out is (QUERY_MAJOR).
#define ROW_IN_ORDER(i) row_in_order(i)
#else
#ifdef BACKWARD
#include "softmax_backward.glsl"
#endif
struct Span { uint base; uint stride; uint first; uint end; };
#define ATTEND(row, col, x) (x)
#define ATTEND4(row, col, v) (v)
#define LOAD_END(row) row.end
#define SINK_INTO_MAX(r, m, f)
#define ADD_SINK(r, m, d)
#define STORE_LSE(r, s, writer)
#define FINISH_ROW(r, s, writer) (s)
#define ROW_IN_ORDER(i) (i)
#endif
// The loads below read binding 0, or with BACKWARD the gradient where
// their SOURCE argument says so (softmax_backward.glsl); elements outside
// a span read as MISSING (-inf, which every step of the statistic treats
// as contributing nothing; with BACKWARD, 0).
#ifndef BACKWARD
#define SOURCE_PARAM
#define SOURCE_ARG
#define LOAD1(i) load1(i)
#define LOAD4(i) load4(i)
#define LOAD8(i, a, b) load8(i, a, b)
#define MISSING vksm_neg_inf()
#endif

// Window index i .. i + 3 of an ODD_ROWS span element by element: the
// vectors its row only partly covers (its head and tail), which hold
// elements of the neighbouring rows too. Elements outside [first, end)
// read as -inf and are never read.
vec4 load_part(Span row, uint i SOURCE_PARAM) {
    vec4 o;
    for (uint c = 0u; c < 4u; ++c)
        o[c] = i + c >= row.first && i + c < LOAD_END(row) ? ATTEND(row, i + c - row.first, LOAD1(row.base + i + c))
                                                     : MISSING;
    return o;
}

// Writes the elements of window index i .. i + 3 that lie in [first, end),
// one by one, leaving the neighbouring rows' elements alone.
void store_part(Span row, uint i, vec4 v) {
    for (uint c = 0u; c < 4u; ++c)
        if (i + c >= row.first && i + c < row.end) store1(row.base + i + c, v[c]);
}

// Whether the VEC elements at window index i are a whole vector of the
// span's (else its head or tail, or past its end).
bool whole_vector(Span row, uint i) { return !ODD_ROWS || (i >= row.first && i + VEC <= row.end); }

// Window index of the lane's vector `number` (VEC elements each) of the
// tile at tile_begin: the lanes' vectors lie side by side, so that the
// lanes' accesses to one vector number are contiguous.
uint tile_vector(uint tile_begin, uint number, uint lanes, uint lane) { return tile_begin + VEC * (number * lanes + lane); }

#if defined(STORAGE_16BIT) && !defined(ATTENTION) && !defined(BACKWARD) && !defined(SINGLE_PASS)
// Forward 16-bit ODD_ROWS rows on the row paths, in 8-byte windows at more
// than 8 slots (8 on workgroup rows), load every vector of a tile's window
// whole, the head and tail they share with their neighbouring rows
// included (those rows' elements then read as MISSING), so that no load
// waits behind another's branch. H200 (NVIDIA 580.159.04), us, element by
// element -> whole: f16 1x4095 (128 x 9 slots) 5.93 -> 5.14, 1x12287
// (256 x 13) 7.56 -> 6.52, 1280x12887 46.0 -> 35.3; bf16 1280x12887 64.6
// -> 57.4 (bench/NOTES.md, v69); workgroup rows at 8 slots (v72), f16 /
// bf16: 1024x8189 (256 x 8) 14.22 / 14.75 -> 13.35 / 14.18, 8x8189 6.03 /
// 6.12 -> 5.22 / 5.25, 64x16381 (512 x 8) 6.94 / 7.18 -> 6.29 / 6.52.
// Slower where measured otherwise (v69): at 4 slots and a subgroup's 8
// (f16 1x16383, 1024 x 4: 6.45 -> 7.25; bf16 4096x1009, a subgroup's 8
// slots: 8.17 -> 9.31), every fp32 row (1x12287 5.70 -> 6.10, 4096x1009
// 9.39 -> 10.68; workgroup rows at 8 slots, v72: 1024x8189 20.94 -> 22.72)
// and 16-byte windows (single-pass chunks: level to 3% slower).
// Attention rows keep the element-by-element head and tail: a column
// outside the row has no mask element to read.
#define VKSM_WHOLE_WINDOW_LOADS
const bool WHOLE_WINDOW_LOADS = ODD_ROWS && VEC == 4u && (SLOTS > 8u || (SLOTS == 8u && !SUBGROUP_ROWS));
// Read through this function wherever it is read: glslang 12 emits the
// constant's specialization operation in the first function body that
// reads it, so that another function's read fails spirv-val.
bool whole_window_loads() { return WHOLE_WINDOW_LOADS; }

// The 8-byte vectors binding 0 holds whole: it holds the tensor's rows x
// axis elements (ODD_ROWS rows are contiguous), so the tensor's last
// vector may end past it.
uint whole_vectors() { return pc.rows * pc.axis / 4u; }

// The tile at tile_begin of an ODD_ROWS span, every window vector whole
// but the tensor's last where it ends past the binding: that one, after the
// others are in flight, element by element.
void load_whole_windows(Span row, uint tile_begin, uint lanes, uint lane) {
    for (uint j = 0u; j < SLOTS; ++j) {
        uint i = tile_vector(tile_begin, j, lanes, lane);
        vec4 v = i < row.end && (row.base + i) / 4u < whole_vectors() ? LOAD4((row.base + i) / 4u) : vec4(MISSING);
        for (uint c = 0u; c < 4u; ++c) v[c] = i + c >= row.first && i + c < row.end ? v[c] : MISSING;
        slots[j] = v;
    }
    for (uint j = 0u; j < SLOTS; ++j) {
        uint i = tile_vector(tile_begin, j, lanes, lane);
        if (i < row.end && (row.base + i) / 4u >= whole_vectors()) slots[j] = load_part(row, i);
    }
}
#endif

// Slot j of the tile at tile_begin, for 1- and 4-wide accesses; missing
// elements read as -inf.
vec4 load_slot(Span row, uint tile_begin, uint j, uint lanes, uint lane SOURCE_PARAM) {
    if (VEC == 4u) {
        uint i = tile_vector(tile_begin, j, lanes, lane);
        if (!whole_vector(row, i)) return load_part(row, i SOURCE_ARG);
        return i < LOAD_END(row) ? ATTEND4(row, i - row.first, LOAD4((row.base + i) >> 2)) : vec4(MISSING);
    }
    vec4 o;
    for (uint c = 0u; c < 4u; ++c) {
        uint i = tile_begin + (j * 4u + c) * lanes + lane;
        o[c] = i < LOAD_END(row) ? ATTEND(row, i, LOAD1(row.base + i * row.stride)) : MISSING;
    }
    return o;
}

#ifdef ATTENTION
// The tile at tile_begin of a masked attention span of whole vectors:
// every vector of x and of its mask elements is loaded before any takes
// its logits, and behind no branch (a vector past the span's loads reads
// the span's first instead, and its elements read as MISSING). With a
// vector's loads and logits in a branch of its own, NVIDIA's compiler
// (580.159.04) issues each vector's loads only once the vector before has
// used its own, one memory latency after another. H200, us, in a branch
// each -> loaded first (bench/NOTES.md, v76): masked fp32 (1, 32, 2048,
// 2048) 282.5 -> 267.6, (8, 32, 512, 512) 135.0 -> 131.9; f16 (1, 1, 8192,
// 8192) at 16 slots 131.3 -> 117.0, bf16 134.5 -> 121.7. Where it was
// slower, the branches stay: 16-bit rows of up to 8 slots ((8, 32, 512,
// 512) f16 72.3 -> 80.2, bf16 74.9 -> 80.8; rows of 2048 level) and rows
// without a mask (causal f16 (1, 32, 2048, 2048) 114.4 -> 142.4, its hidden
// vectors loaded too). 16-bit subgroup rows of 8 slots are faster loaded
// first (v78: f16 (1, 32, 1024, 1024) 42.2 -> 41.0, bf16 44.0 -> 42.1), but
// lavapipe takes 4x as long to compile them (58 s against 13, f16,
// subgroup size 16): they are loaded first with TILE_LOADS_TOGETHER only.
// Loaded first, a 16-bit mask row of 2048 still takes 164 us against 129
// unmasked.
#ifdef STORAGE_16BIT
const bool ATTENTION_LOADS_FIRST = (MASK == MASK_F16 || MASK == MASK_BF16) && !ODD_ROWS && VEC == 8u &&
                                   (SLOTS > 8u || (SLOTS == 8u && SUBGROUP_ROWS && TILE_LOADS_TOGETHER));
#else
const bool ATTENTION_LOADS_FIRST = MASK != MASK_NONE && !ODD_ROWS && VEC == 4u;
#endif
// Read through this function (glslang 12 emits a specialization constant's
// operation in the first function body that reads it).
bool attention_loads_first() { return ATTENTION_LOADS_FIRST; }
void load_attention_tile(Span row, uint tile_begin, uint lanes, uint lane) {
    const uint step = VEC / 4u;  // the slots one vector fills
    uvec4 mask_bits[SLOTS];
    [[unroll]] for (uint j = 0u; j + step <= SLOTS; j += step) {
        uint i = tile_vector(tile_begin, j / step, lanes, lane);
        bool loaded = i < LOAD_END(row);
        uint at = loaded ? i : row.first;
        vec4 a, b;
        if (VEC == 8u) {
            LOAD8((row.base + at) >> 3, a, b);
            if (MASK == MASK_F16 || MASK == MASK_BF16) mask_bits[j] = load_mask8(row.attn, at - row.first);
        } else {
            a = LOAD4((row.base + at) >> 2);
            if (MASK != MASK_NONE) mask_bits[j] = load_mask4(row.attn, at - row.first);
        }
        slots[j] = loaded ? a : vec4(MISSING);
        if (VEC == 8u) slots[j + 1u] = loaded ? b : vec4(MISSING);
    }
    [[unroll]] for (uint j = 0u; j + step <= SLOTS; j += step) {
        uint i = tile_vector(tile_begin, j / step, lanes, lane);
        if (i >= LOAD_END(row)) continue;
        if (VEC == 8u)
            attend8_loaded(row.attn, i - row.first, mask_bits[j], slots[j], slots[j + 1u]);
        else
            slots[j] = attend4_loaded(row.attn, i - row.first, slots[j], mask_bits[j]);
    }
}
#endif

// The 8-byte loads of an ODD_ROWS tile as load_tile() takes its 16-byte
// ones: every whole vector first, then the head and tail. H200, us: f16 /
// bf16 4096x1009 (a subgroup's 8 slots) 8.36 / 8.29 -> 7.53 / 7.64,
// backward 10.30 / 10.90 -> 9.31 / 10.45; backward 1024x8189 (256 x 8)
// 32.7 / 34.0 -> 19.3 / 20.3. fp32 rows keep load_slot(): in this form
// NVIDIA's compiler (580.159.04) gave NaN rows on fp32 workgroup rows
// (f32 1024x8189, 3x2045, 2x4097; bench/NOTES.md, v83). Nor masked 16-bit
// subgroup rows (their mask read element by element): in this form every
// output of f16 (1, 1, 15, 255) and 255x255 / 257x257 under an fp16 mask,
// at 128 x 3 slots, came out NaN on that driver, 200 times in 200 seeds
// (fast exp, NaN found by the row's sum), where load_slot() passed 1200 of
// 1200 and every attention subgroup-row case (bench/NOTES.md, v110).
#if defined(STORAGE_16BIT) && defined(ATTENTION)
const bool PARTS_AFTER_WHOLE4 = MASK == MASK_NONE || !SUBGROUP_ROWS;
#elif defined(STORAGE_16BIT)
const bool PARTS_AFTER_WHOLE4 = true;
#else
const bool PARTS_AFTER_WHOLE4 = false;
#endif
void load_whole4_then_parts(Span row, uint tile_begin, uint lanes, uint lane SOURCE_PARAM) {
    for (uint j = 0u; j < SLOTS; ++j) {
        uint i = tile_vector(tile_begin, j, lanes, lane);
        slots[j] = whole_vector(row, i) && i < LOAD_END(row) ? ATTEND4(row, i - row.first, LOAD4((row.base + i) >> 2))
                                                             : vec4(MISSING);
    }
    for (uint j = 0u; j < SLOTS; ++j) {
        uint i = tile_vector(tile_begin, j, lanes, lane);
        if (!whole_vector(row, i) && i < LOAD_END(row)) slots[j] = load_part(row, i SOURCE_ARG);
    }
}

// Loads the tile at tile_begin of the span into the slots; missing
// elements read as -inf, which every later step treats as contributing
// nothing. One function on purpose: with its 8-wide and 4-wide branches
// as two functions (the same statements) NVIDIA's driver (580.159.04,
// H100) ran f16 single-pass rows not a multiple of 8 long 1.6-4.4%
// slower (8x151937 7.09-7.12 -> 7.40-7.43 us, 1x131071 5.48 ->
// 5.65-5.66, 1x524289 7.36-7.38 -> 7.46-7.50; bench/NOTES.md, v113).
void load_tile(Span row, uint tile_begin, uint lanes, uint lane SOURCE_PARAM) {
#ifdef VKSM_WHOLE_WINDOW_LOADS
    if (whole_window_loads()) {
        load_whole_windows(row, tile_begin, lanes, lane);
        return;
    }
#endif
#ifdef ATTENTION
    if (attention_loads_first()) {
        load_attention_tile(row, tile_begin, lanes, lane);
        return;
    }
#endif
    if (VEC == 8u) {
        // One 16-byte access fills a pair of slots (the plan keeps SLOTS even).
        UNROLL_TILE_LOADS for (uint j = 0u; j + 1u < SLOTS; j += 2u) {
            uint i = tile_vector(tile_begin, j >> 1, lanes, lane);
            vec4 a = vec4(MISSING), b = vec4(MISSING);
            if (whole_vector(row, i) && i < LOAD_END(row)) {
                LOAD8((row.base + i) >> 3, a, b);
#ifdef ATTENTION
                if (!attention_logits_after()) attend8(row.attn, i - row.first, a, b);
#endif
            }
            slots[j] = a;
            slots[j + 1u] = b;
        }
        // An ODD_ROWS span's head and tail, element by element, once the
        // tile's whole vectors are loaded. H200 (580.159.04), us, parts in
        // the loop under an if-else with the whole vectors -> after it:
        // f16 1x524289 8.19 -> 7.28, 8x151937 7.91 -> 7.05, 1x131071 5.87
        // -> 5.33; backward f16 1x524289 8.29 -> 6.46, 16x100003 8.26 ->
        // 6.81; rows a multiple of 8 long within 2% (bench/NOTES.md, v83).
        if (ODD_ROWS) {
            UNROLL_TILE_LOADS for (uint j = 0u; j + 1u < SLOTS; j += 2u) {
                uint i = tile_vector(tile_begin, j >> 1, lanes, lane);
                if (!whole_vector(row, i) && i < LOAD_END(row)) {
                    slots[j] = load_part(row, i SOURCE_ARG);
                    slots[j + 1u] = load_part(row, i + 4u SOURCE_ARG);
                }
            }
        }
#ifdef ATTENTION
        if (attention_logits_after()) {
            UNROLL_TILE_LOADS for (uint j = 0u; j + 1u < SLOTS; j += 2u) {
                uint i = tile_vector(tile_begin, j >> 1, lanes, lane);
                if (whole_vector(row, i) && i < LOAD_END(row)) attend8(row.attn, i - row.first, slots[j], slots[j + 1u]);
            }
        }
#endif
    } else {
        if (VEC == 4u && ODD_ROWS && PARTS_AFTER_WHOLE4)
            load_whole4_then_parts(row, tile_begin, lanes, lane SOURCE_ARG);
        else
            for (uint j = 0u; j < SLOTS; ++j) slots[j] = load_slot(row, tile_begin, j, lanes, lane SOURCE_ARG);
#ifdef ATTENTION
        if (VEC == 4u && attention_logits_after()) {
            for (uint j = 0u; j < SLOTS; ++j) {
                uint i = tile_vector(tile_begin, j, lanes, lane);
                if (whole_vector(row, i) && i < LOAD_END(row)) slots[j] = attend4(row.attn, i - row.first, slots[j]);
            }
        }
#endif
    }
}

// This lane's max over the finite elements of slots [j0, j1), and flags:
// three instructions per element instead of a classification (the fp16 row
// shapes are bound by per-element work: bench/NOTES.md). The float
// max is exact for finite and -inf elements; NaN and +inf (poison) are
// told by two integer maxima of the bits (+inf and positive NaNs are the
// largest signed patterns, negative NaNs the unsigned ones above -inf), so
// the max's value does not matter when there is one.
// With BY_SUM the bits' maxima are left unread (the compiler drops them)
// and the row's NaN and +inf are found in its sum instead.
VksmStat lane_max_and_flags(uint j0, uint j1) {
    float m = vksm_neg_inf();
    uint hu = 0u;
    int hi = -2147483647 - 1;
    for (uint j = j0; j < j1; ++j)
        for (uint c = 0u; c < 4u; ++c) {
            float x = slots[j][c];
            m = max(m, x);
            hu = max(hu, floatBitsToUint(x));
            hi = max(hi, floatBitsToInt(x));
        }
    if (!BY_SUM && (hu > 0xff800000u || hi >= 0x7f800000)) return VksmStat(-VKSM_FLT_MAX, 0.0, VKSM_F_POISON);
    // Only -inf (or no element) left when the max is -inf.
    if (floatBitsToUint(m) == 0xff800000u) return VksmStat(-VKSM_FLT_MAX, 0.0, 0u);
    return VksmStat(m, 0.0, VKSM_F_FINITE);
}

// d plus exp((x - m) / T) of slot j's four elements, added in order (-inf
// gives exactly 0), each exp left in its slot where `keep`: a row or chunk
// held in the slots then writes its outputs by one multiply each instead of
// a second exp. One slot per call: a form over a range of slots, called
// with [j, j + 1) by KIND_ROWS_PER_SLOT, gave the rows of slot 0
// non-finite outputs on lavapipe (Mesa 22.3.6).
float add_slot_exps(float d, uint j, float m, bool keep) {
    for (uint c = 0u; c < 4u; ++c) {
        float e = vksm_element_exp(slots[j][c] - m);
        d += e;
        if (keep) slots[j][c] = e;
    }
    return d;
}

// This lane's statistic of the tile held in its slots.
VksmStat lane_tile_statistic() {
    VksmStat s = lane_max_and_flags(0u, SLOTS);
    for (uint j = 0u; j < SLOTS; ++j) s.d = add_slot_exps(s.d, j, s.m, false);
    return s;
}

// The output of slot j given the row's statistic. `exps`: the slots
// already hold exp((x - m) / T) (single-tile softmax).
vec4 slot_output(uint j, VksmStat s, bool exps, float inv_d, float log_d, bool bad) {
#ifdef BACKWARD
    return gradient_output(j, s.d);  // s.d: the row's sum (softmax_backward.glsl)
#else
    vec4 o;
    for (uint c = 0u; c < 4u; ++c) {
        float x = slots[j][c];
        if (exps) o[c] = x * inv_d;
        else if (LOG) o[c] = vksm_classify(x) == VKSM_C_FINITE ? vksm_log_shift(x, s.m) - log_d : vksm_neg_inf();
        else o[c] = vksm_element_exp(x - s.m) * inv_d;
        o[c] = bad ? vksm_nan() : o[c];
    }
    return o;
#endif
}

// Writes slot j given its row's statistic, at the place of slot p of the
// tile at tile_begin (1- and 4-wide accesses). A 4-wide output is computed
// only where it is stored: computing outputs first made no fp32 row faster,
// and gave NaN rows in some geometries on NVIDIA 580.159.04 (bench/NOTES.md).
void write_slot(Span row, uint tile_begin, uint p, uint lanes, uint lane, uint j, VksmStat s, bool exps, float inv_d,
                float log_d, bool bad) {
    if (VEC == 4u) {
        uint i = tile_vector(tile_begin, p, lanes, lane);
        if (!whole_vector(row, i)) store_part(row, i, slot_output(j, s, exps, inv_d, log_d, bad));
        else if (i < row.end) store4((row.base + i) >> 2, slot_output(j, s, exps, inv_d, log_d, bad));
        return;
    }
    vec4 o = slot_output(j, s, exps, inv_d, log_d, bad);
    for (uint c = 0u; c < 4u; ++c) {
        uint i = tile_begin + (p * 4u + c) * lanes + lane;
        if (i < row.end) store1(row.base + i * row.stride, o[c]);
    }
}

// Forward bf16 ODD_ROWS rows in 4-wide windows unroll their write loop
// from WRITE_ODD_MIN_SLOTS slots (log-softmax: WRITE_ODD_MIN_SLOTS_LOG).
// Left to itself, NVIDIA's compiler (580.159.04) kept that loop rolled
// there, with the rounding's code in it, and the slots went to local
// memory (16 bytes a slot: 112 at 7 slots, 208 at 13). H200, us, rolled ->
// unrolled (bench/NOTES.md, v102): log-softmax 4096x777 (a subgroup's 7
// slots) 12.15 -> 8.24, 4096x1009 13.43 -> 9.09, 1024x8189 (256 x 8) 24.34
// -> 16.49, 1280x12887 (256 x 13) 49.98 -> 39.38; softmax 1024x6143 (128 x
// 13) 25.68 -> 13.97, 1280x12887 57.79 -> 36.05. Below those counts
// softmax kept its slots in registers and was level or up to 5% slower
// unrolled, and unrolled at 4 slots it gave rows of NaN (64 x 4, rows of
// 1009; 128 x 4, 2045). fp16 and fp32 modules unroll these loops
// themselves; the backward modules keep theirs (mixed, -14% to +34%).
const uint WRITE_ODD_MIN_SLOTS = 9u, WRITE_ODD_MIN_SLOTS_LOG = 7u;
#if defined(STORAGE_BF16) && !defined(BACKWARD) && !defined(SINGLE_PASS) && !defined(ATTENTION)
const bool UNROLL_ODD_WRITES = ODD_ROWS && VEC == 4u && SLOTS >= (LOG ? WRITE_ODD_MIN_SLOTS_LOG : WRITE_ODD_MIN_SLOTS);
#define UNROLL_ODD_WRITE_LOOP [[unroll]]
#else
const bool UNROLL_ODD_WRITES = false;
#define UNROLL_ODD_WRITE_LOOP
#endif
bool unroll_odd_writes() { return UNROLL_ODD_WRITES; }

// WRITE_SHARES workgroups hold each row (KIND_ROW_IN_REGISTERS alone):
// every one reads the whole row and takes its statistic, and writes only
// its share of the outputs, the stores (16-byte pairs of 16-bit slots,
// else slots) u with u % WRITE_SHARES == the workgroup's share. No
// workgroup waits on another, where the single-pass path's handshake
// costs 1.7 us over the floor before a row has any size (bench/NOTES.md,
// v117); the row is read WRITE_SHARES times, from L2 after the first. For
// rows of 8193-16384 elements in small batches on an H100, 1-13% faster
// than one workgroup a row or the single-pass path (v124-v126).
// A share past the last store writes nothing; the stores are covered
// whatever the slot count.
layout(constant_id = SPEC_ID_WRITE_SHARES) const uint WRITE_SHARES = 1u;
uint write_share = 0u;  // this workgroup's share (main())
bool writes_store(uint store) { return WRITE_SHARES == 1u || store % WRITE_SHARES == write_share; }

// Writes the tile held in the slots given the row's statistic. With 16-byte
// fp16 accesses every output is computed (into the slots) before the first
// store: computing each store's outputs just before it made those rows
// 1.6-2.5x slower on NVIDIA. Narrower accesses keep the interleaved form
// (write_slot).
void write_tile(Span row, uint tile_begin, uint lanes, uint lane, VksmStat s, bool exps) {
    bool bad = row_bad(s.f, s.d);
    float inv_d = 1.0 / s.d;
    float log_d = log(s.d);
    if (VEC == 8u) {
        UNROLL_SLOTS for (uint j = 0u; j < SLOTS; ++j) slots[j] = slot_output(j, s, exps, inv_d, log_d, bad);
        UNROLL_SLOTS for (uint j = 0u; j + 1u < SLOTS; j += 2u) {
            uint i = tile_vector(tile_begin, j >> 1, lanes, lane);
            if (writes_store(j >> 1) && whole_vector(row, i) && i < row.end) store8((row.base + i) >> 3, slots[j], slots[j + 1u]);
        }
        // An ODD_ROWS span's head and tail after its whole vectors, as
        // load_tile() reads them.
        if (ODD_ROWS) {
            UNROLL_SLOTS for (uint j = 0u; j + 1u < SLOTS; j += 2u) {
                uint i = tile_vector(tile_begin, j >> 1, lanes, lane);
                if (writes_store(j >> 1) && !whole_vector(row, i) && i < row.end) {
                    store_part(row, i, slots[j]);
                    store_part(row, i + 4u, slots[j + 1u]);
                }
            }
        }
    } else if (unroll_odd_writes()) {
        UNROLL_ODD_WRITE_LOOP for (uint j = 0u; j < SLOTS; ++j)
            if (writes_store(j)) write_slot(row, tile_begin, j, lanes, lane, j, s, exps, inv_d, log_d, bad);
    } else {
        for (uint j = 0u; j < SLOTS; ++j)
            if (writes_store(j)) write_slot(row, tile_begin, j, lanes, lane, j, s, exps, inv_d, log_d, bad);
    }
}

#ifndef BACKWARD
// The group's statistic of the span from `begin` (a multiple of the tile)
// to its end, read tile by tile (a row longer than one tile, and a
// single-pass chunk that is not held).
VksmStat span_stat(Span row, uint begin, uint tile, uint lanes, uint lane) {
    VksmStat s = vksm_stat_empty();
    uint tiles = (row.end - begin + tile - 1u) / tile;
    for (uint t = 0u; t < tiles; ++t) {
        load_tile(row, begin + t * tile, lanes, lane);
        s = vksm_stat_merge(s, lane_tile_statistic());
    }
    return group_stat(s);
}

// Writes the span from `begin` given the row's statistic, re-reading it
// last tile first: those were read last by span_stat, so they are the
// likeliest to still be in L2.
void span_write(Span row, uint begin, uint tile, uint lanes, uint lane, VksmStat s) {
    for (uint t = (row.end - begin + tile - 1u) / tile; t > 0u; --t) {
        uint t0 = begin + (t - 1u) * tile;
        load_tile(row, t0, lanes, lane);
        write_tile(row, t0, lanes, lane, s, false);
    }
}
#else
// The backward pass's spans (softmax_backward.comp, and the single-pass
// module built with BACKWARD): a row's statistic is one sum, its output dx.

// The group's sum, known to every lane. group_add()'s shared slots may be
// written again once the next reduction's barrier has passed; forward rows
// alternate two reductions, this pass takes sums back to back, so each
// ends with a barrier of its own.
float group_sum(float v) {
    v = group_add(v);
    if (!SUBGROUP_ROWS) barrier();
    return v;
}

// The tile at tile_begin of the span: dy into grads, y into slots.
void load_pair(Span row, uint tile_begin, uint lanes, uint lane) {
    load_tile(row, tile_begin, lanes, lane, true);
    for (uint j = 0u; j < SLOTS; ++j) grads[j] = slots[j];
    load_tile(row, tile_begin, lanes, lane, false);
}

// The row's sum as the tile functions take a statistic.
VksmStat sum_stat(float sum) { return VksmStat(0.0, sum, VKSM_F_FINITE); }

// The group's sum over the span from `begin` to its end, tile by tile,
// and with SINKS its mass (lane_mass()): (sum, mass).
vec2 span_sum(Span row, uint begin, uint tile, uint lanes, uint lane) {
    float s = 0.0, mass = 0.0;
    for (uint t0 = begin; t0 < row.end; t0 += tile) {
        load_pair(row, t0, lanes, lane);
        s += lane_sum(0u, SLOTS);
        if (SINKS) mass += lane_mass(0u, SLOTS);
    }
    s = group_sum(s);
    return vec2(s, SINKS ? group_sum(mass) : 0.0);
}

// Writes dx over the span from `begin` given the row's sum, re-reading y
// and dy last tile first (the likeliest to be in L2 still).
void span_write_gradient(Span row, uint begin, uint tile, uint lanes, uint lane, float sum) {
    for (uint t = (row.end - begin + tile - 1u) / tile; t > 0u; --t) {
        uint t0 = begin + (t - 1u) * tile;
        load_pair(row, t0, lanes, lane);
        write_tile(row, t0, lanes, lane, sum_stat(sum), false);
    }
}
#endif

// First element of row r (rows = outer * inner, neighbours `inner` apart).
uint row_base(uint r) {
    uint o = r / pc.inner;
    return o * pc.axis * pc.inner + (r - o * pc.inner);
}

// Row r's window: an ODD_ROWS row starts `base % VEC` elements into it.
Span row_span(uint r) {
    uint base = row_base(r);
    uint first = ODD_ROWS ? base % VEC : 0u;
#ifdef ATTENTION
    return Span(base - first, pc.inner, first, first + pc.axis, row_attention(r));
#else
    return Span(base - first, pc.inner, first, first + pc.axis);
#endif
}

// The longest window of a row: ODD_ROWS rows may start VEC - 1 elements in.
uint longest_window() { return pc.axis + (ODD_ROWS ? VEC - 1u : 0u); }
