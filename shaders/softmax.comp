#version 450
#extension GL_GOOGLE_include_directive : require
// Softmax / log-softmax over one axis of a (outer, axis, inner) tensor.
// KIND 0: a group (subgroup or workgroup) owns a row. A row that fits one
//         tile is read once into registers and written once; a longer one
//         (possible when the subgroup the driver gives is smaller than
//         planned) is folded tile by tile into (m, d) and then re-read.
// KIND 1/2: the two dispatches of the split path; see main().
#include "softmax_common.glsl"

vec4 v[VPT];

// Loads tile [tile_begin, end) of the row at `base` into slots s0..s0+VPT;
// missing elements read as -inf, which every later step treats as
// contributing nothing.
void load_tile(uint s0, uint base, uint stride, uint tile_begin, uint end, uint G, uint lane) {
    for (uint j = 0u; j < VPT; ++j) {
        if (VEC == 8u) {
            if ((j & 1u) == 1u) continue;
            uint i = tile_begin + 8u * ((j >> 1) * G + lane);
            vec4 a = vec4(neg_inf()), b = vec4(neg_inf());
            if (i < end) load8((base + i) >> 3, a, b);
            v[s0 + j] = a;
            v[s0 + j + 1u] = b;
        } else if (VEC == 4u) {
            uint i = tile_begin + 4u * (j * G + lane);
            v[s0 + j] = i < end ? load4((base + i) >> 2) : vec4(neg_inf());
        } else {
            for (uint c = 0u; c < 4u; ++c) {
                uint i = tile_begin + (j * 4u + c) * G + lane;
                v[s0 + j][c] = i < end ? float(x_s[base + i * stride]) : neg_inf();
            }
        }
    }
}

// This lane's max over the finite elements of slots s0..s0+VPT, and flags.
Stat lane_max(uint s0) {
    float m = -FLT_MAX;
    uint f = 0u;
    for (uint j = 0u; j < VPT; ++j)
        for (uint c = 0u; c < 4u; ++c) {
            uint k = classify(v[s0 + j][c]);
            f |= flag_of(k);
            m = max(m, k == C_FINITE ? v[s0 + j][c] : -FLT_MAX);
        }
    return Stat(m, 0.0, f);
}

// This lane's statistic of the tile held in slots s0..
Stat tile_stat(uint s0) {
    Stat s = lane_max(s0);
    for (uint j = 0u; j < VPT; ++j)
        for (uint c = 0u; c < 4u; ++c)
            s.d += classify(v[s0 + j][c]) == C_FINITE ? scaled_exp(v[s0 + j][c] - s.m) : 0.0;
    return s;
}

// v / 2, exactly, by lowering the exponent where v is large: written on the
// bits so that no algebraic rewrite can fold it back into v (Vulkan allows
// reassociation; 0.5 * x - 0.5 * m became x - m again on NVIDIA).
float halve(float v) {
    return abs(v) >= 1.0 ? uintBitsToFloat(floatBitsToUint(v) - 0x00800000u) : 0.5 * v;
}

// (x - m) / T for log-softmax. x - m overflows fp32 when x and m are far
// apart (-FLT_MAX beside FLT_MAX) although (x - m) / T may be finite for
// T > 1. Decided on the inputs, not by testing x - m for infinity: a
// computed value may be assumed finite and the test folded away.
float log_shift(float x, float m) {
    bool huge = max(abs(x), abs(m)) >= 8.5070592e37;  // 2^126: x - m may overflow
    return huge ? (halve(x) - halve(m)) * (2.0 * pc.inv_t) : (x - m) * pc.inv_t;
}

// Writes the tile held in slots s0.. given the row's statistic. `exps`: the
// slots already hold exp((x - m) / T), 0 for -inf elements (single-tile
// softmax).
void write_tile(uint s0, uint base, uint stride, uint tile_begin, uint end, uint G, uint lane, Stat s, bool exps) {
    bool bad = (s.f & F_POISON) != 0u || (s.f & F_FINITE) == 0u;
    float inv_d = 1.0 / s.d;
    float log_d = log(s.d);
    vec4 o[VPT];
    for (uint j = 0u; j < VPT; ++j)
        for (uint c = 0u; c < 4u; ++c) {
            float x = v[s0 + j][c];
            bool fin = classify(x) == C_FINITE;
            if (exps) o[j][c] = x * inv_d;
            else if (LOG) o[j][c] = fin ? log_shift(x, s.m) - log_d : neg_inf();
            else o[j][c] = fin ? scaled_exp(x - s.m) * inv_d : 0.0;
            o[j][c] = bad ? nan_value() : o[j][c];
        }
    for (uint j = 0u; j < VPT; ++j) {
        if (VEC == 8u) {
            if ((j & 1u) == 1u) continue;
            uint i = tile_begin + 8u * ((j >> 1) * G + lane);
            if (i < end) store8((base + i) >> 3, o[j], o[j + 1u]);
        } else if (VEC == 4u) {
            uint i = tile_begin + 4u * (j * G + lane);
            if (i < end) store4((base + i) >> 2, o[j]);
        } else {
            for (uint c = 0u; c < 4u; ++c) {
                uint i = tile_begin + (j * 4u + c) * G + lane;
                if (i < end) y_s[base + i * stride] = ELEM(o[j][c]);
            }
        }
    }
}

