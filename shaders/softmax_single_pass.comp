#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_control_flow_attributes : require
#pragma use_vulkan_memory_model
// KIND_SINGLE_PASS: softmax of long rows in one dispatch. A row is cut into
// `chunks` chunks, one workgroup each (work item w: chunk w % chunks of row
// w / chunks). A workgroup
// 1. reads its chunk (into registers where the chunk is one tile) and
//    publishes the chunk's (m, d) and flags: three relaxed atomic stores;
// 2. gathers its row's partials as they turn up, merging each once;
// 3. writes its chunk (from registers, or re-read tile by tile), clears
//    its partial's place for the next call, and counts itself done in the
//    row (an atomic add it does not wait for).
// Each word of a partial tells by itself whether it is published: a zero
// word is not, and no published word is zero (m and d are stored
// complemented, with their one all-ones NaN pattern changed for another
// NaN; the flags word carries PUBLISHED). So a reader needs no ready flag
// and no acquire: it loads the three words together, one round trip, and
// merges the partial once all three are non-zero; each word is written
// once per call, so a non-zero word is this call's. (A ready flag with
// release and acquire, then a second read of the words, cost 0.6-8 us more
// per call on an H100: bench/NOTES.md, v18.)
// The partials live in two banks used by alternate calls: a call's
// workgroups clear their places in the other bank, which the next call
// then finds zero (the barrier the contract asks for between calls makes
// the clearing visible). A row's call count comes from its done count,
// which grows by `chunks` (a power of two) per call: a workgroup reads it
// before counting itself, so every workgroup of a row finds count / chunks
// = the same generation, whatever the others have added.
// Vulkan promises no forward progress to a workgroup whose partial another
// waits for (it may not even have started), so a workgroup never waits
// without bound: after PATIENCE polling rounds it computes the partials
// still missing itself, reading those chunks, and publishes them (the same
// bits their owners publish: the same code on the same data). Waiting is
// then only a matter of speed; on GPUs that run a dispatch's workgroups
// side by side, the partials arrive within the patience and nothing is
// read twice.
//
// Built with BACKWARD, it is the backward pass (softmax_backward.glsl):
// a chunk's partial is its sum in d and, with SINKS, its mass in m, as
// the split path's; partials add, and the chunk's output is its dx.
//
// The workspace (zero before a plan's first dispatch): two banks of 16
// bytes per chunk {~m, ~d, flags | PUBLISHED, unused}, then one count per
// row (vksoftmax/single_pass_workspace.hpp reads it back on the host).
#define SINGLE_PASS
#ifdef SUBGROUP_MAX_BY_KEY
// A subgroup's max on integer keys (vksoftmax/softmax.glsl), in modules of
// their own that the plan gives single rows on the drivers where they
// were measured (engine/src/subgroup_max_rule.cpp): f32 single rows 3-6%
// faster on an H200. Workgroups of 512 keep the float max: with the keys
// in the module, run or not, chunks held at 512 x 8 were 5-8% slower
// (bench/NOTES.md, v67).
// The plan gives wider workgroups the float modules (kSinglePassKeyMaxWorkgroup).
#define VKSM_SUBGROUP_MAX_BY_KEY (gl_WorkGroupSize.x <= 256u)
#endif
#include "softmax_common.glsl"

#include "softmax_tiles.glsl"

// Whether the plan's chunks are one tile each, held in the slots from
// their statistic to their write (else re-read tile by tile): a constant,
// so that each pipeline carries the code and registers of one form only
// (the held form's exps, kept in the slots, cost the re-read batches 1-2%
// where both forms were compiled in: bench/NOTES.md, v42). The shader
// still checks the push constants, so a chunk longer than a tile is right
// either way.
layout(constant_id = SPEC_ID_HELD_CHUNKS) const bool HELD_CHUNKS = true;
// Partials a lane of the gathering invocations loads at once in each
// polling round (gather_row()): its count of the row's chunks, at most 4.
// Loaded as they are merged, each waits on the merge before it (whether to
// go on is decided by the words loaded), and every partial a lane gathers
// past the first cost about a round trip (v36); loaded together they cost
// one, but their registers are live beside the held slots, which slowed
// rows of one partial a lane (v42).
layout(constant_id = SPEC_ID_GATHER_AHEAD) const uint GATHER_AHEAD = 1;

