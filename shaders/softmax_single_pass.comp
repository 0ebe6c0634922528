#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_memory_scope_semantics : require
#pragma use_vulkan_memory_model
// KIND_SINGLE_PASS: softmax of long rows in one dispatch. A row is cut into
// `chunks` chunks, one workgroup each (work item w: chunk w % chunks of row
// w / chunks). A workgroup
// 1. reads its chunk (into registers where the chunk is one tile) and
//    publishes the chunk's (m, d) and flags: three relaxed atomic stores
//    and a ready flag stored with release semantics;
// 2. gathers its row's partials as their ready flags turn up (acquire),
//    merging each once;
// 3. writes its chunk (from registers, or re-read tile by tile), and
//    counts itself done in the row (an atomic add it does not wait for).
// The ready flags hold the dispatch's generation + 1, so nothing needs
// resetting: a row's count grows by `chunks` (a power of two) per
// dispatch, and a workgroup reads it before counting itself, so every
// workgroup of a row finds count / chunks = the same generation, whatever
// the others have added. A flag left by the previous dispatch holds that
// generation, not this one's + 1. (Resetting instead, with a returned
// atomic and a zeroing pass at the end of every row, cost 0.7-1.3 us more
// per call on an H200: bench/NOTES.md, v10.)
// Vulkan promises no forward progress to a workgroup whose partial another
// waits for (it may not even have started), so a workgroup never waits
// without bound: after PATIENCE polling rounds it computes the partials
// still missing itself, reading those chunks, and publishes them (the same
// bits their owners publish: the same code on the same data). Waiting is
// then only a matter of speed; on GPUs that run a dispatch's workgroups
// side by side, the partials arrive within the patience and nothing is
// read twice.
//
// The workspace (zero before a plan's first dispatch): 16 bytes per chunk
// {m, d, flags, ready}, then one count per row.
#define SINGLE_PASS
#include "softmax_common.glsl"

#include "softmax_tiles.glsl"

// The workspace as 32-bit words, every access atomic.
layout(std430, binding = 2) coherent buffer Words { uint word[]; };

shared uint shared_word;
shared uint shared_generation;
// workgroup_any() answers, by polling round (round r uses r % 3 and clears
// the next one, which the round before last used).
shared uint shared_any[3];

uint ready_word(uint item) { return 4u * item + 3u; }
uint done_word(uint r) { return 4u * pc.rows * pc.chunks + r; }

// Chunk c of row r: its window (the plan counts chunks over the longest
// window, so an ODD_ROWS row's last chunk may hold nothing).
Span chunk_span(uint r, uint c) {
    Span s = row_span(r);
    uint begin = c * pc.chunk;
    s.end = max(begin, min(s.end, begin + pc.chunk));
    return s;
}

// Invocation 0 publishes a chunk's statistic: the words first, then the
// ready flag with release semantics, so that an acquire of the flag sees
// them.
void publish(uint item, VksmStat s, uint generation) {
    uint w = 4u * item;
    atomicStore(word[w], floatBitsToUint(s.m), gl_ScopeDevice, gl_StorageSemanticsNone, gl_SemanticsRelaxed);
    atomicStore(word[w + 1u], floatBitsToUint(s.d), gl_ScopeDevice, gl_StorageSemanticsNone, gl_SemanticsRelaxed);
    atomicStore(word[w + 2u], s.f, gl_ScopeDevice, gl_StorageSemanticsNone, gl_SemanticsRelaxed);
    atomicStore(word[w + 3u], generation + 1u, gl_ScopeDevice, gl_StorageSemanticsBuffer,
                gl_SemanticsRelease | gl_SemanticsMakeAvailable);
}

bool is_ready(uint item, uint generation) {
    return atomicLoad(word[ready_word(item)], gl_ScopeDevice, gl_StorageSemanticsBuffer,
                      gl_SemanticsAcquire | gl_SemanticsMakeVisible) == generation + 1u;
}

