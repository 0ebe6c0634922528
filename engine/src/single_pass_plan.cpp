// The single-pass path's plan: when a vendor that takes it only for
// resident grids takes it, and how its rows are cut into chunks, one
// workgroup each, in one dispatch.
#include <algorithm>
#include <limits>

#include "planning.hpp"
#include "tuning.hpp"
#include "vksoftmax/error.hpp"

namespace vksoftmax::planning {

using namespace tuning;

namespace {

// The grid of a problem's rows at chunks of at most `chunk`: each row in
// the power-of-two count of chunks at or above its share (set_chunks()).
uint64_t wave_grid(const Problem& problem, const Limits& l, uint64_t chunk) {
    return problem.shape.rows() * ceil_pow2(div_up(row_window(problem, Path::single_pass, l), chunk));
}

// A row's count of chunks of kSinglePassBatchChunk, the last one partial.
uint64_t batch_chunks(const Problem& problem, const Limits& l) {
    return div_up(row_window(problem, Path::single_pass, l), kSinglePassBatchChunk);
}

// A backward batch (kSinglePassBatchRows rows or more) whose grid at its
// chunks of kSinglePassBatchChunk (the power of two at or below the count,
// in longer chunks) fills at most half a wave, a workgroup per
// multiprocessor. H100 (580.159.04; bench/NOTES.md, v32), us, the plan's
// chunks of 16384 against chunks filling a wave, f32 / f16 / bf16:
// 8x65536 (32 workgroups -> 128 in chunks of 4096) 9.64 / 8.86 / 9.49
// against 7.51 / 7.14 / 7.20; 16x65536 and 8x131072 (64 -> 128, chunks of
// 8192) 9.62 / 9.31 / 9.83 against 7.71 / 6.83 / 7.02, and 9.79 / 9.29 /
// 9.90 against 7.57 / 7.67 / 7.86. The forward pass has its own rule for
// one wave (held_wave_chunk()).
bool half_wave_batch(const Problem& problem, const Limits& l) {
    const uint64_t rows = problem.shape.rows();
    if (rows < kSinglePassBatchRows) return false;
    const uint64_t whole = floor_pow2(static_cast<uint32_t>(batch_chunks(problem, l)));
    return 2 * rows * whole <= l.multiprocessors;
}

// Backward rows fewer than a batch whose chunks of kSinglePassMinChunk
// pass one wave, which the plan gave two dispatches (resident_rows()),
// single rows included. H200 (580.159.04; bench/NOTES.md, v33),
// us, two dispatches against one wave of held chunks, f32 / f16 / bf16,
// means of six runs in three calls: 4x262144 (128 chunks of 8192 at 256 x
// 8) 9.16 / 8.08 / 8.29 against 8.14 / 7.61 / 7.77; 4x524288 (128 of 16384
// at 512 x 8) 12.03 / 9.40 / 9.74 against 10.53 / 9.14 / 9.21; 7x100000
// (112 of 6256) 8.61 / 7.74 / 7.92 against 7.48 / 7.36 / 7.46; f32
// 2x524288 9.12 against 8.43. Single rows lost so on an H100 (v32: f32
// 1x1048576 9.64 against 9.81) and win on an H200 since a held chunk's
// statistic takes one exchange (v82: 9.11 against 6.44). Two and three
// rows of 16-bit, H100 (v41), two dispatches against the wave, f16 /
// bf16: 2x524288 (128 of 8192) 8.37 / 8.56 against 7.90 / 8.08; 3x262144
// (96) 8.07 / 8.27 against 7.60 / 7.84; 2x1048576 (128 of 16384) 9.78 /
// 10.12 against 9.24 / 9.29, where an H200 found f16 level (9.83 against
// 9.88, v33).
bool few_rows_past_a_wave(const Problem& problem, const Limits& l) {
    return problem.shape.rows() < kSinglePassBatchRows &&
           wave_grid(problem, l, kSinglePassMinChunk) > l.multiprocessors;
}

// Whether fewer rows' wave of `grid` workgroups fills more than
// kSinglePassWaveLeastFill of the multiprocessors. H200 (v33), us, two
// dispatches against the wave, f32 / f16 / bf16: 6x262144 (96
// workgroups) 10.52 / 8.78 / 9.05 against 9.80 / 8.66 / 9.03; f32
// 3x300000 (96) 8.96 against 8.57; 5x200000 (80) 9.00 / 8.04 / 8.20
// against 9.09 / 8.41 / 8.44.
bool few_rows_wave_fills(uint64_t grid, const Limits& l) {
    return static_cast<double>(grid) > kSinglePassWaveLeastFill * l.multiprocessors;
}

// An f32 backward batch that wave_chunk()'s rules do not take (it is
// past half a wave), whose chunks of kSinglePassHeldChunk make at most
// kSinglePassHeldChunkWaves workgroups per multiprocessor and at most
// kSinglePassSpreadMaxChunks / 2 a row: those, held at 256 x 8, rather
// than chunks of kSinglePassBatchChunk read in four tiles of 256 x 4 and
// re-read for the write (16-bit batches hold theirs at 512 x 8 instead:
// held_wave_batch()). H200 (580.159.04; bench/NOTES.md, v66), us, means
// of two runs: 16x131072 8.14 -> 7.92, 32x65536 8.15 -> 7.86, 8x262144
// 8.21 -> 8.05, 12x131072 7.60 -> 7.24, 24x65536 7.61 -> 7.14; 10x131072
// (160 workgroups) level, 7.11 -> 7.14. 16-bit batches at 256 x 8 were
// level with 512 x 8 or slower.
uint64_t held_f32_batch_chunk(const Problem& problem, const Limits& l) {
    const uint64_t rows = problem.shape.rows();
    if (problem.dtype != Dtype::f32 || rows < kSinglePassBatchRows) return 0;
    const uint64_t grid = wave_grid(problem, l, kSinglePassHeldChunk);
    return grid <= kSinglePassHeldChunkWaves * l.multiprocessors && grid / rows <= kSinglePassSpreadMaxChunks / 2
               ? kSinglePassHeldChunk
               : 0;
}

// A backward single row whose chunks of kSinglePassMinChunk fill more than
// half a wave and at most one (the plan would hold them at 256 x 4):
// half as many chunks of kSinglePassHeldChunk, held at 256 x 8, as the
// forward pass holds such rows (held_wave_chunk()); 0 otherwise. H200
// (580.159.04; bench/NOTES.md, v82 and v86), us, means of two rounds, 128
// chunks of 4096 at 256 x 4 against 64 of 8192 at 256 x 8, f32 / f16 /
// bf16: 1x524288 5.63 / 5.25 / 5.37 against 5.62 / 5.10 / 5.28; 1x400000
// 5.48 / 5.21 / 5.31 against 5.44 / 4.99 / 5.21; 1x300000 5.43 / 5.21 /
// 5.27 against 5.28 / 4.82 / 5.02. Two to seven rows were 3-13% slower
// so (2x262144 5.37 / 4.96 / 5.12 against 5.53 / 5.30 / 5.54), and keep
// their chunks of kSinglePassMinChunk.
uint64_t backward_single_row_chunk(const Problem& problem, const Limits& l) {
    if (!problem.backward || l.multiprocessors == 0 || problem.shape.rows() != 1) return 0;
    const uint64_t grid = wave_grid(problem, l, kSinglePassMinChunk);
    return 2 * grid > l.multiprocessors && grid <= l.multiprocessors ? kSinglePassHeldChunk : 0;
}

// The chunk of a backward problem spread over one wave of held chunks
// (half_wave_batch(), few_rows_past_a_wave()): the least of
// kSinglePassMinChunk, twice it, ..., kSinglePassBatchChunk whose grid fits
// one wave, each chunk then the count's share of the row (fill_chunks()),
// held in one tile of wave_workgroup(); else an f32 batch's
// held_f32_batch_chunk(); 0 where no rule applies or no such chunk fits. A
// batch comes here at kSinglePassBatchChunk only where its rows round their
// count up (a whole count of half a wave would fit at half the chunk): H200
// (v33), us, means of four to six runs, 4 chunks of 28672 in tiles of
// 256 x 4 against 8 of 12504 at 512 x 8, f32 / f16 / bf16: 16x100000
// 12.18 / 11.05 / 11.94 against 9.39 / 8.31 / 7.48; 8x200000 (8 of 28672
// against 16 of 12504) 12.28 / 11.11 / 11.99 against 9.54 / 8.58 / 8.49;
// 12x100000 (96 workgroups) 11.95 / 10.55 / 11.12 against
// 9.15 / 8.29 / 8.15.
uint64_t wave_chunk(const Problem& problem, const Limits& l) {
    if (!problem.backward || l.multiprocessors == 0) return 0;
    if (const uint64_t chunk = backward_single_row_chunk(problem, l)) return chunk;
    const bool batch = half_wave_batch(problem, l);
    if (!batch && !few_rows_past_a_wave(problem, l)) return held_f32_batch_chunk(problem, l);
    uint64_t chunk = 0, grid = 0;
    for (uint64_t c = kSinglePassBatchChunk; c >= kSinglePassMinChunk; c /= 2) {
        const uint64_t g = wave_grid(problem, l, c);
        if (g > l.multiprocessors) break;
        chunk = c;
        grid = g;
    }
    return chunk != 0 && (batch || few_rows_wave_fills(grid, l)) ? chunk : 0;
}

// The workgroup that holds a wave_chunk() in one tile of at most
// kSinglePassHeldSlots slots: 256 x 4 or 8 for chunks of 4096 or 8192,
// 512 x 8 for 16384. H100 (v32), us: f32 4x524288 10.92 against 11.58
// at 1024 x 4 and 12.78 in tiles of 256 x 4, re-read; H200 (v33): f32
// 16x100000 9.41 against 9.84 at 1024 x 4 and 9.84 at 256 x 4 (f16 8.28
// against 7.80 and 8.83; bf16 7.50 against 7.98 and 9.05).
uint32_t wave_workgroup(uint64_t chunk) {
    return static_cast<uint32_t>(std::max<uint64_t>(kSinglePassWorkgroup, chunk / (4 * kSinglePassHeldSlots)));
}

// The most chunks of `chunk` a row that held_wave_chunk() takes in a grid
// of `grid` workgroups: kSinglePassSpreadMaxChunks, half that past half a
// wave (the partials each lane of the gathering subgroup waits for: a
// second costs about a round trip, v36). Fewer rows than a batch take
// more: chunks of 8192 up to kSinglePassFewF32RowsMaxChunks in fp32, and
// in 16-bit types up to kSinglePassFewRowsMaxChunks in one wave or
// kSinglePassSpreadMaxChunks in two; 16-bit chunks of 16384 up to
// kSinglePassFewRowsMaxChunks. H200 (580.159.04; bench/NOTES.md, v82), us,
// means of two rounds, two dispatches against one:
// - fp32 single rows in 129-256 chunks of 8192, two workgroups a
//   multiprocessor: 1x1048577 9.90 -> 8.89, 1x1572864 10.82 -> 9.28,
//   1x2097152 11.76 -> 10.03;
// - 16-bit rows of more than 64 chunks of 8192 that would take two
//   workgroups a multiprocessor, in chunks of 16384 at 512 x 8 in one
//   wave, f16 / bf16: 2x600000 9.15 / 9.32 -> 6.80 / 6.95, 2x1048576 10.03
//   / 10.23 -> 7.26 / 7.44, 1x1572864 9.61 / 9.61 -> 7.93 / 7.86,
//   1x2097152 10.38 / 10.51 -> 8.25 / 8.26 (in chunks of 8192 two a
//   multiprocessor, 2x1048576 7.91 / 8.22, 1x2097152 9.10 / 9.49); single
//   rows of 8192 in one wave stay there (f16 / bf16 1x1048576 6.78 / 7.17
//   against 6.84 / 7.48 in chunks of 16384), and so do rows of 64 chunks
//   or fewer in two (f16 / bf16 6x262144 6.43 / 6.95 against 6.87 / 7.09;
//   4x524288 level).
uint64_t wave_row_chunks_most(const Problem& problem, const Limits& l, uint64_t chunk, uint64_t grid) {
    const bool few = problem.shape.rows() < kSinglePassBatchRows;
    if (few && chunk == kSinglePassHeldChunk) {
        if (problem.dtype == Dtype::f32) return kSinglePassFewF32RowsMaxChunks;
        return grid > l.multiprocessors ? kSinglePassSpreadMaxChunks : kSinglePassFewRowsMaxChunks;
    }
    if (few && problem.dtype != Dtype::f32 && chunk == kSinglePassBatchChunk) return kSinglePassFewRowsMaxChunks;
    return 2 * grid <= l.multiprocessors ? kSinglePassSpreadMaxChunks : kSinglePassSpreadMaxChunks / 2;
}

// The chunk of a forward single row that chunks of kSinglePassMinChunk
// cut into kSinglePassSpreadSingleRowChunks (a power of two: rows of
// 32769-65536 elements): half that chunk, twice as many, each the count's
// share of the row, held at kSinglePassSpreadSingleRowWorkgroup
// invocations rather than at 256, so that the row's exps, which each
// chunk's statistic waits on, spread over twice the multiprocessors; 0
// otherwise. The path stays the one held_wave_chunk() chose for such rows.
// H200 (580.159.04; bench/NOTES.md, v88, call 2), us, means of three
// rounds, 256 x 4 against 128 x 4, f32 / f16 / bf16: 1x40000 (32 chunks of 1256) 5.00 /
// 4.99 / 5.01 against 4.89 / 4.93 / 4.90; 1x65536 (32 of 2048) 5.04 /
// 5.01 / 5.04 against 4.89 / 4.89 / 4.96; f32 1x50257 5.32 against 5.21;
// log-softmax (two rounds) f32 1x50257 5.37 against 5.21, 1x65536 5.04 /
// 5.07 / 5.14 against 4.97 / 5.01 / 5.02. Rows of 16384-32768 were 0-3.4%
// slower in 32 chunks of 1024 at 128 x 2 (f32 1x32768 4.71 against 4.87,
// f16 1x32000 4.69 against 4.80) and keep theirs. 16-bit rows not a
// multiple of 4 long take odd_row_chunk() first.
uint64_t spread_single_row_chunk(const Problem& problem, const Limits& l) {
    if (problem.backward || l.multiprocessors == 0 || problem.shape.rows() != 1 ||
        wave_grid(problem, l, kSinglePassMinChunk) != kSinglePassSpreadSingleRowChunks ||
        kSinglePassSpreadSingleRowWorkgroup < l.min_workgroup)
        return 0;
    return kSinglePassMinChunk / 2;
}

// The chunk of a forward problem spread over one wave of held chunks, each
// in one tile of wave_workgroup(): chunks of kSinglePassMinChunk (256 x 4)
// where their grid fills at most half the multiprocessors, else of
// kSinglePassHeldChunk (256 x 8) where they fit one wave (fewer rows than
// a batch, f32 and f16 batches, and bf16 batches of rows a workgroup could
// hold: two workgroups a multiprocessor, kSinglePassHeldChunkWaves), else
// of kSinglePassBatchChunk (512 x 8) where those fill more than half of
// one; each time at most wave_row_chunks_most() a row. 0 where none fits.
// H100 (580.159.04; bench/NOTES.md, v40), us, two dispatches against the
// chunk taken, f32 / f16 / bf16:
// - 4096: 2x131072 (64 workgroups) 8.44 / 8.23 / 8.35 against 7.65 /
//   7.41 / 7.47; in a full wave slower than 8192 at half (f16 4x131072
//   8.18 against 7.72);
// - 8192: 1x524288 (64) 8.80 / 8.39 / 8.43 against 8.53 / 8.25 / 8.23;
//   4x131072 8.66 / 8.44 / 8.50 against 8.16 / 7.88 / 7.93; 4x262144
//   (128) 9.56 / 8.98 / 8.96 against 8.96 / 8.91 / 9.01;
// - 16384: 16x100000 (128 of 12504) 11.13 / 9.97 / 10.11 against 9.76 /
//   9.66 / 9.80 (the batch's re-read chunks of 16384: 13.10 in f32);
//   f32 4x524288 11.95 against 11.13. At half a wave slower than two
//   dispatches (f32 1x524288 in 32: 8.77 against 9.83).
// - 8192 for fewer rows than a batch, two workgroups a multiprocessor
//   (H200, bench/NOTES.md, v82), us, means of two rounds against the plan
//   before (two dispatches, or 16384 at 512 x 8 one a multiprocessor for
//   f32 3x524288 and 4x524288), f32 / f16 / bf16: 2x524288 9.46 / 8.61 /
//   8.69 against 6.48 / 5.99 / 6.23; 3x524288 8.26 / 9.50 / 9.36 against
//   7.80 / 6.80 / 7.14; 4x524288 8.84 / 10.04 / 10.22 against 8.26 / 7.25
//   / 7.50; f16 / bf16 6x262144 9.25 / 9.44 against 6.50 / 7.01; f32
//   2x1048576 11.44 against 9.22. On an H100 16-bit rows fewer than a
//   batch were slower so (f16 / bf16 6x262144 in 96 workgroups of 16384
//   9.72 / 9.69 against 9.98 / 10.15; f16 2x524288 in 128 of 8192 8.92
//   against 9.16; v40), before polling rounds visited only the pending
//   partials (v64) and a held chunk's statistic took one exchange (v65).
// - 8192 in two workgroups a multiprocessor rather than 16384 at 512 x 8
//   in one, since a held chunk's statistic takes one exchange at 256
//   (H200, bench/NOTES.md, v66), us, means of two runs: f32 16x131072
//   8.60 -> 7.83, 24x65536 8.10 -> 7.28, 6x262144 8.24 -> 7.52, 5x262144
//   7.75 -> 7.28; f16 16x131072 7.05 -> 6.66, 24x65536 6.81 -> 6.28,
//   12x100000 6.56 -> 6.37; bf16 -2% to +3% (12x100000 6.80 -> 7.00,
//   8x200000 7.04 -> 7.25), so bf16 batches keep 512 x 8 for rows past a
//   workgroup row. bf16 batches of rows a workgroup could hold take 256 x 8
//   two a multiprocessor too (spread_short_rows(); v72, forced, us, the
//   workgroup row of 1024 x 4 against chunks of 8192: 64x32000 7.87 ->
//   7.01, 48x32000 7.74 -> 7.05, 64x20480 7.50 -> 6.87).
uint64_t held_wave_chunk(const Problem& problem, const Limits& l) {
    if (problem.backward || l.multiprocessors == 0) return 0;
    const uint64_t rows = problem.shape.rows();
    const bool two_per_multiprocessor =
        rows < kSinglePassBatchRows || problem.dtype != Dtype::bf16 || workgroup_holds_row(problem, l);
    for (const uint64_t chunk : {kSinglePassMinChunk, kSinglePassHeldChunk, kSinglePassBatchChunk}) {
        const uint64_t grid = wave_grid(problem, l, chunk);
        const bool half = 2 * grid <= l.multiprocessors;
        const uint64_t waves = chunk == kSinglePassHeldChunk && two_per_multiprocessor ? kSinglePassHeldChunkWaves : 1;
        if (grid > waves * l.multiprocessors || grid / rows > wave_row_chunks_most(problem, l, chunk, grid) ||
            wave_workgroup(chunk) > l.max_workgroup)
            continue;
        if (chunk == kSinglePassMinChunk && !half) continue;
        if (chunk == kSinglePassBatchChunk && half) continue;
        return chunk;
    }
    return 0;
}

// Whether a contiguous row shorter than kSinglePassSpreadRowMin is one
// that short_row_chunk() may spread: not a multiple of 4 long, at least
// kSinglePassShortOddRowMin elements, fp32 ones from
// kSinglePassShortOddF32RowMin (shorter ones a workgroup row holds at 5-8
// slots, kOddRowSpreadSlots, faster than such chunks).
bool short_odd_row(const Problem& problem) {
    const uint64_t axis = problem.shape.axis;
    if (axis % 4 == 0 || axis < kSinglePassShortOddRowMin) return false;
    return problem.dtype != Dtype::f32 || axis >= kSinglePassShortOddF32RowMin;
}

// The chunk of a forward row shorter than kSinglePassSpreadRowMin that
// one dispatch reads faster in small chunks than one workgroup does:
// contiguous rows whose length is not a multiple of 4 (a workgroup row
// reads their heads and tails element by element, in 8-byte windows for
// 16-bit types), 16-bit ones from kSinglePassShortOddRowMin elements, fp32
// ones where short_odd_row() says. Chunks of kSinglePassShortChunk
// at 256 x 1 where the row's window is at most kSinglePassShortRow
// elements (16-bit rows' windows reach 7 elements before their first), of
// twice that at 256 x 2 past it; rows of up to kSinglePassShortRow
// elements in grids of at most half the multiprocessors (several rows
// only up to kSinglePassShortBatchRow elements), longer ones in grids of
// up to kSinglePassShortChunkWaves workgroups a multiprocessor; 0
// otherwise. H200 (580.159.04; bench/NOTES.md, v70), us, means of two
// rounds, the workgroup row against chunks of 1024 / 2048, f16 / bf16
// (fp32):
// - 1x4099 5.33 / 5.33 against 5.08 / 5.03; 4x5001 5.72 / 6.08 against
//   5.44 / 5.40; 1x6143 6.12 / 6.58 against 5.02 / 5.07; 8x6143 6.49 /
//   6.97 against 5.41 / 5.46 (1024);
// - 1x8191 5.32 / 5.45 against 5.12 / 5.29; 1x12287 6.51 / 7.71 against
//   5.11 / 5.26 (f32 5.67 against 5.17); 1x16383 6.35 / 6.65 against 5.08
//   / 5.35 (f32 5.84 against 5.18); 4x16383 9.34 / 9.62 against 5.61 /
//   5.83 (f32 6.26 against 5.34); 16x12287 6.91 / 8.06 against 5.73 /
//   5.88 (f32 6.05 against 5.53); 32x12287 (256 workgroups) 7.01 / 8.18
//   against 5.96 / 6.20 (f32 6.07 against 5.82).
// - fp32 rows under 10240 at 10 slots or more (v71, means of two rounds, the
//   workgroup row against chunks of 1024 / 2048): 1x4611 (128 x 10) 4.65
//   against 4.51; 1x6143 (128 x 13) 5.36 against 4.65; 1x7167 (128 x 15)
//   5.83 against 4.61; 1x8189 (128 x 16) 8.68 against 4.55; 4x6143 5.77
//   against 4.94; 1x9217 (256 x 10) 4.92 against 4.80; 1x10237 5.12
//   against 4.85.
// Kept on the workgroup row, as fast or faster there in some device run:
// - rows of up to 4096 (f32 / f16 4x4095 4.80 / 5.19 against 4.99 / 5.47
//   in chunks of 1024);
// - batches of rows of 8191 (f16 / bf16 2x8191 5.50 / 5.61 against 5.41 /
//   5.61, 8x8191 5.45 / 5.52 against 5.53 / 5.88; 16x8191 5.63 / 5.78
//   against 5.80 / 5.94 in 128 chunks of 2048), and batches of rows of
//   6145-8192, not measured between those;
// - fp32 rows under 10240 at 9 slots or fewer (1x4099 4.58 against 4.84
//   in one run, 4.64 against 4.67 in another; 1x8193 4.76 against 5.14
//   and 4.77 against 4.81);
// - fp32 and 16-bit rows a multiple of 4 long (f32 1x12288 4.86 against
//   5.02 in one run, 4.90 against 4.72 in another; f16 1x12288 4.43
//   against 4.54).
uint64_t short_row_chunk(const Problem& problem, const Limits& l) {
    const Shape& s = problem.shape;
    if (problem.backward || s.inner != 1 || l.multiprocessors == 0 || s.axis >= kSinglePassSpreadRowMin) return 0;
    if (!short_odd_row(problem)) return 0;
    if (s.axis <= kSinglePassShortRow && s.axis > kSinglePassShortBatchRow && s.rows() > 1) return 0;
    const bool wide = row_window(problem, Path::single_pass, l) > kSinglePassShortRow;
    const uint64_t chunk = wide ? 2 * kSinglePassShortChunk : kSinglePassShortChunk;
    const uint64_t most =
        s.axis <= kSinglePassShortRow ? l.multiprocessors / 2 : kSinglePassShortChunkWaves * l.multiprocessors;
    return wave_grid(problem, l, chunk) <= most && wave_workgroup(chunk) <= l.max_workgroup ? chunk : 0;
}

// The chunk of forward 16-bit rows not a multiple of 4 long from those a
// workgroup row would read in tiles and re-read (8-byte windows over more
// than kHalfRowSlotsAtMaxWorkgroup slots of the largest workgroup) to
// those whose 16-byte windows fill kSinglePassOddRowMaxChunks chunks of
// kSinglePassMinChunk (rows of 16382-65529): those chunks, held at 256 x 4
// in 16-byte windows, where their grid is at most
// kSinglePassWorkgroupsPerMultiprocessor workgroups a multiprocessor; 0
// otherwise. H200 (580.159.04; bench/NOTES.md, v71), us, means of two
// rounds, the plan before (48 and 64 rows of up to 32761: workgroup rows
// of 1024 x 4 in tiles; the others chunks of 8192 held at 256 x 8)
// against chunks of 4096, f16 / bf16: 64x32001 9.48 / 9.90 against 7.36 /
// 7.70; 48x32001 9.47 / 9.86 against 6.71 / 6.99; 64x20001 9.64 / 9.87
// against 7.61 / 7.84; 32x32001 7.12 / 7.38 against 6.28 / 6.48; 16x32001
// 7.14 / 7.32 against 5.92 / 6.09; rows of 4 and 8 of 32001 level (they
// took 256 x 4 already); 8x50257 7.28 / 7.61 against 5.97 / 6.15,
// 16x50257 7.26 / 7.56 against 6.35 / 6.52, 32x50257 8.04 / 7.96 against
// 7.54 / 7.81, 16x65529 7.16 / 7.25 against 6.28 / 6.48 (rows of 1 and 4
// took 256 x 4 already). Past the grid, slower (forced): 96x32001 9.69 / 10.03
// against 10.95 / 11.41 (768 workgroups), 64x50257 10.62 / 10.94 against
// 12.34 / 12.96 (1024).
uint64_t odd_row_chunk(const Problem& problem, const Limits& l) {
    const Shape& s = problem.shape;
    if (problem.backward || s.inner != 1 || l.multiprocessors == 0 || dtype_size(problem.dtype) != 2 ||
        s.axis % 4 == 0)
        return 0;
    if (row_window(problem, Path::workgroup_row, l) <= 4ull * kHalfRowSlotsAtMaxWorkgroup * l.max_workgroup ||
        row_window(problem, Path::single_pass, l) > kSinglePassOddRowMaxChunks * kSinglePassMinChunk)
        return 0;
    const uint64_t most = uint64_t{kSinglePassWorkgroupsPerMultiprocessor} * l.multiprocessors;
    return wave_grid(problem, l, kSinglePassMinChunk) <= most ? kSinglePassMinChunk : 0;
}

// The chunk of a forward batch that one wave does not cover
// (held_wave_chunk() is 0) but whose chunks of kSinglePassHeldChunk, held
// at 256 x 8, make a grid of at most kSinglePassHeldBatchGrid workgroups
// per multiprocessor: those rather than the batch's chunks of
// kSinglePassBatchChunk read in four tiles and re-read for the write,
// and rather than two dispatches where the batch is under
// kSinglePassBatchMinBytes (resident_batch()); 0 otherwise.
uint64_t held_batch_chunk(const Problem& problem, const Limits& l) {
    if (problem.backward || l.multiprocessors == 0 || problem.shape.rows() < kSinglePassBatchRows) return 0;
    const uint64_t grid = wave_grid(problem, l, kSinglePassHeldChunk);
    return grid <= uint64_t{kSinglePassHeldBatchGrid} * l.multiprocessors ? kSinglePassHeldChunk : 0;
}

// The chunk of a backward batch (kSinglePassBatchRows rows or more) of rows
// a workgroup row holds, of kSinglePassSpreadRowMin elements or more and
// over kSinglePassSpreadRowMaxWorkgroupBytes, whose chunks of
// kSinglePassHeldChunk make at most kSinglePassHeldChunkWaves workgroups a
// multiprocessor: those, held at 256 x 8, as the forward pass holds such
// rows (held_wave_chunk()); 0 otherwise. H200 (580.159.04; bench/NOTES.md,
// v72), us, means of two rounds, a workgroup row of 1024 x 4 against
// chunks of 8192, f32 / f16 / bf16: 48x32000 9.15 / 6.76 / 7.68 against
// 7.12 / 5.95 / 6.25; 64x32000 9.22 / 6.86 / 7.80 against 7.72 / 6.32 /
// 6.45; 64x32768 9.59 / 6.93 / 7.89 against 7.81 / 6.36 / 6.49; 66x24576
// 8.01 / 6.70 / 7.45 against 7.03 / 6.00 / 6.16; 40x20480 7.10 / 6.50 /
// 7.11 against 5.82 / 5.58 / 5.87; 64x17000 7.01 / 6.61 / 7.10 against
// 6.11 / 5.59 / 6.05; rows not a multiple of 4 long, 64x32001 10.36 /
// 10.91 / 11.92 against 8.33 / 7.90 / 8.28 and 48x24577 9.54 / 11.33 /
// 12.10 against 7.05 / 8.00 / 8.25.
uint64_t held_backward_batch_chunk(const Problem& problem, const Limits& l) {
    const uint64_t axis = problem.shape.axis;
    if (!problem.backward || l.multiprocessors == 0 || problem.shape.rows() < kSinglePassBatchRows ||
        axis < kSinglePassSpreadRowMin || axis * dtype_size(problem.dtype) <= kSinglePassSpreadRowMaxWorkgroupBytes ||
        !workgroup_holds_row(problem, l))
        return 0;
    const uint64_t grid = wave_grid(problem, l, kSinglePassHeldChunk);
    return grid <= kSinglePassHeldChunkWaves * l.multiprocessors ? kSinglePassHeldChunk : 0;
}

// A 16-bit backward batch of whole chunks of kSinglePassBatchChunk that
// make more than half a wave and at most one: each chunk held in one tile
// of wave_workgroup() (512 x 8 slots), as a backward batch of half a wave
// holds its chunks of 16384, rather than read in four tiles of 256 x 4 and
// re-read for its write. H200 (580.159.04; bench/NOTES.md, v46), us, means
// of three runs, 1024 x 4 against 512 x 8, f16 / bf16: 16x131072 8.04 /
// 8.23 against 7.58 / 7.64; 32x65536 8.01 / 8.25 against 7.63 / 7.63;
// 16x120000 7.85 / 8.04 against 7.82 / 7.39; 12x131072 8.19 / 8.55
// against 8.05 / 8.00. Held at all, H100
// (bench/NOTES.md, v32), us, the plan before against 1024 x 4, two calls:
// f16 16x131072 9.51 / 9.19 against 8.63 / 8.62, 32x65536 9.37 / 8.94
// against 8.57 / 8.60, 8x262144 9.71 against 9.59; bf16 16x131072 10.07 /
// 10.04 against 8.67 / 8.70, 32x65536 10.05 / 9.21 against 8.66 / 8.67,
// 8x262144 10.12 against 9.54. f32 is level or slower so (16x131072 10.33
// against 11.00; 10.41 at 512 x 8), and grids past a wave much slower
// (f16 64x65536, 256 workgroups: 11.30 against 16.10). Batches of half a
// wave or less take wave_chunk() instead.
bool held_wave_batch(const Problem& problem, const Limits& l) {
    if (!problem.backward || problem.dtype == Dtype::f32 || l.multiprocessors == 0 ||
        l.max_workgroup < wave_workgroup(kSinglePassBatchChunk) || problem.shape.rows() < kSinglePassBatchRows)
        return false;
    const uint64_t chunks = batch_chunks(problem, l);
    return chunks == floor_pow2(static_cast<uint32_t>(chunks)) && problem.shape.rows() * chunks <= l.multiprocessors;
}

// Chunk boundaries of the single-pass path where it sizes chunks by the
// row rather than by tiles: whole vectors of every access width (8
// elements: 32-byte sectors of fp32). Fine enough that the chunks of a
// count up to 256 all hold elements (a row of at least count x 2048 split
// in `count` leaves less than 8 elements of slack); in a count of 512 the
// last may still be empty.
constexpr uint64_t kSinglePassChunkAlign = 8;

}  // namespace

// A batch of long rows the single-pass path was measured faster on, where
// the vendor takes it only for those (SinglePassRule::resident_batches_only)
// and one wave of held chunks does not cover it (spread_over_a_wave()):
// enough rows and bytes to fill the GPU, few enough bytes to stay in L2
// between a chunk's statistic and its re-read (or held chunks of a few
// waves, held_batch_chunk(), whatever their bytes), a grid the GPU holds at
// once, so that no workgroup waits on one that has not started (a grid
// larger than that ran up to 500x slower), and chunks that the rows fill
// to at least 3/4 (a power-of-two chunk count can leave chunks empty: f16
// 32x151936 in 16 chunks of 16384, 10 of them used, was 18% slower than
// two dispatches; plan_single_pass() now gives such batches fewer, longer
// chunks, and this guards the rest). bench/NOTES.md, v18 and v20.
bool resident_batch(const DeviceInfo& d, const Problem& problem, const PlanOptions& options, const Limits& l) {
    const uint64_t bytes = problem.shape.elements() * dtype_size(problem.dtype);
    if (problem.shape.rows() < kSinglePassBatchRows || bytes > kSinglePassBatchMaxBytes || d.multiprocessors == 0)
        return false;
    if (bytes < kSinglePassBatchMinBytes && (options.chunk_elements || !held_batch_chunk(problem, l))) return false;
    const Geometry g = plan_single_pass(problem, options, l);
    const uint64_t filled = row_window(problem, Path::single_pass, l);
    return g.items <= uint64_t{kSinglePassWorkgroupsPerMultiprocessor} * d.multiprocessors &&
           4 * filled >= 3 * uint64_t{g.chunks} * g.chunk;
}

// Backward rows the single-pass path was measured faster on, where the
// vendor takes it only for resident grids: grids of one wave at most (a
// workgroup per multiprocessor), and batches (kSinglePassBatchRows rows or
// more, whose chunks are re-read tiles, light on registers) whose every
// row's chunks are resident at once (kSinglePassWorkgroupsPerMultiprocessor
// per multiprocessor), so that no chunk waits on one of its row's that
// cannot start. Against two dispatches the backward pass reads y and dy
// once instead of twice (the second time partly from L2), a larger saving
// than the forward's. H100 (580.159.04; bench/NOTES.md, v22), us, single
// pass against two dispatches:
// - batches: f32 32x151936 26.9 against 33.1, 64x65536 21.5 against 27.5,
//   16x524288 54.4 against 57.7, 128x151936 (1024 workgroups) 129.1
//   against 135.5; f16 and bf16 3-17% faster, level at bf16 8x262144
//   (10.10 against 10.03);
// - one wave: 1x131072 (32 chunks) 7.2 against 7.8 (f16 7.1 against 7.3);
// - fewer rows on more workgroups are slower: 1x1048576 (256 chunks)
//   10.1 against 9.5, 2x1048576 14.3 against 12.8, 1x16777216 116.7
//   against 113.7; 4x262144 is mixed (f32 9.06 against 9.43, bf16 8.61
//   against 8.48). Several such rows, and single rows on an H200 (v82),
//   are faster in one wave of longer chunks (wave_chunk(),
//   plan_single_pass()).
bool resident_rows(const DeviceInfo& d, const Problem& problem, const PlanOptions& options, const Limits& l) {
    if (d.multiprocessors == 0) return false;
    const Geometry g = plan_single_pass(problem, options, l);
    const uint64_t resident = uint64_t{kSinglePassWorkgroupsPerMultiprocessor} * d.multiprocessors;
    return g.items <= d.multiprocessors || (problem.shape.rows() >= kSinglePassBatchRows && g.chunks <= resident);
}

// Rows long enough that one workgroup holds them only at its most slots,
// where the vendor takes the path for resident grids: any count of them
// whose chunks make one wave at most, each chunk held at 256 x 8 slots at
// most (4096 or 8192 elements), spread over that wave in one dispatch
// rather than read by one workgroup a row. H200 (580.159.04;
// bench/NOTES.md, v64), us, a workgroup row against one dispatch, f32 /
// f16: 1x24576 6.45 / 6.80 against 5.26 / 5.14; 4x32768 7.43 / 6.86
// against 5.71 / 5.55; 32x32768 8.14 / 7.13 against 6.71 / 6.27;
// backward f32 2x32768 7.62 against 4.57, f16 32x32768 6.62 against
// 5.72. With a chunk's statistic in one exchange (v65), forward rows from
// 16384 elements and over 32 KB in three chunks or more: f32 1x16384 5.43
// against 5.28, 8x16384 5.63 against 5.35, 16x20480 6.24 against 5.60;
// f16 1x20480 6.71 against 5.05, 32x20480 6.94 against 5.52; 16-bit rows
// of 16385-20479 (v68), f16 / bf16 1x18000 6.70 / 6.92 against 4.77 /
// 4.75, 16x20000 6.89 / 7.31 against 5.32 / 5.65, 1x16385 (workgroups of
// 1024 reading odd rows) 9.17 / 9.41 against 5.26 / 5.44. 16-bit rows of
// 16384 stay on workgroup rows (f16 4x16384 4.95 against 5.10), and so do
// rows of two chunks (f32 64x16384 5.97 against 6.21). Before the
// polling rounds visited only the pending partials (v64), one dispatch
// won only on single rows of 30000 or more (v23). Shorter rows that
// short_row_chunk() gives small chunks (some rows not a multiple of 4
// long) take the path in those. Held chunks of 8192 that
// held_wave_chunk() gives two workgroups a multiprocessor (fp32, 16-bit
// batches) take it in grids of up to two waves (v72), us, a workgroup row
// against one dispatch, means of two rounds, f32: 34x32000 8.35 against
// 6.61, 48x32000 8.34 against 7.12, 64x32000 8.49 against 7.70, 48x24576
// 7.30 against 6.52, 64x32768 8.55 against 7.80, 64x20480 6.87 against
// 6.67, 64x17000 6.43 against 6.46; f16 48x32000 7.18 against 6.24,
// 64x32000 7.25 against 6.48, 64x20480 7.03 against 6.19, 64x17000 7.06
// against 6.17. Contiguous rows only: strided ones (inner > 1) were not
// measured.
bool spread_short_rows(const DeviceInfo& d, const Problem& problem, const PlanOptions& options, const Limits& l) {
    const uint64_t axis = problem.shape.axis;
    const bool held_backward_batch = !options.chunk_elements && held_backward_batch_chunk(problem, l) != 0;
    const uint64_t row_min =
        problem.backward && !held_backward_batch ? kSinglePassSpreadBackwardRowMin : kSinglePassSpreadRowMin;
    const bool small_chunks =
        !options.chunk_elements && (short_row_chunk(problem, l) != 0 || odd_row_chunk(problem, l) != 0);
    if (!small_chunks && (axis < row_min || axis * dtype_size(problem.dtype) <= kSinglePassSpreadRowMaxWorkgroupBytes))
        return false;
    if (problem.shape.inner != 1 || d.multiprocessors == 0) return false;
    const SinglePassRule rule = single_pass_rule(d, options.single_pass);
    if (!rule.allowed || !rule.resident_batches_only) return false;
    if (small_chunks) return true;
    const Geometry g = plan_single_pass(problem, options, l);
    const bool held_forward = !options.chunk_elements && held_wave_chunk(problem, l) == kSinglePassHeldChunk;
    const uint64_t waves = held_forward || held_backward_batch ? kSinglePassHeldChunkWaves : 1;
    return g.items <= waves * d.multiprocessors && g.chunk <= kSinglePassHeldChunk &&
           g.chunks >= kSinglePassSpreadMinChunks;
}

// Forward rows longer than a workgroup row, where the vendor takes the
// path for resident grids (choose_path() has checked the rule, as for
// resident_batch()): in one dispatch rather than two where one wave of
// held chunks covers them (held_wave_chunk()), or, with a forced chunk,
// where that chunk makes one wave of at most kSinglePassSpreadMaxChunks a
// row. H100 (580.159.04; bench/NOTES.md, v37-v40), us, two dispatches
// against one, f32 / f16 / bf16: 1x131072 8.34 / 8.17 / 8.24 against 7.68
// / 7.32 / 7.34; 4x65536 8.43 / 8.23 / 8.29 against 7.50 / 7.27 / 7.26;
// 16x65536 9.68 / 8.94 / 9.06 against 8.18 / 8.70 / 8.63; 32x65536 11.88
// / 10.43 / 10.34 against 10.36 / 10.06 / 10.04. Batches that one wave
// does not cover take the path where they stay resident
// (resident_batch()).
bool spread_over_a_wave(const Problem& problem, const PlanOptions& options, const Limits& l) {
    if (problem.backward || l.multiprocessors == 0) return false;
    if (!options.chunk_elements) return held_wave_chunk(problem, l) != 0;
    const Geometry g = plan_single_pass(problem, options, l);
    return g.items <= l.multiprocessors && g.chunks <= kSinglePassSpreadMaxChunks;
}

// Fewer rows than a batch keep chunks of about kSinglePassMinChunk, and
// whole tiles of it in a power-of-two count can leave the last chunks
// empty (1x49152: 12 of 16). An empty chunk's workgroup still waits for
// the row's statistic, which cost about 0.9 us a call on NVIDIA (f32
// 1x28672, 7 of 8 chunks used, 7.86 us; 1x28673, 8 used, 7.21;
// bench/NOTES.md, v23). There each chunk takes the count's share of the
// row instead, in whole vectors (kSinglePassChunkAlign), so that every
// chunk of a row's longest window holds elements; a chunk of one tile or
// less stays in the slots. Rows that fill their chunks keep them, and so
// do batches (plan_single_pass() sizes them to fill) but those spread
// over one wave (wave_chunk(), held_wave_chunk()), and chunks forced by an
// option (Geometry::chunks_by_row).
void fill_chunks(Geometry& g, const Problem& problem, const Limits& l) {
    const uint64_t window = row_window(problem, Path::single_pass, l);
    if (g.chunks_by_row && uint64_t{g.chunks - 1} * g.chunk >= window)
        g.chunk = static_cast<uint32_t>(div_up(div_up(window, g.chunks), kSinglePassChunkAlign) * kSinglePassChunkAlign);
}

// Long rows in one dispatch: a workgroup per chunk. A chunk of at most
// kSinglePassHeldSlots slots per invocation is one tile, held in registers
// from its statistic to its write; longer chunks are re-read tile by tile
// (set_chunks() keeps the count a power of two, at most 32 per invocation).
// Batches of kSinglePassBatchRows rows or more take chunks of at least
// kSinglePassBatchChunk, re-read from L2, so that their grid stays small
// enough to be resident; problems of one wave hold theirs (wave_chunk()
// backward, held_wave_chunk() forward; held_wave_batch()), and so do
// forward batches of a few waves (held_batch_chunk()); forward single rows
// of 32769-65536 elements hold theirs at 128 invocations
// (spread_single_row_chunk()).
Geometry plan_single_pass(const Problem& problem, const PlanOptions& options, const Limits& l) {
    Geometry g;
    g.required_subgroup_size = l.required_subgroup_size;
    const uint64_t rows = problem.shape.rows();
    const bool batch = rows >= kSinglePassBatchRows, forced = options.chunk_elements != 0;
    // A chunk each workgroup holds in one tile, the rows cut by their
    // count of it (0: the batch's or the forced chunks).
    uint64_t held = forced ? 0 : problem.backward ? wave_chunk(problem, l) : short_row_chunk(problem, l);
    if (!forced && !held) held = odd_row_chunk(problem, l);
    const uint64_t spread_row = !forced && !held ? spread_single_row_chunk(problem, l) : 0;
    if (spread_row) held = spread_row;
    if (!forced && !held) held = held_wave_chunk(problem, l);
    if (!forced && !held) held = held_batch_chunk(problem, l);
    if (!forced && !held) held = held_backward_batch_chunk(problem, l);
    const bool held_wave = !forced && !held && held_wave_batch(problem, l);
    const uint32_t workgroup = spread_row ? kSinglePassSpreadSingleRowWorkgroup
                               : held     ? wave_workgroup(held)
                               : held_wave ? wave_workgroup(kSinglePassBatchChunk)
                                           : kSinglePassWorkgroup;
    g.workgroup_size = std::max(l.min_workgroup, std::min(l.max_workgroup, workgroup));
    g.chunks_by_row = !forced && (!batch || held);
    const uint64_t window = row_window(problem, Path::single_pass, l);
    const uint64_t least = held ? held : batch ? kSinglePassBatchChunk : kSinglePassMinChunk;
    uint64_t want =
        forced ? options.chunk_elements
               : std::max(least,
                          div_up(window, std::clamp<uint64_t>(div_up(kSinglePassTargetItems, rows), 1, kSinglePassMaxChunks)));
    // A batch's rows fill a power-of-two count of chunks (the count the
    // shader takes; set_chunks() rounds any other up, leaving chunks empty):
    // fewer, longer chunks where the count is not one already (f32
    // 32x151936 in 8 chunks of 20480 17.3-17.7 us, in 16 of 16384, 10 used,
    // 18.9; bench/NOTES.md, v20). A batch spread over one wave is sized as
    // fewer rows are instead: a power-of-two count of whole tiles, then
    // each chunk the count's share of the row (fill_chunks()).
    if (!forced && batch && !g.chunks_by_row)  // at most 2^32 / 16384 chunks: 32 bits hold the count
        want = div_up(window, floor_pow2(static_cast<uint32_t>(div_up(window, want))));
    const uint64_t per_slot = 4ull * g.workgroup_size;
    g.slots = want <= kSinglePassHeldSlots * per_slot
                  ? slots_for(problem, Path::single_pass, l, div_up(want, per_slot), kSinglePassHeldSlots)
                  : kSplitSlots;
    set_chunks(g, problem, l, Path::single_pass, want);
    fill_chunks(g, problem, l);
    if (g.items > std::numeric_limits<uint32_t>::max())
        throw Error(ErrorKind::unsupported, "too many rows x chunks for one dispatch");
    return g;
}

bool holds_chunks(const Geometry& g) { return g.chunk <= 4ull * g.slots * g.workgroup_size; }

// A lane's count of its row's partials: subgroup 0 gathers rows of up to
// 32 chunks a lane of it, the whole workgroup longer ones (gather_row() in
// softmax_single_pass.comp; without subgroup arithmetic, always the
// workgroup).
namespace {
uint64_t partials_per_gathering_lane(const Geometry& g, const Limits& l) {
    const bool by_subgroup = l.subgroup_reduction && g.chunks <= 32ull * l.subgroup_size;
    return div_up(g.chunks, by_subgroup ? l.subgroup_size : g.workgroup_size);
}
}  // namespace

uint32_t single_pass_patience(const DeviceInfo& d, const PlanOptions& options) {
    if (options.single_pass_patience) return options.single_pass_patience;
    return d.type == VK_PHYSICAL_DEVICE_TYPE_CPU ? kSinglePassPatienceCpu : kSinglePassPatience;
}

// What one invocation may iterate, counted as llvmpipe counts (Limits::
// loop_iterations): each item its workgroup takes (a grid smaller than the
// items loops over them), and in each
// - every partial of its row it may compute itself past the patience: two
//   loops over the workgroup's subgroups (one_exchange_stat() reads every
//   subgroup's; the strided group reductions fewer, the shared-memory tree
//   a step per halving), a loop over the chunk's tiles, and a few more;
//   lavapipe 22.3 (Mesa), rows of 64-256 chunks whose first workgroup
//   computed the others' partials (one thread), measured by the longest
//   loop of a known count run before it that left the row right: 132-137
//   iterations a chunk held at 256 x 4 with subgroups of 4 (64 subgroups:
//   2 x 64 + 4-9), 71 with subgroups of 8 (2 x 32 + 7), 38 held at 256 x 8
//   with subgroups of 16 (2 x 16 + 6; 1024 chunks of 8192), 42 for chunks
//   of two tiles folded strided (2 x 16 + 10);
// - each polling round: a turn per partial still pending, and the round's;
// - its own chunk's tiles, read and written.
uint64_t single_pass_loop_iterations(const Geometry& g, const Limits& l, uint32_t patience) {
    const uint64_t tiles = div_up(g.chunk, 4ull * g.slots * g.workgroup_size);
    // A reduction's loop over the subgroups, or its shared-memory tree's halvings.
    uint64_t steps = l.subgroup_reduction ? g.workgroup_size / std::max<uint32_t>(l.subgroup_size, 1) : 0;
    if (!l.subgroup_reduction)
        for (uint32_t lanes = g.workgroup_size; lanes > 1; lanes /= 2) ++steps;
    const uint64_t per_partial = 2 * steps + kLoopIterationsPerTile * tiles + kLoopIterationsPerPartial;
    const uint64_t polling = (uint64_t{patience} + 2) * (partials_per_gathering_lane(g, l) + 2);
    const uint64_t own_chunk = 2 * kLoopIterationsPerTile * tiles + kLoopIterationsPerPartial;
    const uint64_t per_item = g.chunks * per_partial + polling + own_chunk;
    const uint64_t grid = std::max<uint64_t>(1, dispatch_grid(g.items, l.max_groups));
    return div_up(g.items, grid) * per_item;
}

// Fewer, longer chunks (each step halves their count) until an invocation's
// iterations fit the driver's cap; a row of one chunk waits on no other.
// H200 plans are untouched (no cap). On lavapipe with subgroups of 4,
// 1x1100000 goes from 512 chunks of 2152 at 256 x 4, whose workgroups
// that computed the row's partials wrote its first chunks 25-3000 times too
// large, to 256.
void fit_loop_iterations(Geometry& g, const Problem& problem, const Limits& l, uint32_t patience) {
    if (l.loop_iterations == 0) return;
    while (g.chunks > 1 && single_pass_loop_iterations(g, l, patience) > l.loop_iterations) {
        set_chunks(g, problem, l, Path::single_pass, 2ull * g.chunk);
        fill_chunks(g, problem, l);
    }
}

// The partials a lane of the gathering invocations merges at most; the
// first kSinglePassGatherAhead of them it loads at once.
uint32_t gather_ahead(const Geometry& g, const Limits& l) {
    return static_cast<uint32_t>(std::clamp<uint64_t>(partials_per_gathering_lane(g, l), 1, kSinglePassGatherAhead));
}

}  // namespace vksoftmax::planning