// What a partial is, how partials merge, and how a chunk is written, for
// each pass.
#ifdef BACKWARD
VksmStat chunk_stat(Span chunk, uint begin, uint tile, uint lanes, uint lane) {
    vec2 s = span_sum(chunk, begin, tile, lanes, lane);
    return VksmStat(s.y, s.x, VKSM_F_FINITE);
}
VksmStat partial_empty() { return VksmStat(0.0, 0.0, VKSM_F_FINITE); }
// A NaN sum (a non-finite y or dy in its chunk) stays NaN, and makes the
// row's dx NaN.
VksmStat partial_merge(VksmStat a, VksmStat b) { return VksmStat(a.m + b.m, a.d + b.d, VKSM_F_FINITE); }
VksmStat group_partial(VksmStat s) { return VksmStat(SINKS ? group_sum(s.m) : 0.0, group_sum(s.d), s.f); }
#ifdef USE_SUBGROUP
VksmStat subgroup_partial(VksmStat s) { return VksmStat(SINKS ? subgroupAdd(s.m) : 0.0, subgroupAdd(s.d), s.f); }
#endif
// The row's first chunk writes its sink gradient.
VksmStat complete_row(uint r, VksmStat s, bool writer) {
    if (writer) write_sink_gradient(r, 0u, s.d, s.m);
    return s;
}
void write_held_chunk(Span chunk, uint begin, uint lanes, uint lane, VksmStat s) {
    write_tile(chunk, begin, lanes, lane, sum_stat(s.d), false);
}
void write_chunk(Span chunk, uint begin, uint tile, uint lanes, uint lane, VksmStat s) {
    span_write_gradient(chunk, begin, tile, lanes, lane, s.d);
}
#else
// A chunk of one tile leaves exp((x - m) / T) in the slots, m the lane's
// own max (held_exp_max), so that its write, once the row's statistic is
// known, scales them by exp((m - the row's max) / T) instead of taking
// an exp per element: a single row's time is the chain of steps one
// workgroup takes, and that exp is on it (bench/NOTES.md, v42). The two
// exps' arguments add up to the one they replace, so their errors add to
// 6 + 2|t| ULP against one exp's 3 + 2|t|, within the bound
// (tests/TOLERANCES.md). Log-softmax chunks keep x in the slots and take
// the same one exchange; they write x - m - log d (H200, 580.159.04: f32
// 1x131072 5.45 -> 5.12 us, f16 5.43 -> 5.02, f16 8x131072 6.24 -> 5.97;
// bench/NOTES.md, v74).
float held_exp_max;
#ifdef USE_SUBGROUP
// A held chunk's statistic in one exchange between subgroups
// (one_exchange_stat()). The arrays' next writer (a later item's
// statistic, or publish_missing()'s) comes after the polling rounds'
// barriers, which every invocation passes after reading them.
// Where it pays: workgroups of 256 invocations took 0.1-0.35 us less per
// call (single rows, 8x131072); workgroups of 512 (16x131072, chunks of
// 16384) 0.4 us more, whether every invocation or one subgroup took the
// subgroups' exps.
const bool ONE_EXCHANGE = gl_WorkGroupSize.x <= 256u;
#endif
VksmStat chunk_stat(Span chunk, uint begin, uint tile, uint lanes, uint lane) {
    if (!HELD_CHUNKS || pc.chunk > tile) return span_stat(chunk, begin, tile, lanes, lane);
    load_tile(chunk, begin, lanes, lane);
    VksmStat s = lane_max_and_flags(0u, SLOTS);
    for (uint j = 0u; j < SLOTS; ++j) s.d = add_slot_exps(s.d, j, s.m, !LOG);
    held_exp_max = s.m;
#ifdef USE_SUBGROUP
    return ONE_EXCHANGE ? one_exchange_stat(s) : group_stat(s);
#else
    return group_stat(s);
#endif
}
VksmStat partial_empty() { return vksm_stat_empty(); }
VksmStat partial_merge(VksmStat a, VksmStat b) { return vksm_stat_merge(a, b); }
VksmStat group_partial(VksmStat s) { return group_stat(s); }
#ifdef USE_SUBGROUP
VksmStat subgroup_partial(VksmStat s) { return vksm_subgroup_stat(s); }
#endif
// The row's statistic with its sink; chunk 0 stores its log-sum-exp.
VksmStat complete_row(uint r, VksmStat s, bool writer) { return FINISH_ROW(r, s, writer); }
void write_held_chunk(Span chunk, uint begin, uint lanes, uint lane, VksmStat s) {
    if (LOG) {
        write_tile(chunk, begin, lanes, lane, s, false);
        return;
    }
    // 0 where the lane holds no finite element (its exps are 0 then too).
    float scale = vksm_scaled_exp(held_exp_max - s.m);
    for (uint j = 0u; j < SLOTS; ++j) slots[j] *= scale;
    write_tile(chunk, begin, lanes, lane, s, true);
}
void write_chunk(Span chunk, uint begin, uint tile, uint lanes, uint lane, VksmStat s) {
    span_write(chunk, begin, tile, lanes, lane, s);
}
#endif