// First element of row r (rows = outer * inner, neighbours `inner` apart).
uint row_base(uint r) {
    uint o = r / pc.inner;
    return o * pc.axis * pc.inner + (r - o * pc.inner);
}

void main() {
    uint G = group_size(), lane = group_lane();
    uint tile = 4u * VPT * G;
    uint gpw = groups_per_workgroup();
    // Grid-stride loops: the dispatch may be capped by
    // maxComputeWorkGroupCount, and the real subgroup count may differ
    // from the planned one.
    uint first = gl_WorkGroupID.x * gpw + group_index();
    uint step = gl_NumWorkGroups.x * gpw;

    if (KIND == 0u) {
        for (uint r = first; r < pc.rows; r += step) {
            uint base = row_base(r);
            if (pc.axis <= tile) {
                load_tile(0u, base, pc.inner, 0u, pc.axis, G, lane);
                Stat s = lane_max(0u);
                uint k = group_max_u(stat_key(s.m, s.f));
                float m = key_max(k);
                float d = 0.0;
                for (uint j = 0u; j < VPT; ++j)
                    for (uint c = 0u; c < 4u; ++c) {
                        float e = classify(v[j][c]) == C_FINITE ? scaled_exp(v[j][c] - m) : 0.0;
                        d += e;
                        if (!LOG) v[j][c] = e;
                    }
                d = group_add(d);
                write_tile(0u, base, pc.inner, 0u, pc.axis, G, lane, Stat(m, d, key_flags(k)), !LOG);
            } else {
                Stat s = stat_empty();
                for (uint t0 = 0u; t0 < pc.axis; t0 += tile) {
                    load_tile(0u, base, pc.inner, t0, pc.axis, G, lane);
                    s = stat_merge(s, tile_stat(0u));
                }
                s = group_stat(s);
                for (uint t0 = 0u; t0 < pc.axis; t0 += tile) {
                    load_tile(0u, base, pc.inner, t0, pc.axis, G, lane);
                    write_tile(0u, base, pc.inner, t0, pc.axis, G, lane, s, false);
                }
            }
        }
        return;
    }

    // Split path: work item w is chunk (w % chunks) of row (w / chunks).
    uint items = pc.rows * pc.chunks;
    for (uint w = first; w < items; w += step) {
        // Pass 2 walks the items, and the tiles within each, in the reverse
        // of pass 1's order, so that it first re-reads what pass 1 read
        // last, while that is still in L2.
        uint item = KIND == 2u ? items - 1u - w : w;
        uint r = item / pc.chunks;
        uint begin = (item - r * pc.chunks) * pc.chunk;
        uint end = min(pc.axis, begin + pc.chunk);
        uint base = row_base(r);
        if (KIND == 1u) {
            // Pass 1: the chunk's (m, d) and flags.
            Stat s = stat_empty();
            for (uint t0 = begin; t0 < end; t0 += tile) {
                load_tile(0u, base, pc.inner, t0, end, G, lane);
                s = stat_merge(s, tile_stat(0u));
            }
            s = group_stat(s);
            if (lane == 0u) part[item] = Partial(s.m, s.d, s.f, 0u);
        } else {
            // Pass 2: every workgroup of the row merges all of the row's
            // partials (a few hundred reads, cheaper than a third dispatch),
            // then normalizes its own chunk.
            Stat s = stat_empty();
            for (uint i = lane; i < pc.chunks; i += G) {
                Partial p = part[r * pc.chunks + i];
                s = stat_merge(s, Stat(p.m, p.d, p.f));
            }
            s = group_stat(s);
            for (uint t = (end - begin + tile - 1u) / tile; t > 0u; --t) {
                uint t0 = begin + (t - 1u) * tile;
                load_tile(0u, base, pc.inner, t0, end, G, lane);
                write_tile(0u, base, pc.inner, t0, end, G, lane, s, false);
            }
        }
    }
}
