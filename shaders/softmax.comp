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
#ifdef SUBGROUP_MAX_BY_KEY
// A subgroup's max on integer keys (vksoftmax/softmax.glsl), in modules of
// their own that the plan gives single rows held by a workgroup on the
// drivers where they were measured (engine/src/subgroup_max_rule.cpp).
// Never where a subgroup holds the row: NVIDIA 580.159.04 compared the
// keys as if unsigned in such a module (bench/NOTES.md, v67).
#define VKSM_SUBGROUP_MAX_BY_KEY (!SUBGROUP_ROWS)
#endif
#include "softmax_common.glsl"

#include "softmax_tiles.glsl"

#ifdef USE_SUBGROUP
// A row held in the slots of a workgroup: its statistic in one exchange
// between subgroups (one_exchange_stat()), each
// lane's exps taken against its own max and scaled to the row's at the
// write, as a held single-pass chunk does, instead of the max's exchange
// and then the sum's. Log-softmax keeps x in the slots and writes from it.
// Not with 16-bit odd rows' whole-window loads: every output of those
// rows (f16 and bf16 rows of 4095 and 4097 at 128 x 9 slots) came out
// NaN on NVIDIA 580.159.04 with this form in the float-max modules,
// though the same rows passed in the integer-key modules and on lavapipe
// (bench/NOTES.md, v73). Taken first at up to 256 invocations; at 512
// and 1024, with the subgroups' statistics folded a strided share a lane,
// 3-10% faster too (H200: f32 128x32000 10.53 -> 10.20 us, 256x16388 10.73
// -> 9.72, 1024x32768 74.68 -> 72.78; bench/NOTES.md, v100).
// The steps are those of softmax_single_pass.comp's chunk_stat() and
// write_held_chunk(), written out in each: one pair of helpers in
// softmax_tiles.glsl for both (two orders of their statements tried) made
// f16 batches of held single-pass chunks 0.25-0.35 us slower on NVIDIA
// 580.159.04 (8x131072 5.72 -> 6.00 us, 16x100000 6.56 -> 6.85) with the
// rows' times level (bench/NOTES.md, v74).
const bool ROW_IN_ONE_EXCHANGE = !SUBGROUP_ROWS;
// Nor with 16-bit softmax rows not a multiple of 4 long (ODD_ROWS) at 6
// and 7 slots: on NVIDIA 580.159.04 this form gave whole rows of NaN there
// (f16 and bf16: rows of 1279 at 64 x 6, 3001 at 128 x 6, on random
// logits; bf16 1537 at 64 x 7), where log-softmax, which rescales no exps,
// and fp32 passed, and so did every other slot count from 4 to 15
// (Gpu.OddRowsAtEverySlotCount; bench/NOTES.md, v102-v103). Two exchanges
// gave the right outputs there, at 10-16% more time (bf16 4096x1279 10.2
// -> 11.4 us, wrong before); at 5 slots, where this form was right, they
// cost as much (f16 1024x2557 5.74 -> 6.46). From 8 slots on, whole-window
// loads take two exchanges anyway.
#ifdef STORAGE_16BIT
const bool ODD_SOFTMAX_ROW_IN_ONE_EXCHANGE = SLOTS != 6u && SLOTS != 7u;
#else
const bool ODD_SOFTMAX_ROW_IN_ONE_EXCHANGE = true;
#endif
bool row_one_exchange() {
#ifdef VKSM_WHOLE_WINDOW_LOADS
    if (whole_window_loads()) return false;
#endif
    if (ODD_ROWS && !LOG && !ODD_SOFTMAX_ROW_IN_ONE_EXCHANGE) return false;
    return ROW_IN_ONE_EXCHANGE;
}
void write_row_one_exchange(uint r, Span row, uint lanes, uint lane) {
    VksmStat s = lane_max_and_flags(0u, SLOTS);
    float lane_max = s.m;
    for (uint j = 0u; j < SLOTS; ++j) s.d = add_slot_exps(s.d, j, s.m, !LOG);
    s = FINISH_ROW(r, one_exchange_stat(s), lane == 0u);
    if (!LOG) {
        // 0 where the lane holds no finite element (its exps are 0 then too).
        float scale = vksm_scaled_exp(lane_max - s.m);
        for (uint j = 0u; j < SLOTS; ++j) slots[j] *= scale;
    }
    write_tile(row, 0u, lanes, lane, s, !LOG);
}
#endif