// The workspace as 32-bit words, every access atomic.
layout(std430, binding = 2) coherent buffer Words { uint word[]; };

shared uint shared_word;
shared uint shared_generation;
// workgroup_any() answers, by polling round (round r uses r % 3 and clears
// the next one, which the round before last used).
shared uint shared_any[3];
// A row's statistic as subgroup 0 gathered it (gather_row()).
shared float shared_row_m, shared_row_d;
shared uint shared_row_f;

// A flags word's mark that the partial is published (VKSM_F_* use the low bits).
const uint PUBLISHED = 0x80000000u;

// Word k of item's partial in the bank of `generation`.
uint partial_word(uint item, uint generation, uint k) {
    return 4u * ((generation & 1u) * pc.rows * pc.chunks + item) + k;
}
uint done_word(uint r) { return 8u * pc.rows * pc.chunks + r; }

// Chunk c of row r: its window (the plan counts chunks over the longest
// window, so an ODD_ROWS row's last chunk may hold nothing).
Span chunk_span(uint r, uint c) {
    Span s = row_span(r);
    uint begin = c * pc.chunk;
    s.end = max(begin, min(s.end, begin + pc.chunk));
    return s;
}

// A float as a published word: complemented, so that zero is never a
// published value; the all-ones NaN (whose complement is zero) goes as
// another NaN.
uint published_bits(float v) {
    uint b = floatBitsToUint(v);
    return b == 0xffffffffu ? ~0x7fc00000u : ~b;
}

void store_word(uint w, uint v) { atomicStore(word[w], v, gl_ScopeDevice, gl_StorageSemanticsNone, gl_SemanticsRelaxed); }
uint load_word(uint w) { return atomicLoad(word[w], gl_ScopeDevice, gl_StorageSemanticsNone, gl_SemanticsRelaxed); }

// Invocation 0 publishes a chunk's statistic: three relaxed stores, in any
// order (each word tells by itself that it is there).
void publish(uint item, VksmStat s, uint generation) {
    store_word(partial_word(item, generation, 0u), published_bits(s.m));
    store_word(partial_word(item, generation, 1u), published_bits(s.d));
    store_word(partial_word(item, generation, 2u), s.f | PUBLISHED);
}

// Clears item's place in the other bank for the next call.
void clear_next(uint item, uint generation) {
    for (uint k = 0u; k < 3u; ++k) store_word(partial_word(item, generation + 1u, k), 0u);
}

