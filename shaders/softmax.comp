#version 450
#extension GL_GOOGLE_include_directive : require
// Softmax / log-softmax over one axis of a (outer, axis, inner) tensor.
// KIND_ROW_IN_REGISTERS: a group (subgroup or workgroup) owns a row. A row
//   that fits one tile is read once into registers and written once; a
//   longer one (possible when the subgroup the driver gives is smaller than
//   planned) is folded tile by tile into (m, d) and then re-read.
// KIND_ROW_IN_TILES: the same for rows the plan knows are longer than a tile.
// KIND_ROWS_PER_SLOT: a subgroup holds SLOTS rows of at most 4 x its size,
//   one per slot; with USE_SHUFFLE, each ROW_LANES lanes of it hold SLOTS
//   rows of at most 4 x ROW_LANES.
// KIND_SPLIT_STATISTICS / KIND_SPLIT_NORMALIZE: the two dispatches of the
//   split path; see main().
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
#include "softmax_common.glsl"

// The vec4 slots this invocation holds: a tile's elements, then its outputs.
vec4 slots[SLOTS];

// Elements [first, end) of a window onto a row: the window starts at
// element `base` of the tensor, its neighbours `stride` apart. It starts at
// the row's first element (first = 0) unless ODD_ROWS; the split path's
// chunks are windows of their own (end at the chunk's end).
struct Span { uint base; uint stride; uint first; uint end; };

// Window index i .. i + 3 of an ODD_ROWS span element by element: the
// vectors its row only partly covers (its head and tail), which hold
// elements of the neighbouring rows too. Elements outside [first, end)
// read as -inf and are never read.
vec4 load_part(Span row, uint i) {
    vec4 o;
    for (uint c = 0u; c < 4u; ++c) o[c] = i + c >= row.first && i + c < row.end ? float(x_s[row.base + i + c]) : vksm_neg_inf();
    return o;
}

// Writes the elements of window index i .. i + 3 that lie in [first, end),
// one by one, leaving the neighbouring rows' elements alone.
void store_part(Span row, uint i, vec4 v) {
    for (uint c = 0u; c < 4u; ++c)
        if (i + c >= row.first && i + c < row.end) y_s[row.base + i + c] = ELEM(v[c]);
}

// Whether the VEC elements at window index i are a whole vector of the
// span's (else its head or tail, or past its end).
bool whole_vector(Span row, uint i) { return !ODD_ROWS || (i >= row.first && i + VEC <= row.end); }

// Slot j of the tile at tile_begin, for 1- and 4-wide accesses; missing
// elements read as -inf.
vec4 load_slot(Span row, uint tile_begin, uint j, uint lanes, uint lane) {
    if (VEC == 4u) {
        uint i = tile_begin + 4u * (j * lanes + lane);
        if (!whole_vector(row, i)) return load_part(row, i);
        return i < row.end ? load4((row.base + i) >> 2) : vec4(vksm_neg_inf());
    }
    vec4 o;
    for (uint c = 0u; c < 4u; ++c) {
        uint i = tile_begin + (j * 4u + c) * lanes + lane;
        o[c] = i < row.end ? float(x_s[row.base + i * row.stride]) : vksm_neg_inf();
    }
    return o;
}

// Loads the tile at tile_begin of the span into the slots; missing
// elements read as -inf, which every later step treats as contributing
// nothing.
void load_tile(Span row, uint tile_begin, uint lanes, uint lane) {
    if (VEC == 8u) {
        // One 16-byte access fills a pair of slots (the plan keeps SLOTS even).
        for (uint j = 0u; j + 1u < SLOTS; j += 2u) {
            uint i = tile_begin + 8u * ((j >> 1) * lanes + lane);
            vec4 a = vec4(vksm_neg_inf()), b = vec4(vksm_neg_inf());
            if (!whole_vector(row, i)) {
                a = load_part(row, i);
                b = load_part(row, i + 4u);
            } else if (i < row.end) {
                load8((row.base + i) >> 3, a, b);
            }
            slots[j] = a;
            slots[j + 1u] = b;
        }
    } else {
        for (uint j = 0u; j < SLOTS; ++j) slots[j] = load_slot(row, tile_begin, j, lanes, lane);
    }
}