#if defined(ATTENTION) && defined(STORAGE_16BIT) && defined(USE_SUBGROUP)
// NEXT_ROW_FIRST: a workgroup holding masked 16-bit rows whole takes rows
// first, first + step, ... (the plan's grid gives it two or more) and
// issues the next row's 16-byte words of x and of the mask before it
// reduces and writes the current row, so that they are in flight while it
// does; the words wait in registers of their own (NVIDIA 580.159.04: 72
// a workgroup of 64 x 8, against 55). H100, us: f16 (1, 32, 2048, 2048)
// 196.9 -> 192.7, (1, 8, 4096, 4096) 204.2 -> 198.8 (bf16 206.6 -> 198.7);
// four rows a workgroup slower than two (bench/NOTES.md, v118). H200 (the
// H100's multiprocessors, a copy 40% faster: more bytes must be in flight
// to reach it): f16 (1, 32, 2048, 2048) 162.8 -> 144.7, (1, 8, 4096, 4096)
// 176.0 -> 152.6, bf16 177.8 -> 156.7 (v120).
layout(constant_id = SPEC_ID_NEXT_ROW_FIRST) const bool NEXT_ROW_FIRST = false;
// Read through this function (glslang 12 emits a specialization constant's
// operation in the first function body that reads it).
bool next_row_first() {
    if (!NEXT_ROW_FIRST || (MASK != MASK_F16 && MASK != MASK_BF16)) return false;
    return VEC == 8u && !ODD_ROWS && !CAUSAL && !SUBGROUP_ROWS;
}
// One 16-byte word a pair of slots: entries 0 .. SLOTS / 2 - 1 are used
// (sized SLOTS as in the build that was timed; SLOTS / 2 was not).
uvec4 next_x[SLOTS];
uvec4 next_mask[SLOTS];
// Issues the loads of a row of whole 16-byte vectors that fits one tile
// (a vector past the row's end reads the row's first and is not used).
void fetch_row(Span row, uint lanes, uint lane) {
    [[unroll]] for (uint j = 0u; j + 1u < SLOTS; j += 2u) {
        uint i = tile_vector(0u, j >> 1, lanes, lane);
        uint at = i < row.end ? i : row.first;
        next_x[j >> 1] = x_w[(row.base + at) >> 3];
        next_mask[j >> 1] = load_mask8(row.attn, at - row.first);
    }
}
// The fetched row's logits into the slots (MISSING past its end).
void take_fetched_row(Span row, uint lanes, uint lane) {
    [[unroll]] for (uint j = 0u; j + 1u < SLOTS; j += 2u) {
        uint i = tile_vector(0u, j >> 1, lanes, lane);
        vec4 a = vec4(MISSING), b = vec4(MISSING);
        if (i < row.end) {
            uvec4 p = next_x[j >> 1];
            UNPACK8(p, a, b);
            attend8_loaded(row.attn, i - row.first, next_mask[j >> 1], a, b);
        }
        slots[j] = a;
        slots[j + 1u] = b;
    }
}
void rows_next_first(uint first, uint step, uint lanes, uint lane) {
    if (first >= pc.rows) return;
    Span row = row_span(ROW_IN_ORDER(first));
    fetch_row(row, lanes, lane);
    for (uint i = first; i < pc.rows; i += step) {
        take_fetched_row(row, lanes, lane);
        Span next = row;
        bool more = i + step < pc.rows;
        if (more) {
            next = row_span(ROW_IN_ORDER(i + step));
            fetch_row(next, lanes, lane);
        }
        write_row_one_exchange(ROW_IN_ORDER(i), row, lanes, lane);
        // The next row's exchange writes the arrays this one read.
        if (more) barrier();
        row = next;
    }
}
#endif