// A published statistic (after is_ready() saw its flag).
VksmStat published(uint item) {
    uint w = 4u * item;
    return VksmStat(uintBitsToFloat(atomicLoad(word[w], gl_ScopeDevice, gl_StorageSemanticsNone, gl_SemanticsRelaxed)),
                    uintBitsToFloat(atomicLoad(word[w + 1u], gl_ScopeDevice, gl_StorageSemanticsNone, gl_SemanticsRelaxed)),
                    atomicLoad(word[w + 2u], gl_ScopeDevice, gl_StorageSemanticsNone, gl_SemanticsRelaxed));
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
        if (lane == 0u) shared_word = is_ready(item, generation) ? 1u : 0u;
        barrier();
        bool ready = shared_word != 0u;
        // Every invocation has read it before invocation 0 writes the next.
        barrier();
        if (!ready) {
            VksmStat s = span_stat(chunk_span(r, c), c * pc.chunk, tile, lanes, lane);
            if (lane == 0u) publish(item, s, generation);
        }
    }
}

// Row r's statistic from all its partials: each invocation merges chunks
// lane, lane + lanes, ... as their flags turn up (`own` is known already);
// the polling rounds are uniform over the workgroup, so that every
// subgroup is whole at the reductions after them.
// `helped`: whether it computed partials itself (the slots then hold
// another chunk's tile).
VksmStat gather_row(uint r, uint generation, uint own, VksmStat own_stat, uint tile, uint lanes, uint lane,
                    out bool helped) {
    helped = false;
    if (lane == 0u) shared_any[0] = shared_any[1] = 0u;
    barrier();
    VksmStat acc = vksm_stat_empty();
    // Chunks lane + k * lanes still to merge (the plan keeps chunks <= 32 x lanes).
    uint pending = 0u;
    for (uint k = 0u; lane + k * lanes < pc.chunks; ++k) pending |= 1u << k;
    for (uint round = 0u;; ++round) {
        for (uint k = 0u; k < 32u; ++k) {
            if ((pending & (1u << k)) == 0u) continue;
            uint c = lane + k * lanes;
            if (c == own) acc = vksm_stat_merge(acc, own_stat);
            else if (is_ready(r * pc.chunks + c, generation)) acc = vksm_stat_merge(acc, published(r * pc.chunks + c));
            else continue;
            pending &= ~(1u << k);
        }
        if (!workgroup_any(pending != 0u, round)) break;
        if (round == PATIENCE) {
            publish_missing(r, generation, tile, lanes, lane);
            helped = true;
        }
    }
    return group_stat(acc);
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
    // A chunk of one tile stays in the slots from its statistic to its write.
    bool held = pc.chunk == tile;
    for (uint item = gl_WorkGroupID.x; item < items; item += gl_NumWorkGroups.x) {
        uint r = item / pc.chunks, c = item - r * pc.chunks;
        Span chunk = chunk_span(r, c);
        // Read while the chunk loads; span_stat's barriers pass it on.
        if (lane == 0u) shared_generation = row_generation(r);
        VksmStat own = span_stat(chunk, c * pc.chunk, tile, lanes, lane);
        uint generation = shared_generation;
        if (lane == 0u) publish(item, own, generation);
        bool helped;
        // The row's statistic with its sink; chunk 0 stores its log-sum-exp.
        VksmStat s = FINISH_ROW(r, gather_row(r, generation, c, own, tile, lanes, lane, helped), c == 0u && lane == 0u);
        if (held && !helped) write_tile(chunk, c * pc.chunk, lanes, lane, s, false);
        else span_write(chunk, c * pc.chunk, tile, lanes, lane, s);
        if (lane == 0u)
            atomicAdd(word[done_word(r)], 1u, gl_ScopeDevice, gl_StorageSemanticsNone, gl_SemanticsRelaxed);
    }
}