// The three words of item's partial, loaded together.
uvec3 partial_words(uint item, uint generation) {
    return uvec3(load_word(partial_word(item, generation, 0u)), load_word(partial_word(item, generation, 1u)),
                 load_word(partial_word(item, generation, 2u)));
}

// Whether the words are a partial published in this call, and if so the
// partial.
bool published_words(uvec3 w, out VksmStat s) {
    s = VksmStat(uintBitsToFloat(~w.x), uintBitsToFloat(~w.y), w.z & ~PUBLISHED);
    return w.x != 0u && w.y != 0u && w.z != 0u;
}

bool published(uint item, uint generation, out VksmStat s) {
    return published_words(partial_words(item, generation), s);
}

// Whether any invocation passes `v` in polling round `round`: a
// workgroup-uniform answer for one barrier (shared_any[round % 3] starts
// at zero: cleared two rounds before, or before the first).
bool workgroup_any(bool v, uint round) {
    if (v) atomicOr(shared_any[round % 3u], 1u);
    if (gl_LocalInvocationIndex == 0u) shared_any[(round + 1u) % 3u] = 0u;
    barrier();
    return shared_any[round % 3u] != 0u;
}

// Publishes every partial of row r not yet published, computing each from
// its chunk (the whole workgroup, one chunk at a time).
void publish_missing(uint r, uint generation, uint tile, uint lanes, uint lane) {
    for (uint c = 0u; c < pc.chunks; ++c) {
        uint item = r * pc.chunks + c;
        VksmStat unused;
        if (lane == 0u) shared_word = published(item, generation, unused) ? 1u : 0u;
        barrier();
        bool ready = shared_word != 0u;
        // Every invocation has read it before invocation 0 writes the next.
        barrier();
        if (!ready) {
            VksmStat s = chunk_stat(chunk_span(r, c), c * pc.chunk, tile, lanes, lane);
            if (lane == 0u) publish(item, s, generation);
        }
    }
}