// This lane's max over the finite elements of slots [j0, j1), and flags:
// three instructions per element instead of a classification (the fp16 row
// shapes are bound by per-element work: bench/NOTES.md). The float
// max is exact for finite and -inf elements; NaN and +inf (poison) are
// told by two integer maxima of the bits (+inf and positive NaNs are the
// largest signed patterns, negative NaNs the unsigned ones above -inf), so
// the max's value does not matter when there is one.
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
    if (hu > 0xff800000u || hi >= 0x7f800000) return VksmStat(-VKSM_FLT_MAX, 0.0, VKSM_F_POISON);
    // Only -inf (or no element) left when the max is -inf.
    if (floatBitsToUint(m) == 0xff800000u) return VksmStat(-VKSM_FLT_MAX, 0.0, 0u);
    return VksmStat(m, 0.0, VKSM_F_FINITE);
}

// This lane's statistic of the tile held in its slots.
VksmStat lane_tile_statistic() {
    VksmStat s = lane_max_and_flags(0u, SLOTS);
    for (uint j = 0u; j < SLOTS; ++j)
        for (uint c = 0u; c < 4u; ++c) s.d += vksm_element_exp(slots[j][c] - s.m);
    return s;
}

// The output of slot j given the row's statistic. `exps`: the slots
// already hold exp((x - m) / T) (single-tile softmax).
vec4 slot_output(uint j, VksmStat s, bool exps, float inv_d, float log_d, bool bad) {
    vec4 o;
    for (uint c = 0u; c < 4u; ++c) {
        float x = slots[j][c];
        if (exps) o[c] = x * inv_d;
        else if (LOG) o[c] = vksm_classify(x) == VKSM_C_FINITE ? vksm_log_shift(x, s.m) - log_d : vksm_neg_inf();
        else o[c] = vksm_element_exp(x - s.m) * inv_d;
        o[c] = bad ? vksm_nan() : o[c];
    }
    return o;
}

// Writes slot j given its row's statistic, at the place of slot p of the
// tile at tile_begin (1- and 4-wide accesses). A 4-wide output is computed
// only where it is stored: computing outputs first made no fp32 row faster,
// and gave NaN rows in some geometries on NVIDIA 580.159.04 (bench/NOTES.md).
void write_slot(Span row, uint tile_begin, uint p, uint lanes, uint lane, uint j, VksmStat s, bool exps, float inv_d,
                float log_d, bool bad) {
    if (VEC == 4u) {
        uint i = tile_begin + 4u * (p * lanes + lane);
        if (!whole_vector(row, i)) store_part(row, i, slot_output(j, s, exps, inv_d, log_d, bad));
        else if (i < row.end) store4((row.base + i) >> 2, slot_output(j, s, exps, inv_d, log_d, bad));
        return;
    }
    vec4 o = slot_output(j, s, exps, inv_d, log_d, bad);
    for (uint c = 0u; c < 4u; ++c) {
        uint i = tile_begin + (p * 4u + c) * lanes + lane;
        if (i < row.end) y_s[row.base + i * row.stride] = ELEM(o[c]);
    }
}

// Writes the tile held in the slots given the row's statistic. With 16-byte
// fp16 accesses every output is computed (into the slots) before the first
// store: computing each store's outputs just before it made those rows
// 1.6-2.5x slower on NVIDIA. Narrower accesses keep the interleaved form
// (write_slot).
void write_tile(Span row, uint tile_begin, uint lanes, uint lane, VksmStat s, bool exps) {
    bool bad = (s.f & VKSM_F_POISON) != 0u || (s.f & VKSM_F_FINITE) == 0u;
    float inv_d = 1.0 / s.d;
    float log_d = log(s.d);
    if (VEC == 8u) {
        for (uint j = 0u; j < SLOTS; ++j) slots[j] = slot_output(j, s, exps, inv_d, log_d, bad);
        for (uint j = 0u; j + 1u < SLOTS; j += 2u) {
            uint i = tile_begin + 8u * ((j >> 1) * lanes + lane);
            if (!whole_vector(row, i)) {
                store_part(row, i, slots[j]);
                store_part(row, i + 4u, slots[j + 1u]);
            } else if (i < row.end) {
                store8((row.base + i) >> 3, slots[j], slots[j + 1u]);
            }
        }
    } else {
        for (uint j = 0u; j < SLOTS; ++j) write_slot(row, tile_begin, j, lanes, lane, j, s, exps, inv_d, log_d, bad);
    }
}