// KIND_ROWS_PER_SLOT: rows r0 .. r0 + SLOTS - 1, row r0 + j in slot j (at the place a
// row's first slot has), so that a subgroup has the loads of SLOTS rows in
// flight before its first reduction, and their reductions interleave:
// rows of one vec4 per lane leave too few bytes in flight otherwise
// (bench/NOTES.md, v5). A slot past the last row re-reads the last row and
// stores nothing, so that every lane keeps taking part in the reductions.
// r0 + j counts rows in the order they are handed out (ROW_IN_ORDER).
void rows_per_slot(uint r0, uint lanes, uint lane) {
    Span rows[SLOTS];
    for (uint j = 0u; j < SLOTS; ++j) {
        rows[j] = row_span(ROW_IN_ORDER(min(r0 + j, pc.rows - 1u)));
        slots[j] = load_slot(rows[j], 0u, 0u, lanes, lane);
    }
    VksmStat s[SLOTS];
    for (uint j = 0u; j < SLOTS; ++j) {
        s[j] = lane_max_and_flags(j, j + 1u);
        slot_row_max_or(s[j].m, s[j].f);
        SINK_INTO_MAX(ROW_IN_ORDER(min(r0 + j, pc.rows - 1u)), s[j].m, s[j].f);
    }
    for (uint j = 0u; j < SLOTS; ++j) {
        s[j].d = slot_row_add(add_slot_exps(0.0, j, s[j].m, !LOG));
        ADD_SINK(ROW_IN_ORDER(min(r0 + j, pc.rows - 1u)), s[j].m, s[j].d);
    }
    for (uint j = 0u; j < SLOTS && r0 + j < pc.rows; ++j) {
        bool bad = row_bad(s[j].f, s[j].d);
        STORE_LSE(ROW_IN_ORDER(r0 + j), s[j], lane == 0u);
        write_slot(rows[j], 0u, 0u, lanes, lane, j, s[j], !LOG, 1.0 / s[j].d, log(s[j].d), bad);
    }
}

// Split pass 2's statistic of row r, known to every lane, in the fp32
// modules. Where the row has at most a subgroup's partials, each subgroup
// merges them all by itself, one a lane, with no barrier between the
// subgroups of a workgroup (H200, 580.159.04: f32 128x151936 64.8 -> 63.2
// us, 64x151936 33.2 -> 32.2, 128x262144 108.4 -> 106.9). Rows of more
// partials keep the workgroup's merge: lanes taking several partials each
// in turn cost more than the barriers save (f32 1x16777216, 512 partials:
// 54.6 -> 57.6). The 16-bit modules keep the workgroup's merge written
// out in main(): with this function their batches were 0.5-1% slower
// (f16 128x262144 57.0 -> 57.7; bench/NOTES.md, v56).
#if defined(USE_SUBGROUP) && !defined(STORAGE_16BIT)
VksmStat split_row_stat(uint r, uint lanes, uint lane) {
    uint first = r * pc.chunks;
    if (pc.chunks <= gl_SubgroupSize) {
        // Scalars, not a Partial: glslang mis-built a select between buffer
        // structs here.
        float pm = -VKSM_FLT_MAX, pd = 0.0;
        uint pf = 0u;
        if (gl_SubgroupInvocationID < pc.chunks) {
            uint i = first + gl_SubgroupInvocationID;
            pm = part[i].m;
            pd = part[i].d;
            pf = part[i].f;
        }
        float m = vksm_subgroup_max(pm);
        return VksmStat(m, subgroupAdd(pd * vksm_scaled_exp(pm - m)), subgroupOr(pf));
    }
    VksmStat s = vksm_stat_empty();
    for (uint i = lane; i < pc.chunks; i += lanes) {
        Partial p = part[first + i];
        s = vksm_stat_merge(s, VksmStat(p.m, p.d, p.f));
    }
    return group_stat(s);
}
#endif

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
    // WRITE_SHARES consecutive workgroups hold the same rows, a share each
    // (write_tile()); the plan's grid is a multiple of it.
    uint shares = KIND == KIND_ROW_IN_REGISTERS ? WRITE_SHARES : 1u;
    write_share = gl_WorkGroupID.x % shares;
    uint first = (gl_WorkGroupID.x / shares) * groups + group_index();
    uint step = (gl_NumWorkGroups.x / shares) * groups;

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
#if defined(ATTENTION) && defined(STORAGE_16BIT) && defined(USE_SUBGROUP)
    // Where the real subgroup holds the row in one tile, as planned.
    if (KIND == KIND_ROW_IN_REGISTERS && next_row_first() && row_one_exchange() && pc.axis <= tile) {
        rows_next_first(first, step, lanes, lane);
        return;
    }