// Row r's statistic from all its partials, merged as they turn up (`own`
// is known already). Where the row's chunks are at most 32 per lane of a
// subgroup, subgroup 0 alone gathers them (lane l merges chunks l, l +
// subgroup size, ...) and reduces them by subgroup operations, handing the
// statistic to the other subgroups through shared memory: a workgroup
// reduction after the polling cost a one-chunk row 0.9 us on an H100, and
// every subgroup polling for itself slowed the workgroups of 1024
// (bench/NOTES.md, v35). Otherwise (and without subgroup arithmetic) each
// invocation gathers chunks lane, lane + lanes, ... and the workgroup
// reduces them. The polling rounds are uniform over the workgroup, so that
// every subgroup is whole at the reductions after them.
// `helped`: whether it computed partials itself (the slots then hold
// another chunk's tile).
VksmStat gather_row(uint r, uint generation, uint own, VksmStat own_stat, uint tile, uint lanes, uint lane,
                    out bool helped) {
    helped = false;
    if (lane == 0u) shared_any[0] = shared_any[1] = 0u;
    barrier();
    VksmStat acc = partial_empty();
    uint gather_lane = lane, gather_lanes = lanes;
#ifdef USE_SUBGROUP
    const bool by_subgroup = pc.chunks <= 32u * gl_SubgroupSize;
    if (by_subgroup) {
        // Past the row's chunks: nothing to gather outside subgroup 0.
        gather_lane = gl_SubgroupID == 0u ? gl_SubgroupInvocationID : pc.chunks;
        gather_lanes = gl_SubgroupSize;
    }
#endif
    // Chunks gather_lane + k * gather_lanes still to merge (the plan keeps
    // chunks <= 32 x lanes).
    uint pending = 0u;
    for (uint k = 0u; gather_lane + k * gather_lanes < pc.chunks; ++k) pending |= 1u << k;
    for (uint round = 0u;; ++round) {
        // The first GATHER_AHEAD pending partials' words, all loaded before
        // any is merged; at 1, the loop below alone, as the module was
        // before GATHER_AHEAD (the same steps in another shape slowed the
        // backward f16 16x100000 by 12%: v42).
        if (GATHER_AHEAD > 1u) {
            uvec3 ahead[GATHER_AHEAD];
            [[unroll]] for (uint k = 0u; k < GATHER_AHEAD; ++k) {
                uint c = gather_lane + k * gather_lanes;
                if ((pending & (1u << k)) != 0u && c != own) ahead[k] = partial_words(r * pc.chunks + c, generation);
            }
            [[unroll]] for (uint k = 0u; k < GATHER_AHEAD; ++k) {
                if ((pending & (1u << k)) == 0u) continue;
                VksmStat p = own_stat;
                if (gather_lane + k * gather_lanes != own && !published_words(ahead[k], p)) continue;
                acc = partial_merge(acc, p);
                pending &= ~(1u << k);
            }
        }
        // Only the pending partials' turns: a loop over all 32 bits that
        // skipped the others cost about 1.1 us per polling round on an
        // H200 with nothing left to load (bench/NOTES.md, v64).
        const uint ahead_bits = GATHER_AHEAD > 1u ? (1u << GATHER_AHEAD) - 1u : 0u;
        for (uint rest = pending & ~ahead_bits; rest != 0u; rest &= rest - 1u) {
            uint k = findLSB(rest);
            uint c = gather_lane + k * gather_lanes;
            VksmStat p = own_stat;
            if (c != own && !published(r * pc.chunks + c, generation, p)) continue;
            acc = partial_merge(acc, p);
            pending &= ~(1u << k);
        }
        if (!workgroup_any(pending != 0u, round)) break;
        if (round == PATIENCE) {
            publish_missing(r, generation, tile, lanes, lane);
            helped = true;
        }
    }
#ifdef USE_SUBGROUP
    if (by_subgroup) {
        if (gl_SubgroupID == 0u) {
            VksmStat s = subgroup_partial(acc);
            if (subgroupElect()) {
                shared_row_m = s.m;
                shared_row_d = s.d;
                shared_row_f = s.f;
            }
        }
        // The next item's writes to them come after the barriers of its
        // chunk's statistic, which every invocation reaches after reading.
        barrier();
        return VksmStat(shared_row_m, shared_row_d, shared_row_f);
    }
#endif
    return group_partial(acc);
}

// This dispatch's generation of row r, read before the workgroup counts
// itself done in it.
uint row_generation(uint r) {
    return atomicLoad(word[done_word(r)], gl_ScopeDevice, gl_StorageSemanticsNone, gl_SemanticsRelaxed) / pc.chunks;
}

void main() MAIN_ATTRIBUTES {
    uint lanes = gl_WorkGroupSize.x, lane = gl_LocalInvocationID.x;
    uint tile = 4u * SLOTS * lanes;
    uint items = pc.rows * pc.chunks;
    // A chunk of one tile or less stays in the slots from its statistic to
    // its write.
    bool held = HELD_CHUNKS && pc.chunk <= tile;
    for (uint item = gl_WorkGroupID.x; item < items; item += gl_NumWorkGroups.x) {
        uint r = item / pc.chunks, c = item - r * pc.chunks;
        Span chunk = chunk_span(r, c);
        // Read while the chunk loads; span_stat's barriers pass it on.
        if (lane == 0u) shared_generation = row_generation(r);
        VksmStat own = chunk_stat(chunk, c * pc.chunk, tile, lanes, lane);
        uint generation = shared_generation;
        if (lane == 0u) publish(item, own, generation);
        bool helped;
        VksmStat s = complete_row(r, gather_row(r, generation, c, own, tile, lanes, lane, helped), c == 0u && lane == 0u);
        if (held && !helped) write_held_chunk(chunk, c * pc.chunk, lanes, lane, s);
        else write_chunk(chunk, c * pc.chunk, tile, lanes, lane, s);
        if (lane == 0u) {
            clear_next(item, generation);
            atomicAdd(word[done_word(r)], 1u, gl_ScopeDevice, gl_StorageSemanticsNone, gl_SemanticsRelaxed);
        }
    }
}