// The group's statistic of the span from `begin` (a multiple of the tile)
// to its end, read tile by tile (a row longer than one tile, and split
// pass 1).
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

// First element of row r (rows = outer * inner, neighbours `inner` apart).
uint row_base(uint r) {
    uint o = r / pc.inner;
    return o * pc.axis * pc.inner + (r - o * pc.inner);
}

// Row r's window: an ODD_ROWS row starts `base % VEC` elements into it.
Span row_span(uint r) {
    uint base = row_base(r);
    uint first = ODD_ROWS ? base % VEC : 0u;
    return Span(base - first, pc.inner, first, first + pc.axis);
}

// The longest window of a row: ODD_ROWS rows may start VEC - 1 elements in.
uint longest_window() { return pc.axis + (ODD_ROWS ? VEC - 1u : 0u); }

// KIND_ROWS_PER_SLOT: rows r0 .. r0 + SLOTS - 1, row r0 + j in slot j (at the place a
// row's first slot has), so that a subgroup has the loads of SLOTS rows in
// flight before its first reduction, and their reductions interleave:
// rows of one vec4 per lane leave too few bytes in flight otherwise
// (bench/NOTES.md, v5). A slot past the last row re-reads the last row and
// stores nothing, so that every lane keeps taking part in the reductions.
void rows_per_slot(uint r0, uint lanes, uint lane) {
    Span rows[SLOTS];
    for (uint j = 0u; j < SLOTS; ++j) {
        rows[j] = row_span(min(r0 + j, pc.rows - 1u));
        slots[j] = load_slot(rows[j], 0u, 0u, lanes, lane);
    }
    VksmStat s[SLOTS];
    for (uint j = 0u; j < SLOTS; ++j) {
        s[j] = lane_max_and_flags(j, j + 1u);
        slot_row_max_or(s[j].m, s[j].f);
    }
    for (uint j = 0u; j < SLOTS; ++j) {
        float d = 0.0;
        for (uint c = 0u; c < 4u; ++c) {
            float e = vksm_element_exp(slots[j][c] - s[j].m);
            d += e;
            if (!LOG) slots[j][c] = e;
        }
        s[j].d = slot_row_add(d);
    }
    for (uint j = 0u; j < SLOTS && r0 + j < pc.rows; ++j) {
        bool bad = (s[j].f & VKSM_F_POISON) != 0u || (s[j].f & VKSM_F_FINITE) == 0u;
        write_slot(rows[j], 0u, 0u, lanes, lane, j, s[j], !LOG, 1.0 / s[j].d, log(s[j].d), bad);
    }
}