#endif
    if (KIND == KIND_ROW_IN_REGISTERS || KIND == KIND_ROW_IN_TILES || KIND == KIND_ROWS_PER_SLOT) {
        for (uint i = first; i < pc.rows; i += step) {
            uint r = ROW_IN_ORDER(i);
            Span row = row_span(r);
            // KIND_ROW_IN_REGISTERS keeps the tile-by-tile form too, for a
            // subgroup smaller than planned (a driver that cannot pin the size).
            if (KIND == KIND_ROW_IN_REGISTERS && row.end <= tile) {
                // KIND_ROW_IN_REGISTERS: read once, reduced, written once.
                load_tile(row, 0u, lanes, lane);
#ifdef USE_SUBGROUP
                if (row_one_exchange()) {
                    write_row_one_exchange(r, row, lanes, lane);
                    // The next row's exchange writes the arrays this one read.
                    if (i + step < pc.rows) barrier();
                    continue;
                }
#endif
                VksmStat s = lane_max_and_flags(0u, SLOTS);
                float m = s.m;
                uint f = s.f;
                group_max_or(m, f);
                SINK_INTO_MAX(r, m, f);
                float d = 0.0;
                for (uint j = 0u; j < SLOTS; ++j) d = add_slot_exps(d, j, m, !LOG);
                d = group_add(d);
                ADD_SINK(r, m, d);
                STORE_LSE(r, VksmStat(m, d, f), lane == 0u);
                write_tile(row, 0u, lanes, lane, VksmStat(m, d, f), !LOG);
            } else {
                // KIND_ROW_IN_TILES: folded tile by tile into (m, d), then
                // re-read and written.
                span_write(row, 0u, tile, lanes, lane, FINISH_ROW(r, span_stat(row, 0u, tile, lanes, lane), lane == 0u));
            }
        }
        return;
    }

    // KIND_SPLIT_STATISTICS / KIND_SPLIT_NORMALIZE: work item w is chunk
    // c = w % chunks of row w / chunks, which holds the row's tiles c,
    // c + chunks, c + 2 chunks, ...: the workgroups of a row read and write
    // it side by side rather than a block each (H200, 580.159.04: f32
    // 1x16777216 54.6 -> 53.8 us, f16 128x262144 57.7 -> 56.8;
    // bench/NOTES.md, v55). A row's chunks past its last tile (an ODD_ROWS
    // row's window may be a tile shorter than the plan's) hold nothing.
    // The loops are written out here, not through span_stat() and
    // span_write() given a step between tiles: that form timed rows of one
    // tile per chunk, whose tiles are the same either way, 1.5-3% slower
    // than before (f16 1x1048576 8.65 -> 8.91 us), where this one timed
    // level.
    uint items = pc.rows * pc.chunks;
    for (uint w = first; w < items; w += step) {
        // Pass 2 walks the group's items in the reverse of pass 1's order,
        // and each item's tiles last first, so that it first re-reads what
        // pass 1 read last, while that is still in L2.
        uint item = split_item(w, first, step, items);
        uint r = item / pc.chunks;
        uint c = item - r * pc.chunks;
        Span row = row_span(r);
        uint tiles = (row.end + tile - 1u) / tile;
        if (KIND == KIND_SPLIT_STATISTICS) {
            // Pass 1: the chunk's (m, d) and flags.
            VksmStat s = vksm_stat_empty();
            for (uint t = c; t < tiles; t += pc.chunks) {
                load_tile(row, t * tile, lanes, lane);
                s = vksm_stat_merge(s, lane_tile_statistic());
            }
            s = group_stat(s);
            if (lane == 0u) part[item] = Partial(s.m, s.d, s.f, 0u);
        } else {
            // Pass 2: every workgroup of the row merges all of the row's
            // partials (a few hundred reads, cheaper than a third dispatch),
            // then normalizes its own chunk.
#if defined(USE_SUBGROUP) && !defined(STORAGE_16BIT)
            VksmStat row_stat = FINISH_ROW(r, split_row_stat(r, lanes, lane), c == 0u && lane == 0u);
#else
            VksmStat s = vksm_stat_empty();
            for (uint i = lane; i < pc.chunks; i += lanes) {
                Partial p = part[r * pc.chunks + i];
                s = vksm_stat_merge(s, VksmStat(p.m, p.d, p.f));
            }
            VksmStat row_stat = FINISH_ROW(r, group_stat(s), c == 0u && lane == 0u);
#endif
            if (c < tiles) {
                for (uint t = c + ((tiles - 1u - c) / pc.chunks) * pc.chunks;; t -= pc.chunks) {
                    load_tile(row, t * tile, lanes, lane);
                    write_tile(row, t * tile, lanes, lane, row_stat, false);
                    if (t < pc.chunks) break;
                }
            }
        }
    }
}
