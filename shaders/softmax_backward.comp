#version 450
#extension GL_GOOGLE_include_directive : require
// The backward pass of softmax and log-softmax (softmax_backward.glsl has
// the formulas) over one axis of a (outer, axis, inner) tensor, on the
// forward's geometry and kinds (softmax.comp): a row's statistic is one
// sum, its output dx.
// KIND_ROW_IN_REGISTERS: a group owns a row; y and dy are read once into
//   registers, the sum reduced, dx written once (tile by tile, re-reading
//   y and dy, where the row is longer than a tile; with REREAD_GRADIENT,
//   dy read again for the write).
// KIND_ROW_IN_TILES: the same for rows the plan knows are longer.
// KIND_ROWS_PER_SLOT: a subgroup (or, with USE_SHUFFLE, each ROW_LANES
//   lanes of it) holds SLOTS short rows, one per slot.
// KIND_SPLIT_STATISTICS / KIND_SPLIT_NORMALIZE: each chunk's sum into the
//   workspace; then the row's sum from them and the chunk's dx.
// With SINKS each row's sink gradient too (softmax_backward.glsl).
#define BACKWARD
#include "softmax_common.glsl"

#include "softmax_tiles.glsl"

// KIND_ROWS_PER_SLOT: rows r0 .. r0 + SLOTS - 1, row r0 + j in slot j; a
// slot past the last row re-reads the last row and stores nothing.
void rows_per_slot(uint r0, uint lanes, uint lane) {
    Span rows[SLOTS];
    for (uint j = 0u; j < SLOTS; ++j) {
        rows[j] = row_span(min(r0 + j, pc.rows - 1u));
        grads[j] = load_slot(rows[j], 0u, 0u, lanes, lane, true);
    }
    for (uint j = 0u; j < SLOTS; ++j) slots[j] = load_slot(rows[j], 0u, 0u, lanes, lane, false);
    float sums[SLOTS], masses[SLOTS];
    for (uint j = 0u; j < SLOTS; ++j) {
        sums[j] = slot_row_add(lane_sum(j, j + 1u));
        masses[j] = SINKS ? slot_row_add(lane_mass(j, j + 1u)) : 0.0;
    }
#ifndef USE_SHUFFLE
    // slot_row_add is group_add here: see group_sum().
    if (!SUBGROUP_ROWS) barrier();
#endif
    for (uint j = 0u; j < SLOTS && r0 + j < pc.rows; ++j) {
        write_sink_gradient(r0 + j, lane, sums[j], masses[j]);
        write_slot(rows[j], 0u, 0u, lanes, lane, j, sum_stat(sums[j]), false, 1.0, 0.0, false);
    }
}

// REREAD_GRADIENT: a row held in the slots keeps y there past its sum
// but not dy, which it reads again (from cache) a few slots at a time as
// it writes dx, so that y and dy are never live together over the group's
// reduction. Held together at 8 slots they are 64 floats a lane, and 1024
// lanes of 64 fill an NVIDIA SM's registers: the driver (580.159.04) put
// 80 bytes a lane in local memory, 48 with the re-read. H200, f32, us
// (bench/NOTES.md, v94): 1024 x 8 1024x32768 116.5 -> 105.0, 264x32768
// 34.4 -> 31.6; where the lanes have registers to spare it only costs
// (512 x 8, 1024x16384: 52.2 -> 56.3), so the plan takes it at 1024 x 8
// alone (rereads_gradient() in plan.cpp). fp32 accesses only (VEC 4):
// 16-byte 16-bit tiles are computed whole before their stores
// (write_tile()).
layout(constant_id = SPEC_ID_REREAD_GRADIENT) const bool REREAD_GRADIENT = false;
const bool REREAD_GRADIENT_HERE = REREAD_GRADIENT && VEC == 4u;
// Read through this function (glslang 12 emits a specialization constant's
// operation in the first function body that reads it).
bool reread_gradient() { return REREAD_GRADIENT_HERE; }
// dy's slots read again at a time: two groups at 8 slots, each group's
// loads in flight together (the stores between groups keep the next
// group's loads behind them: the bindings may alias). Groups of 2 were
// 1-1.7% slower than groups of 4 on the rows above.
const uint REREAD_GROUP_SLOTS = 4u;

// Writes the tile held in the slots (y; a row of one tile) given the
// row's sum, reading dy again group by group.
void write_tile_rereading_gradient(Span row, uint lanes, uint lane, float sum) {
    [[unroll]] for (uint g = 0u; g < SLOTS; g += REREAD_GROUP_SLOTS) {
        [[unroll]] for (uint j = g; j < min(g + REREAD_GROUP_SLOTS, SLOTS); ++j)
            grads[j] = load_slot(row, 0u, j, lanes, lane, true);
        [[unroll]] for (uint j = g; j < min(g + REREAD_GROUP_SLOTS, SLOTS); ++j)
            write_slot(row, 0u, j, lanes, lane, j, sum_stat(sum), false, 1.0, 0.0, false);
    }
}

void main() MAIN_ATTRIBUTES {
    uint lanes = group_size(), lane = group_lane();
    uint tile = 4u * SLOTS * lanes;
    uint groups = groups_per_workgroup();
    // Grid-stride loops, as softmax.comp's.
    uint first = gl_WorkGroupID.x * groups + group_index();
    uint step = gl_NumWorkGroups.x * groups;

#ifdef USE_SHUFFLE
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
            if (KIND == KIND_ROW_IN_REGISTERS && row.end <= tile) {
                load_pair(row, 0u, lanes, lane);
                float s = group_sum(lane_sum(0u, SLOTS));
                if (SINKS) write_sink_gradient(r, lane, s, group_sum(lane_mass(0u, SLOTS)));
                if (reread_gradient())
                    write_tile_rereading_gradient(row, lanes, lane, s);
                else
                    write_tile(row, 0u, lanes, lane, sum_stat(s), false);
            } else {
                vec2 s = span_sum(row, 0u, tile, lanes, lane);
                write_sink_gradient(r, lane, s.x, s.y);
                span_write_gradient(row, 0u, tile, lanes, lane, s.x);
            }
        }
        return;
    }

    // The split passes: work item w is chunk (w % chunks) of row (w / chunks).
    uint items = pc.rows * pc.chunks;
    for (uint w = first; w < items; w += step) {
        uint item = split_item(w, first, step, items);
        uint r = item / pc.chunks;
        uint begin = (item - r * pc.chunks) * pc.chunk;
        Span row = row_span(r);
        row.end = max(begin, min(row.end, begin + pc.chunk));
        if (KIND == KIND_SPLIT_STATISTICS) {
            // A chunk's partial: its sum, and with SINKS its mass in m.
            vec2 s = span_sum(row, begin, tile, lanes, lane);
            if (lane == 0u) part[item] = Partial(s.y, s.x, 0u, 0u);
        } else {
            // The row's sum from its chunks' (a NaN one stays NaN), then
            // this chunk's dx; the row's first chunk writes its sink
            // gradient.
            float s = 0.0, mass = 0.0;
            for (uint i = lane; i < pc.chunks; i += lanes) {
                s += part[r * pc.chunks + i].d;
                if (SINKS) mass += part[r * pc.chunks + i].m;
            }
            s = group_sum(s);
            if (SINKS) mass = group_sum(mass);
            if (begin == 0u) write_sink_gradient(r, lane, s, mass);
            span_write_gradient(row, begin, tile, lanes, lane, s);
        }
    }
}