// main() hands out rows (grid-stride) to the dispatch's kind. The kinds
// other than KIND_ROWS_PER_SLOT are written out here rather than as
// functions of their own: every such split tried (a row in registers, a row
// in tiles, the split passes, each alone or together) made
// KIND_ROWS_PER_SLOT 1.3-1.7x slower on NVIDIA 580.159.04 (65536 x 128 f16:
// 14.1 -> 23.3 us), although the SPIR-V specialized for any kind was the
// same before and after (bench/NOTES.md, v7).
void main() MAIN_ATTRIBUTES {
    uint lanes = group_size(), lane = group_lane();
    uint tile = 4u * SLOTS * lanes;
    uint groups = groups_per_workgroup();
    // Grid-stride loops: the dispatch may be capped by
    // maxComputeWorkGroupCount, and the real subgroup count may differ
    // from the planned one.
    uint first = gl_WorkGroupID.x * groups + group_index();
    uint step = gl_NumWorkGroups.x * groups;

    // KIND_ROWS_PER_SLOT needs rows within a slot of the real subgroup; with
    // a smaller one than planned (a driver that cannot pin the size) it takes
    // the tile-by-tile form of KIND_ROW_IN_REGISTERS.
#ifdef USE_SHUFFLE
    // Each cluster of ROW_LANES lanes takes SLOTS consecutive rows of the
    // subgroup's lanes / ROW_LANES x SLOTS; the loop stays uniform over the
    // subgroup (a cluster past the last row re-reads it and stores nothing).
    // The whole-subgroup loop below is kept apart, not folded in as
    // ROW_LANES = lanes, so that the modules without shuffles keep their
    // code exactly (NVIDIA's compiler minds the shape of main: bench/NOTES.md, v7).
    if (KIND == KIND_ROWS_PER_SLOT && ROW_LANES <= lanes && longest_window() <= 4u * ROW_LANES) {
        uint clusters = lanes / ROW_LANES;
        uint cluster_first = (lane / ROW_LANES) * SLOTS;
        for (uint r0 = first * SLOTS * clusters; r0 < pc.rows; r0 += step * SLOTS * clusters)
            rows_per_slot(r0 + cluster_first, ROW_LANES, lane % ROW_LANES);
        return;
    }
#else
    if (KIND == KIND_ROWS_PER_SLOT && longest_window() <= 4u * lanes) {
        for (uint r0 = first * SLOTS; r0 < pc.rows; r0 += step * SLOTS) rows_per_slot(r0, lanes, lane);
        return;
    }
#endif
    if (KIND == KIND_ROW_IN_REGISTERS || KIND == KIND_ROW_IN_TILES || KIND == KIND_ROWS_PER_SLOT) {
        for (uint r = first; r < pc.rows; r += step) {
            Span row = row_span(r);
            // KIND_ROW_IN_REGISTERS keeps the tile-by-tile form too, for a
            // subgroup smaller than planned (a driver that cannot pin the size).
            if (KIND == KIND_ROW_IN_REGISTERS && row.end <= tile) {
                // KIND_ROW_IN_REGISTERS: read once, reduced, written once.
                load_tile(row, 0u, lanes, lane);
                VksmStat s = lane_max_and_flags(0u, SLOTS);
                float m = s.m;
                uint f = s.f;
                group_max_or(m, f);
                float d = 0.0;
                for (uint j = 0u; j < SLOTS; ++j)
                    for (uint c = 0u; c < 4u; ++c) {
                        float e = vksm_element_exp(slots[j][c] - m);
                        d += e;
                        if (!LOG) slots[j][c] = e;
                    }
                d = group_add(d);
                write_tile(row, 0u, lanes, lane, VksmStat(m, d, f), !LOG);
            } else {
                // KIND_ROW_IN_TILES: folded tile by tile into (m, d), then
                // re-read and written.
                span_write(row, 0u, tile, lanes, lane, span_stat(row, 0u, tile, lanes, lane));
            }
        }
        return;
    }

    // KIND_SPLIT_STATISTICS / KIND_SPLIT_NORMALIZE: work item w is chunk
    // (w % chunks) of row (w / chunks).
    uint items = pc.rows * pc.chunks;
    for (uint w = first; w < items; w += step) {
        // Pass 2 walks the items in the reverse of pass 1's order (and
        // span_write the tiles), so that it first re-reads what pass 1 read
        // last, while that is still in L2.
        uint item = KIND == KIND_SPLIT_NORMALIZE ? items - 1u - w : w;
        uint r = item / pc.chunks;
        uint begin = (item - r * pc.chunks) * pc.chunk;
        // The chunk's window; the plan counts chunks over the longest
        // window, so an ODD_ROWS row's last chunk may hold nothing.
        Span row = row_span(r);
        row.end = max(begin, min(row.end, begin + pc.chunk));
        if (KIND == KIND_SPLIT_STATISTICS) {
            // Pass 1: the chunk's (m, d) and flags.
            VksmStat s = span_stat(row, begin, tile, lanes, lane);
            if (lane == 0u) part[item] = Partial(s.m, s.d, s.f, 0u);
        } else {
            // Pass 2: every workgroup of the row merges all of the row's
            // partials (a few hundred reads, cheaper than a third dispatch),
            // then normalizes its own chunk.
            VksmStat s = vksm_stat_empty();
            for (uint i = lane; i < pc.chunks; i += lanes) {
                Partial p = part[r * pc.chunks + i];
                s = vksm_stat_merge(s, VksmStat(p.m, p.d, p.f));
            }
            span_write(row, begin, tile, lanes, lane, group_stat(s));
        }
    }
}
