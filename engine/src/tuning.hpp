// The plan's tuning constants, each with the measurement and the device
// behind its value. Measured on one NVIDIA H200 (driver 580.159.04,
// subgroups of 32) unless said otherwise (bench/NOTES.md has the runs);
// other vendors' values go beside these when their GPUs are measured.
#pragma once
#include <cstdint>

namespace vksoftmax::tuning {

// Holding a row in more vec4 slots per invocation beats spreading it over
// more invocations, because every cross-subgroup step costs barriers (f32
// 1280x12888: 256 x 13 slots 35.9 us, 512 x 7 37.7), down to workgroups of
// 4 subgroups (f16 20480x4096: 128 x 8 83.8 us, 64 x 16 85.6).
constexpr uint32_t kMaxSlots = 16;                 // vec4 slots per invocation: 64 floats in registers
constexpr uint32_t kMinRowSubgroups = 4;           // subgroups on a workgroup row, at least
// ... except rows that two subgroups hold at 8 slots (2048 at 32), which
// take two: fewer lanes with more loads in flight each, and a cross-subgroup
// step over two partials. Forward rows of 2048 (H200, 65536 rows, us):
// plain f16 64 x 8 129.5 against 128 x 4 151.1, bf16 136.0 against 158.1,
// f32 259.6 against 261.5; masked ((1, 32, 2048, 2048), fp16 mask) f16
// 175.2 against 182.0, bf16 178.4 against 187.4, f32 329.6 against 326.7.
// At 4096, 64 x 16 is no faster than 128 x 8 (plain f16 132.2 against
// 131.3) and masked far slower (515 against 207). Log-softmax rows of 2048
// gain too (f16 182.8 against 209.8, bf16 221.6 against 236.8); the
// backward pass does not (f16 186.7 against 186.1) and keeps four.
constexpr uint32_t kNarrowRowSubgroups = 2;
constexpr uint32_t kNarrowRowSlots = 8;
// Forward rows not a multiple of 4 long (ODD_ROWS) without attention
// options keep the narrow workgroup only up to 7 slots: at 8, 16-bit rows
// load whole windows, which there made them slower than four subgroups at
// 4 slots, and fp32 rows' heads and tails cost more over 8 slots than over
// 4. H200 (580.159.04), us, 64 x 8 -> 128 x 4 (bench/NOTES.md, v103): f16
// 4096x2045 15.2 -> 11.9, 1024x2045 6.37 -> 5.24, 8192x1999 28.9 -> 24.9;
// bf16 4096x1801 16.3 -> 12.6; log-softmax f16 4096x2045 16.3 -> 13.5, bf16
// 16x2045 5.54 -> 3.96; (v105) f32 2048x1801 8.67 -> 7.88, 4096x2045 20.56
// -> 19.93, 16384x2045 69.30 -> 68.67, log-softmax f32 2048x2045 9.87 ->
// 8.41, 16384x1801 62.65 -> 60.32. At 5-7 slots four subgroups were slower,
// or faster in softmax and slower in log-softmax (64 x 5 -> 128 x 3: f16
// 4096x1025 8.79 -> 10.14; 64 x 6: f16 4096x1279 10.77 -> 10.01, log 10.66
// -> 11.33; 64 x 7: f16 4096x1789 11.77 -> 11.57, log 12.02 -> 13.30; f32
// 2048x1279 6.91 -> 7.09, v104).
constexpr uint32_t kOddRowNarrowSlots = kNarrowRowSlots - 1;
// Batches too small to fill the device with narrow workgroups: contiguous
// forward rows without attention options that two subgroups would hold at
// 5-8 slots, 16-bit ones and rows not a multiple of 4 long (ODD_ROWS), take
// kFewRowsSubgroups subgroups at 2 slots in batches of at most
// kFewRowsMaxWaves waves of the multiprocessors: more lanes load and
// exponentiate each row, whose latency the few rows in flight leave
// exposed. H200 (580.159.04), us, planned -> 256 x 2, 16 / 132 / 264 rows
// (bench/NOTES.md, v104): f16 x1279 (64 x 6) 4.76 / 4.84 / 4.86 -> 3.43 /
// 3.47 / 3.74; f16 x2045 (128 x 4) 3.95 / 4.02 / 4.05 -> 3.53 / 3.53 /
// 3.77; f16 x1536 3.34 / 3.29 / 3.42 -> 3.10 / 3.16 / 3.39; f32 x2045 (64 x
// 8) 4.21 / 4.22 / 4.33 -> 3.43 / 3.59 / 3.88. From 528 rows on 256 x 2 was
// slower on some (f16 528x2048 3.90 -> 4.14, 2048x1280 4.88 -> 7.13); fp32
// rows a multiple of 4 long were level or slower at any count (f32 264x1280
// 3.44 -> 3.52). Strided rows, read element by element, were not measured.
// Rows a multiple of 4 long that kMinRowSubgroups subgroups would hold at
// all kMaxSlots slots (7681-8192 elements at subgroups of 32) take
// kFewRowsSubgroups subgroups at 8 slots in the same batches. 128 x 16 ->
// 256 x 8, us, means of two rounds (v106): f32 16x8192 4.42 -> 4.23,
// 264x8192 6.54 -> 6.19; f16 1x8192 3.83 -> 3.68, 264x8192 5.00 -> 4.74,
// 16x7684 4.62 -> 4.03; bf16 132x8192 4.42 -> 4.12; log-softmax f32
// 16x8192 4.53 -> 4.17, f16 1x8192 3.98 -> 3.70. A single fp32 softmax
// row keeps 128 x 16 (1x8192 3.97 -> 4.02 at 256 x 8). At 1024 rows 2-4%
// slower (f32 19.34 -> 19.69, f16 9.17 -> 9.53); rows of 2560-4096 at 128
// x 5-8 were level or slower at 256 in these batches (f16 16x4096 3.41 ->
// 3.61).
constexpr double kFewRowsMaxWaves = 2.0;
constexpr uint32_t kFewRowsSubgroups = 8;
// fp32 rows a multiple of 4 long that kFewRowsSubgroups subgroups hold at
// kLongFloatRowsWideMinSlots slots or more (11265-16384 elements at
// subgroups of 32), in batches of more than kLongFloatRowsWideMinWaves and
// up to kLongFloatRowsWideMaxWaves waves, take twice as many subgroups at
// half the slots, and softmax rows at all kMaxSlots so in any batch of
// more than kLongFloatRowsWideMinWaves waves: workgroups of 512 at 6-8
// slots keep twice the lanes of 256 at 12-16 in flight on each
// multiprocessor (61 registers against 100 for softmax). 256 x 12-16 ->
// 512 x 6-8, H100 (580.159.04; bench/NOTES.md, v130), us: f32 199x16384
// 9.28 -> 9.16, 256x16384 10.48 -> 10.02, 264x16384 10.58 -> 10.08,
// 256x12288 8.44 -> 8.23, 256x15360 9.99 -> 9.49; log-softmax 256x16384
// 10.47 -> 10.07, 264x16384 10.67 -> 10.17, 256x13312 9.05 -> 8.66;
// softmax 320x16384 17.17 -> 15.66, 1024x16384 49.74 -> 48.80. Slower
// where the rule stops: 128 rows (f32 128x16384 7.31 -> 7.55; 192 rows
// level), rows of 12288 and 15360 at 512 rows (18.6 -> 19.3, 23.8 ->
// 24.9), log-softmax past two waves (320x16384 15.0 -> 16.1, 1024x16384
// 47.9 -> 48.9), whose 80 registers at 256 let three such workgroups
// share a multiprocessor, and 16-bit rows (f16 256x16384 7.06 -> 7.44).
constexpr uint32_t kLongFloatRowsWideMinSlots = 12;
constexpr double kLongFloatRowsWideMinWaves = 1.5;
constexpr double kLongFloatRowsWideMaxWaves = 2.0;
// ODD_ROWS rows that two subgroups would hold at kOddRowsWideMinSlots to 8
// slots, in batches of up to kOddRowsWideMaxWaves waves, keep
// kMinRowSubgroups subgroups rather than two. 64 x 6-8 -> 128 x 3-4, us
// (v104): f16 528x1279 5.12 -> 3.92, 1024x1279 5.71 -> 4.69, 1024x1789
// 5.96 -> 5.19; bf16 1024x1279 5.80 -> 4.79; f32 1024x2045 6.51 -> 6.36;
// log-softmax f16 1024x1279 5.22 -> 4.99, f32 1024x2045 7.01 -> 6.35. At
// 5 slots slower (f16 1024x1025 4.74 -> 4.77, log 5.01 -> 5.15); from 2048
// rows on level or slower (f16 2048x1279 at 128 x 4 7.06 -> 7.15, 4096x1279
// 10.8 -> 11.4).
constexpr double kOddRowsWideMaxWaves = 8.0;
constexpr uint32_t kOddRowsWideMinSlots = 6;
// ... but 16-bit log-softmax rows past kOddRowsWideMinSlots, up to half as
// many waves: 1024 rows (7.8 waves) were 1-3% slower at 128 x 4 (log bf16
// 1024x1789 5.85 -> 6.05 us, f16 5.46 -> 5.58, f16 1024x1537 5.56 ->
// 5.67), 528 rows 3-7% faster (f16 528x1789 4.68 -> 4.35; bench/NOTES.md,
// v104).
constexpr double kOddHalfLogRowsWideMaxWaves = kOddRowsWideMaxWaves / 2;
// fp32 rows a multiple of 4 long that two subgroups would hold at
// kFloatRowsWideMinSlots to 8 slots, in batches of up to
// kFloatRowsWideMaxWaves waves, take kMinRowSubgroups subgroups too. 64 x
// 7-8 -> 128 x 4, us, two rounds' mean (v105): f32 16x2048 3.55 -> 3.27,
// 1024x2048 5.99 -> 5.39, 16x1540 3.54 -> 3.32, 1024x1796 5.59 -> 5.18;
// log-softmax f32 132x1792 3.66 -> 3.42, 1024x2048 5.88 -> 5.46. At 6
// slots level or slower (f32 264x1536 3.50 -> 3.58, v104); at 2048 rows
// (15.5 waves) log-softmax was 5.5-6% slower (f32 2048x2048 7.88 -> 8.32),
// from 8192 rows on every shape level or up to 1% slower.
constexpr uint32_t kFloatRowsWideMinSlots = 7;
constexpr double kFloatRowsWideMaxWaves = 8.0;
// Masked bf16 attention rows of up to kMaskedBf16RowMax elements: at most
// 8 slots. H200, us (bench/NOTES.md, v79): rows of 4096 take 128 x 8
// rather than 256 x 4 (682.1 against 701.0). v79 also kept them off two
// subgroups ((1, 32, 2048, 2048) 64 x 8 170.9 against 128 x 4 162.6); the
// modules have changed since, and v131 measured the reverse (64 x 8 with
// the next row first 150.2-150.7 against 128 x 4 162.4-162.6, 85% of the
// copy against 79%), so rows of 2048 take two subgroups as f16's do. Not
// taken past 4096: bf16 (1, 1, 8192, 8192) ran faster at 256 x 8 (113.9
// against 120.4 at 128 x 16), but f16 batches of such rows ran slower at
// 8 slots ((1, 4, 8192, 8192) 374.6 -> 393.5, (1, 8, 6144, 6144) 374.5 ->
// 406.0) and bf16 batches of them were not measured.
constexpr uint32_t kMaskedBf16MaxSlots = 8;
constexpr uint64_t kMaskedBf16RowMax = 4096;
// Masked 16-bit workgroup rows of at least kNextRowFirstMinSlots slots,
// under a mask shared by the heads, fetch the next row before reducing
// the current one where the driver's rule says so (row_fetch_rule()),
// each workgroup taking kNextRowFirstRows rows, in batches of at least
// kNextRowFirstMinWaves rows per multiprocessor. H100 (132
// multiprocessors, 580.159.04; bench/NOTES.md, v118), us, in turn -> next
// row first: f16 (1, 32, 2048, 2048) at 64 x 8 196.8 -> 192.7, (1, 8,
// 4096, 4096) at 128 x 8 204.2 -> 198.7 (bf16 206.5 -> 198.7); f16 rows of
// 2048 in smaller batches: (1, 16, 2048, 2048) 102.3 -> 100.1, (1, 8,
// 2048, 2048) 54.2 -> 53.1, (1, 4, 2048, 2048) 31.1 -> 30.4 (62 rows a
// multiprocessor), but (1, 1, 2048, 2048) 7.60 -> 7.71 (15.5); bf16 rows
// of 2048 at 128 x 4 (4 slots) level (191.5 -> 192.0). Four rows a
// workgroup were slower than two (200.4 and 209.8 against 192.7 and
// 198.8).
constexpr uint32_t kNextRowFirstMinSlots = 8;
constexpr uint64_t kNextRowFirstRows = 2;
constexpr double kNextRowFirstMinWaves = 60.0;
// Plain forward rows of kSharedRowMin-kSharedRowMax elements, a multiple
// of 4, in batches of at most kSharedRowsMax rows, are held by
// kSharedRowShares (fp32) or kSharedRowShares16 (16-bit) workgroups of
// kSharedRowWorkgroup each, every one reading the whole row and writing
// its share (WRITE_SHARES), where the driver's rule says so
// (row_shares_rule()). H100 (580.159.04; bench/NOTES.md, v124), us, the
// plan before (single-pass for fp32 rows of 16384, a workgroup a row
// otherwise) -> shares: f32 1x12288 4.47 -> 4.08 (4 shares; 8: 4.09),
// 1x16384 4.93 -> 4.41, 8x16384 5.42 -> 4.84, 16x16384 5.43 -> 4.88 (4
// shares), log-softmax 1x16384 5.03 -> 4.36; f16 1x12288 4.06 -> 4.01,
// 1x16384 4.59 -> 4.31, 8x16384 4.75 -> 4.51, 16x16384 4.79 -> 4.53; bf16
// 1x12288 4.27 -> 4.15, 8x16384 4.93 -> 4.69, 16x16384 5.01 -> 4.70. Not
// past 16384 (f32 1x24576 at 512 x 12: 4.91 -> 5.20; 1x32768 4.93 -> 5.81,
// where each workgroup reads 128 KiB), nor at 8192 (f16 1x8192 3.82 ->
// 3.86; f32 8x8192 4.33 -> 4.31, 32x8192 4.48 -> 4.44 at 4 and 5.71 at 16
// shares), nor odd rows (at 256 x 16 they read in 4-wide windows: f32
// 1x16383 11.0 against 5.1 on the single-pass path). The plan's form
// against the plan before it, v125: f32 1x16384 4.97 -> 4.44, 16x16384
// 5.46 -> 4.94; f16 16x16384 4.79 -> 4.52; bf16 16x16384 5.01 -> 4.70;
// log-softmax bf16 1x16384 5.48 -> 4.83; 17 rows and 1x24576 level.
constexpr uint64_t kSharedRowMin = 8193;
constexpr uint64_t kSharedRowMax = 16384;
constexpr uint64_t kSharedRowsMax = 16;
constexpr uint32_t kSharedRowWorkgroup = 256;
constexpr uint32_t kSharedRowShares = 8;
constexpr uint32_t kSharedRowShares16 = 4;
// Batches past kSharedRowsMax rows, on a device that counts its
// multiprocessors, take half the shares while the shares outnumber the
// multiprocessors, down to kSharedBatchMinShares (16-bit rows of at most
// kSharedBatchHalfRowMax elements: kSharedBatchHalfRowMinShares), and are held
// whole past that. H100 (132 multiprocessors, 580.159.04; bench/NOTES.md, v126,
// v128), us, whole -> shared: f32 17x16384 5.50 -> 4.89 (4 shares), 24x12288
// 4.82 -> 4.58, 32x16384 5.57 -> 5.13; f16 17x16384 4.77 -> 4.50, 32x16384 4.82
// -> 4.62, 48x16384 4.85 -> 4.73 (2 shares); bf16 32x16384 5.01 -> 4.79,
// 64x16384 5.11 -> 5.02 (2), log-softmax 5.81 -> 5.41. fp32 rows at 2 shares
// (v128, gated): 34x16384 6.08 -> 5.23, 48x16384 6.07 -> 5.55, 66x16384 6.16 ->
// 5.84, 48x12288 5.27 -> 4.85, log-softmax 34x16384 6.10 -> 5.58, 66x16384 6.18
// -> 6.06; on another H100, whose rows whole ran faster, 48x16384 5.65 -> 5.50
// and log-softmax 64x16384 5.91 -> 6.05 (v126). 16-bit rows of 12288 at 2
// gained nothing (f16 64x12288 4.35 -> 4.44, bf16 4.51 -> 4.52); 8 shares past
// 16 rows were slower on every batch (f32 32x16384 5.84).
constexpr uint32_t kSharedBatchMinShares = 2;
constexpr uint32_t kSharedBatchHalfRowMinShares = 4;
constexpr uint64_t kSharedBatchHalfRowMax = 12288;
// fp32 log-softmax rows of more than kSharedLogWideRowMin elements (16
// slots a lane at kSharedRowWorkgroup), in batches of kSharedLogWideRowsMin-
// kSharedLogWideRowsMax rows, are shared in workgroups of
// kSharedLogWideWorkgroup (8 slots). H100 (580.159.04; bench/NOTES.md,
// v129-v130), us, 256 x 16 -> 512 x 8: log-softmax 2x16384 5.04 -> 4.86,
// 4x16384 5.05 -> 4.86, 8x16384 5.07 -> 4.89, 17x16384 5.18 -> 5.02,
// 34x16384 (2 shares) 5.56 -> 5.40, 8x15364 5.05 -> 4.93, 40x16384 level
// (5.61); not a single row (4.44 -> 4.69), nor 48 rows (5.68 -> 5.74),
// nor rows of 14000 (7 slots: 33x14000 4.96 -> 5.12), nor softmax
// (8x16384 4.84 -> 5.07), nor 16-bit rows (f16 16x16384 4.75 -> 5.18),
// whose workgroups of 256 hold more of the row's bytes a lane.
constexpr uint64_t kSharedLogWideRowMin = 15360;
constexpr uint64_t kSharedLogWideRowsMin = 2;
constexpr uint64_t kSharedLogWideRowsMax = 40;
constexpr uint32_t kSharedLogWideWorkgroup = 512;
// The most workgroups a forced count (PlanOptions::write_shares) shares a
// row among: each reads the whole row, so more only repeat reads.
constexpr uint32_t kMaxWriteShares = 16;
// A workgroup holds rows up to 32 floats per invocation of its largest
// size (32768 at 1024: half an NVIDIA SM's register file); longer rows
// take the split path.
constexpr uint32_t kRowSlotsAtMaxWorkgroup = 8;
// Forced geometries (PlanOptions::workgroup_size and slots) hold at most
// this many vec4 slots per workgroup, as the plan's own largest do (1024 x
// kRowSlotsAtMaxWorkgroup, 512 x kMaxSlots). Past it the slots alone fill
// an NVIDIA SM's 64K registers; forced to 1024 x 16, the 580.159.04 driver
// built 16-bit workgroup rows into pipelines with 128 bytes of local
// memory that wrote wrong outputs for rows leaving most slots empty (f16
// and bf16 1x4096-1x16384), where f32, 1024 x 8 and 512 x 16 passed
// (bench/NOTES.md, v23 and v24).
constexpr uint32_t kMaxWorkgroupSlots = 8192;
// A fp16 row is held as fp32, twice its bytes: beyond 16 elements per
// invocation of the largest workgroup it is read in tiles of 4 slots and
// re-read for the write (the second read mostly from cache) rather than
// held whole. Whole, f16 1024x32768 needs 127 registers x 512 invocations,
// one workgroup per NVIDIA SM, 54.7 us; in two tiles 31 x 1024, two per SM,
// 46.0 us. fp32 rows lose more to the re-read than they gain (f32
// 1024x32768: 75.0 us whole, 85.8 in two tiles) and are held whole.
constexpr uint32_t kHalfRowSlotsAtMaxWorkgroup = 4;
// Forward contiguous 16-bit rows a multiple of 8 long (16-byte windows)
// read in those tiles, without attention options, take them at twice the
// slots in workgroups of half the largest (the same 16384 elements a tile
// on a workgroup of 1024) where the device counts its multiprocessors and
// the rows make kHalfRowTileWaves waves of them, a row each. H200 (132
// multiprocessors, 580.159.04; bench/NOTES.md, v95, v96 and v100), us,
// 1024 x 4 against 512 x 8: f16 1024x32768 44.12 against 43.18, 512x32768
// 24.86 against 24.23, 264x24576 11.08 against 10.86, 198x32768 11.24
// against 11.06, 4096x24576 136.9 against 133.7, 1024x20000 37.90 against
// 37.13 (log-softmax 1024x32768 44.71 against 43.68); bf16 46.27 against
// 45.22, 25.91 against 25.46, 11.88 against 11.64, 12.30 against 11.89,
// 151.1 against 143.5, 40.85 against 39.02; past one wave and below one
// and a half too (v100): f16 133x32768 10.91 against 10.68, 180x24576
// 10.89 against 10.61, 196x20000 10.86 against 10.57; bf16 11.93 against
// 11.54, 11.79 against 11.36, 11.54 against 11.14. Rows of one wave or
// fewer are held whole instead (kHeldHalfRowMaxWaves). 8-byte windows are
// mixed: 200x16388 f16 10.74 against 10.31, but 1024x32764 46.93 against
// 48.54 (bf16 alike), and rows not a multiple of 4 lose a quarter
// (128x32001 f16 9.33 against 11.76).
constexpr double kHalfRowTileWaves = 1.0;
constexpr uint32_t kHalfRowTileSlots = 2 * kHalfRowSlotsAtMaxWorkgroup;
// Forward 16-bit rows of 16385-32768, contiguous and a multiple of 4 long,
// whose rows make at most this many waves of the device's multiprocessors
// are held whole at the largest workgroup (up to kRowSlotsAtMaxWorkgroup
// slots, one workgroup a multiprocessor) instead of in its tiles, now that
// such a row takes its statistic in one exchange. H200 (580.159.04;
// bench/NOTES.md, v100), us, tiles at 1024 x 4 against whole at 1024 x
// 6-8: f16 128x32000 7.96 against 7.76, 132x32768 8.15 against 8.03,
// 100x24576 7.35 against 6.35, 132x20000 7.57 against 6.27; bf16 8.17
// against 7.79, 8.40 against 8.03, 7.82 against 6.40, 7.85 against 6.37;
// 8-byte windows, f16 128x32764 8.54 against 8.32, 132x20004 7.69 against
// 6.54, bf16 8.81 against 8.22, 7.92 against 6.65; log-softmax f16
// 100x24576 7.53 against 6.78, 128x32000 7.96 against 8.05 (the one
// loss), bf16 8.23 against 6.88, 8.67 against 8.15. Rows not a multiple
// of 4 lose (f16 128x32001 9.32 against 9.97) and keep the tiles; past one
// wave the second wave costs more than the re-read saves (f16 133x32768
// 10.75 against 11.53, 200x32000 10.93 in 512 x 8 tiles against 12.23).
constexpr double kHeldHalfRowMaxWaves = 1.0;
// The backward pass holds y and dy: half the forward's slots each, so
// that an invocation holds the same 64 floats (kMaxSlots), whatever the
// storage type.
constexpr uint32_t kBackwardMaxSlots = kMaxSlots / 2;
// fp32 backward rows held in registers at kBackwardRereadGradientSlots in
// workgroups of kBackwardRereadGradientWorkgroup keep y and read dy again
// for the write (REREAD_GRADIENT, softmax_backward.comp), so that the two
// are never live together over the row's reduction. Held together they
// are 64 floats a lane, and 1024 lanes of 64 are all of an NVIDIA SM's 64K
// registers: 580.159.04 put 80 bytes a lane in local memory, 48 with the
// re-read. H200, us, held -> re-read (bench/NOTES.md, v94): 1024 x 8
// 1024x32768 116.5 -> 105.0 (83% -> 93% of the copy), with sinks 121.4 ->
// 106.2, 264x32768 34.4 -> 31.6, 200x32000 28.3 -> 25.8; log-softmax
// 1024x32768 level (105.3 -> 104.8). Where the lanes have registers to
// spare the re-read only costs: 512 x 8 (1024x16384) 52.2 -> 56.3, 256 x 8
// (2048x8192) 50.3 -> 51.5, 128 x 8 (20480x4096) 232.9 -> 246.9, subgroup
// rows of 8 slots (4096x1000) 13.3 -> 13.6; 1024 x 5 (1024x20000) 62.7 ->
// 67.0 in a first build that re-read at every count.
constexpr uint32_t kBackwardRereadGradientSlots = kBackwardMaxSlots;
constexpr uint32_t kBackwardRereadGradientWorkgroup = 1024;
// Rows not a multiple of 4 long read in vector windows (ODD_ROWS) hold at
// most this many slots on a workgroup row; longer rows take a workgroup
// twice as wide at half the slots. At kMaxSlots NVIDIA's compiler
// (580.159.04) put all 64 floats of an fp32 lane in local memory (256
// bytes; at 15 slots, and at 8, none): f32 1x8189 at 128 x 16 took 8.77 us
// on an H200 against 4.41 for 1x8192. 16 slots against 8 at twice the
// workgroup, us (bench/NOTES.md, v71): f32 8x8189 9.34 against 4.87,
// 1024x8189 50.40 against 20.88, 64x16381 10.98 against 6.47, 128x32001
// 23.89 against 11.14; f16 / bf16 8x8189 7.85 / 8.00 against 6.03 / 6.09,
// 1024x8189 37.21 / 38.37 against 14.29 / 14.78.
constexpr uint32_t kOddRowMaxSlots = kMaxSlots - 1;
// Plain forward ODD_ROWS rows (no attention options) hold at most this many
// slots below the device's largest workgroup: past them the workgroup
// doubles. Held at 9-15 slots by four subgroups they were slower than at
// 6-8 by eight in every batch but a few: H200 (580.159.04), us, 128 x 9-15
// against 256 x 6-8 forced (bench/NOTES.md, v107): f16 1024x7167 32.16
// against 13.26, 16x7167 7.40 against 5.22, 1024x5119 11.91 against 10.31,
// 16x4095 5.30 against 4.76; f32 16x7167 5.80 against 4.62, 1024x7167 20.69
// against 18.90; log-softmax f32 16x7167 8.09 against 4.76. Slower: f16
// 1024x4095 (9 slots) 9.20 against 10.26, f32 264x7167 6.48 against 6.62.
constexpr uint32_t kOddRowSpreadSlots = 8;
// ... but 16-bit rows in batches of at least kOddRowSpreadBatchRows hold up
// to kOddRowSpreadBatchSlots before it doubles. Spread past 8 in such
// batches, H200 (580.159.04), us: f16 / bf16 2048x8191 at 512 x 5 32.43 /
// 33.68 against 28.51 / 29.96 at 256 x 9; 2048x9215 at 512 x 5 37.33 /
// 37.91 against 30.70 / 33.39 at 256 x 10; f16 4096x4095 at 256 x 5 30.63
// against 28.49 at 128 x 9 (bench/NOTES.md, v109-v110). Still faster
// spread: such batches of rows of 12287 (13 slots at 256; f16 2048x12287
// 52.01 -> 45.11 at 512 x 7) and smaller batches (f16 1024x4095 9.18 ->
// 9.00 at 256 x 5).
constexpr uint64_t kOddRowSpreadBatchRows = 2048;
constexpr uint32_t kOddRowSpreadBatchSlots = 10;
// At the largest workgroup it holds rows whole rather than in tiles of
// kHalfRowSlotsAtMaxWorkgroup where the rows make at least this many waves
// of the multiprocessors, a row each, and contiguous bf16 rows and fp32
// rows a multiple of 4 long where they make more than one (known on
// NVIDIA: elsewhere, tiles).
// H100 (132 multiprocessors), us, whole against tiles:
// - f32 1024x32768 151.0 against 172.0, 512x20000 46.1 against 50.9,
//   264x32768 45.0 against 47.9 (263 rows), 256x24576 30.6 against 32.3;
//   f16 72.5 against 75.1, 26.6 against 33.2, 14.1 against 14.6; bf16 and
//   log-softmax alike. At 1024 x 8 slots the f32 module holds 64 registers
//   and spills 80 bytes.
// - at one and a half waves it is level (200x32000: f32 36.6 against 37.4,
//   f16 15.8 against 15.6);
// - fewer rows were mixed: f32 128x32000 23.0 against 18.8, 133x32768
//   27.3 against 22.9, 1x32768 8.0 against 7.8; f16 1x32768 6.1 against
//   6.4, 128x32000 8.7 against 8.6 (log-softmax 9.4 against 8.6).
// Since fp32 rows at 1024 x 8 read dy again (kBackwardRereadGradientSlots),
// H200 (132 multiprocessors, 580.159.04; bench/NOTES.md, v99), us, whole
// against tiles, past one wave:
// - rows of 32768: f32 133 rows 17.7 against 20.3, 160 22.3 against 23.4,
//   196 26.0 against 28.3 (log-softmax and sinks 3-9% faster); bf16 12.1
//   against 13.3, 12.7 against 13.8, 13.7 against 14.7 (log-softmax and
//   sinks alike);
// - other lengths: f32 133x20000 10.2 against 12.2, 180x16388 11.0 against
//   13.2, 150x28672 18.0 against 18.7; bf16 9.0 against 11.9, 9.0 against
//   12.6, 11.6 against 13.0, 140x32001 14.7 against 16.9;
// - but f32 140x32001 (not a multiple of 4: dy held, not read again) 22.9
//   against 21.5, and f16 mixed: 11.2 against 11.7 (133x32768), 13.0
//   against 13.0 (196), log-softmax and sinks 1.3-1.9% slower whole. Those
//   keep the tiles to this many waves. At one wave and fewer (96-132 rows)
//   f16 was 2.7-5.8% slower whole, bf16 2-4% faster but its log-softmax
//   level.
constexpr double kBackwardWholeRowWaves = 1.5;
// A subgroup owns rows up to 32 x subgroup size (1024 floats at 32) and
// needs no barrier at all.
constexpr uint32_t kSubgroupRowSlots = 8;
constexpr uint32_t kRowsWorkgroupShort = 256;  // subgroup rows of one vec4 slot: more rows per workgroup
constexpr uint32_t kRowsWorkgroup = 128;
// Rows of at most 4 x subgroup size, 4-wide: rows held per subgroup, one per
// slot, so that their loads are in flight together (PyTorch's warp softmax
// holds two such rows per warp too). Scalar rows (4 loads per slot) stay one
// per subgroup: f16 20480x77 took 7.16 us with two, 6.91 with one.
// Rows of half a subgroup or less, held by a few lanes each: two per
// cluster when 4-wide (65536x32, 8 lanes a row: 128 x 2 5.06 us f32, 4.85
// f16; 256 x 1 5.40, 5.04), one when scalar (32768x2: 128 x 2 3.01 us,
// 256 x 1 2.81; 16384x10: 3.42 and 3.02), so that a scalar row's loads are
// spread over more workgroups instead.
constexpr uint32_t kSlotRows = 2;
// The split path: chunks of rows spread over workgroups, two dispatches.
constexpr uint32_t kSplitWorkgroup = 256;
constexpr uint32_t kSplitSlots = 4;
constexpr uint64_t kSplitTargetItems = 1024;  // chunks in flight across all rows
constexpr uint64_t kSplitMaxChunks = 512;     // partials each pass-2 workgroup merges
// The single-pass path: chunks of rows spread over workgroups in one
// dispatch. Chunks of up to kSinglePassHeldSlots slots per invocation are
// held in registers from the chunk's statistic to its write, so the row
// moves 2 x N bytes to and from memory.
constexpr uint32_t kSinglePassWorkgroup = 256;
constexpr uint32_t kSinglePassHeldSlots = 8;
// Single-pass modules take a subgroup's max on integer keys only in
// workgroups of up to this many invocations (VKSM_SUBGROUP_MAX_BY_KEY in
// softmax_single_pass.comp): chunks held at 512 x 8 were 5-8% slower with
// the keys in the module, run or not (bench/NOTES.md, v67), so the plan
// gives wider single-pass workgroups the float modules (takes_keys() in
// plan.cpp).
constexpr uint32_t kSinglePassKeyMaxWorkgroup = 256;
// Where the plan chooses (SubgroupMax::automatic), 16-bit single-pass
// chunks of more than this many slots keep float maxima (keys_pay() in
// plan.cpp). H200 (580.159.04), single rows at 256 x 8, keys against
// float, us: bf16 1x786432 7.04 -> 6.74, 1x1048576 7.21 -> 6.92, f16
// 1x1048576 6.82 -> 6.59 (and at 512 x 8, which takes the float module
// either way: bf16 log-softmax 1x2097152 8.69 -> 8.04; one loss, bf16
// 1x1500000 7.93 -> 8.12). The driver gave those 16-bit key modules 16
// bytes of local memory and their float modules none; at 256 x 4 the keys
// were faster (bf16 1x131072 5.00 against 5.31 float), and fp32 chunks of
// 8 slots too (1x1048576 7.0 against 7.5, the float module there the one
// with local memory; bench/NOTES.md, v101).
constexpr uint32_t kSinglePassKeyMaxHalfSlots = 4;
constexpr uint64_t kSinglePassTargetItems = 1024;  // chunks across all rows
// Chunks of at least one tile of 4 slots: in a sweep of chunks of 1024,
// 4096 and 16384 elements (H200, f32), 4096 was fastest on 1 x 32768 to
// 1 x 524288 and 16 x 131072 (1 x 131072: 9.57, 8.85, 10.92 us).
constexpr uint64_t kSinglePassMinChunk = 4096;
// Batches of at least 8 rows take chunks of at least 16384 elements (4
// tiles of 4 slots at 256, the later ones re-read from L2), so that about
// 512 workgroups or fewer cover them: on an H100 (132 multiprocessors, 48
// registers x 256 invocations, 5 workgroups each) the chunks of 4096 that
// single rows prefer made grids of 1024 that the GPU could not hold at once
// (f32 32x128256: chunks of 4096 22.3 us, 8192 15.0, 16384 14.8; 16x524288
// at 8 slots of 8192 42.1, 16384 34.5; bench/NOTES.md, v18); longer
// where the rows would leave some of a power-of-two count of chunks empty
// (plan_single_pass(): rows of 151936 in 8 of 20480, v20); shorter for
// backward batches that would fill half a wave or less (wave_chunk(),
// v32).
constexpr uint64_t kSinglePassBatchRows = 8;
constexpr uint64_t kSinglePassBatchChunk = 16384;
// Backward rows fewer than a batch whose chunks of kSinglePassMinChunk
// would pass one wave, single rows included, take one wave of longer,
// held chunks (few_rows_past_a_wave() in single_pass_plan.cpp): f32
// 2x524288 8% and 4x524288 14% faster than two dispatches on an H200,
// 16-bit 4x262144 6-7% (v32, v33); 16-bit rows of 2 and 3 3-8% faster on
// an H100 (f16 2x524288 8.37 against 7.90 us; v41), where two rows of f16
// were level on an H200 (v33). Single rows were slower so on an H100 (f32
// 1x1048576 9.81 against 9.64, v32); since a held chunk's statistic takes
// one exchange (v65) they are 8-33% faster on an H200 (v82, us, two
// dispatches against one wave, f32 / f16 / bf16, means of two rounds:
// 1x1048576 in 128 chunks of 8192 9.11 / 8.11 / 8.51 against 6.44 / 5.68
// / 5.84; 1x2097152 in 128 of 16384 12.14 / 9.56 / 9.85 against 8.54 /
// 6.95 / 7.03; 1x1048577 in 128 of 8200 at 512 x 8 9.54 / 11.73 / 9.25
// against 7.11 / 8.32 / 8.47). The wave must fill more than this share
// of the multiprocessors (few_rows_wave_fills(): 5x200000 in 80
// workgroups of 132 was 1-5% slower than two dispatches, 6x262144 in 96
// level or faster; v33).
constexpr double kSinglePassWaveLeastFill = 2.0 / 3.0;
// Where the automatic rule takes the path on NVIDIA (resident_batch() in
// single_pass_plan.cpp): 6 to 40 MiB in all, less in held chunks of a few
// waves (kSinglePassHeldBatchGrid) (against two dispatches in re-read
// chunks, f16 32x128256, 7.8 MiB, was 5% faster; f16 16x131072, 4 MiB, 7% slower; f16
// 128x151936, 39 MB in 1024 workgroups, 7% slower), and grids of at most 4
// workgroups per multiprocessor (528 on an H100 or H200; 1x16M in 1024
// chunks of 16384 took 16 ms a call, against 38-73 us split: waiting
// workgroups held every slot until their patience ran out). The grid's
// bound keeps 16-bit batches well under 32 MiB; f32 batches past it in 512
// workgroups are faster in one dispatch (H200, 580.159.04, us: 56x151936,
// 34 MB, 26.9 against 30.5; 64x151936, 39 MB, 30.6 against 32.1;
// bench/NOTES.md, v62), so the bound is 40 MiB, under the H100's 50 MB of
// L2 where the chunks' re-reads come from.
constexpr uint64_t kSinglePassBatchMinBytes = 6ull << 20;
constexpr uint64_t kSinglePassBatchMaxBytes = 40ull << 20;
// The longest chunk a workgroup of kSinglePassWorkgroup holds in one tile
// (256 x 8 slots), which forward problems spread over one wave take
// between chunks of kSinglePassMinChunk and kSinglePassBatchChunk
// (held_wave_chunk() in single_pass_plan.cpp; bench/NOTES.md, v40).
constexpr uint64_t kSinglePassHeldChunk = 4ull * kSinglePassWorkgroup * kSinglePassHeldSlots;
constexpr uint32_t kSinglePassWorkgroupsPerMultiprocessor = 4;
// Forward f32 problems, f16 batches (bf16 ones of rows a workgroup could
// hold) and fewer rows than a batch keep chunks of kSinglePassHeldChunk
// (256 x 8) in up to this many workgroups per multiprocessor, rather than
// chunks of kSinglePassBatchChunk at 512 x 8 in one or two dispatches
// (held_wave_chunk() in single_pass_plan.cpp; H200, f32 16x131072 8.60 ->
// 7.83 us, bench/NOTES.md, v66; f16 4x524288 10.04 -> 7.25, v82); so do
// f32 backward batches, rather than chunks of kSinglePassBatchChunk
// re-read (held_f32_batch_chunk(): 32x65536 8.15 ->
// 7.86 us), and forward rows a workgroup could hold, rather than one
// workgroup a row (spread_short_rows(): f32 48x32000 8.34 -> 7.12 us, f16
// 64x32000 7.25 -> 6.48; v72), bf16 batches of those among them, and
// backward batches of such rows (held_backward_batch_chunk(): bf16
// 64x32000 7.80 -> 6.45).
constexpr uint64_t kSinglePassHeldChunkWaves = 2;
// Forward batches past one wave hold chunks of kSinglePassHeldChunk where
// their grid is at most this many workgroups per multiprocessor
// (held_batch_chunk() in single_pass_plan.cpp). H200 (580.159.04;
// bench/NOTES.md, v45), us, chunks of 16384 re-read against held chunks of
// 8192 in 384 workgroups (2.9 per multiprocessor), f32 / f16 / bf16:
// 24x131072 12.72 / 11.72 / 12.05 against 12.25 / 10.48 / 10.76; 48x65536
// 12.62 / 11.62 / 11.97 against 12.18 / 10.44 / 10.68. In 512 (3.9 per
// multiprocessor) f32 was 3-5% slower (32x131072 13.21 against 13.65,
// 16x262144 13.47 against 14.05) and 16-bit 0-2% faster; looped over a grid
// of 256-512 workgroups (more items than workgroups) 6-61% slower. Such
// 16-bit batches under kSinglePassBatchMinBytes take them too: two
// dispatches against held chunks, f16 / bf16, 20x131072 11.02 / 10.97
// against 10.37 / 10.64, 44x65536 11.59 / 11.81 against 10.32 / 10.59
// (v45).
constexpr uint32_t kSinglePassHeldBatchGrid = 3;
constexpr uint64_t kSinglePassMaxChunks = 512;     // partials each workgroup merges
// Forward rows of at least this many elements and more than this many
// bytes, which a workgroup holds only at its most slots, take the path on
// NVIDIA where their chunks make one wave (spread_short_rows() in
// single_pass_plan.cpp); backward rows from kSinglePassSpreadBackwardRowMin.
// H200, one dispatch against a workgroup row: f32 1x16384 3-7% and
// 8x16384 5% faster, 1x12288 level; f16 1x20480 25% faster, 4x16384 3%
// and 32x16384 4% slower (bench/NOTES.md, v65); f16 / bf16 1x20000 (40000
// bytes, in workgroups of 1024) 6.64 / 6.92 against 4.66 / 4.66 at chunks
// of 4096 (v68). A workgroup row's time grows with its bytes, one
// dispatch's hardly: 16-bit rows of 16384 (32 KB) are still as fast in one
// workgroup.
constexpr uint64_t kSinglePassSpreadRowMin = 16384;
constexpr uint64_t kSinglePassSpreadRowMaxWorkgroupBytes = 32768;
// ... and only in at least this many chunks a row: two chunks of 8192 a
// row, where a wave of them is more than half full, wait on the
// handshake for half a row each (f32 32x16384 level, 48x16384 2% and
// 64x16384 4% slower than workgroup rows; v65).
constexpr uint64_t kSinglePassSpreadMinChunks = 3;
// Backward rows of 16384-24575 fewer than a batch were not measured in one
// dispatch; rows of 24576-32768 were 27-39% faster there (v64), and
// batches of rows from 16384 elements in held chunks of 8192 12-32%
// (held_backward_batch_chunk(): f32 40x20480 7.10 -> 5.82 us, v72).
constexpr uint64_t kSinglePassSpreadBackwardRowMin = 24576;
// Forward rows shorter than kSinglePassSpreadRowMin whose length is not a
// multiple of 4, which one workgroup reads slowly (its heads and tails
// element by element), take the path on NVIDIA in small chunks
// (short_row_chunk() in single_pass_plan.cpp): 16-bit rows from
// kSinglePassShortOddRowMin elements, fp32 ones from
// kSinglePassShortOddF32RowMin. Chunks of kSinglePassShortChunk (256 x 1
// slot) where the row's window is at most kSinglePassShortRow elements,
// twice that (256 x 2) past it; in grids of at most half the
// multiprocessors for rows of up to kSinglePassShortRow elements (more
// than one such row only up to kSinglePassShortBatchRow elements), of
// kSinglePassShortChunkWaves workgroups a multiprocessor for longer ones.
constexpr uint64_t kSinglePassShortOddRowMin = 4097;
constexpr uint64_t kSinglePassShortOddF32RowMin = 10240;
constexpr uint64_t kSinglePassShortChunk = 1024;
constexpr uint64_t kSinglePassShortRow = 8192;
constexpr uint64_t kSinglePassShortBatchRow = 6144;
constexpr uint64_t kSinglePassShortChunkWaves = 2;
// Batches of forward 16-bit rows not a multiple of 4 long, from those a
// workgroup row reads in tiles to those of this many chunks of
// kSinglePassMinChunk, take such chunks held at 256 x 4 in grids of up to
// kSinglePassWorkgroupsPerMultiprocessor workgroups a multiprocessor
// (odd_row_chunk() in single_pass_plan.cpp). Longer rows keep chunks of
// 8192 held at 256 x 8: H200, us, f16 / bf16, chunks of 8192 against 4096
// (forced): 16x100003 (32 of 4096) 8.13 / 7.95 against 7.59 / 7.80 (mixed),
// 8x151937 (64) 7.95 / 7.64 against 8.33 / 8.58 (bench/NOTES.md, v71).
constexpr uint64_t kSinglePassOddRowMaxChunks = 16;
// Forward single rows that chunks of kSinglePassMinChunk cut into
// kSinglePassSpreadSingleRowChunks (rows of 32769-65536 elements) take
// twice as many chunks, of half the length, held at
// kSinglePassSpreadSingleRowWorkgroup invocations
// (spread_single_row_chunk() in single_pass_plan.cpp).
constexpr uint64_t kSinglePassSpreadSingleRowChunks = 16;
constexpr uint32_t kSinglePassSpreadSingleRowWorkgroup = 128;
// Forward rows spread over one wave of held chunks (held_wave_chunk() in
// single_pass_plan.cpp) take at most this many chunks a row, and half as
// many where the wave is more than half full: each lane of the gathering
// subgroup (32 lanes) then waits for at most 2 partials, or 1. H100, one
// dispatch against two: 1x393216 and 1x524288 in 128 chunks of 4096 level
// (-1% to +3%), 1x524288 in 64 of 8192 4-6% faster; f16 2x524288 in 64 of
// 8192 a row over a whole wave 3% slower (bench/NOTES.md, v37, v40; 30%
// faster on an H200 since, v82: the exception below).
constexpr uint64_t kSinglePassSpreadMaxChunks = 64;
// ... except fewer rows than a batch (wave_row_chunks_most() in
// single_pass_plan.cpp): in chunks of kSinglePassHeldChunk, up to
// kSinglePassHeldChunkWaves workgroups a multiprocessor, fp32 rows up to
// kSinglePassFewF32RowsMaxChunks a row and 16-bit rows up to
// kSinglePassFewRowsMaxChunks in one wave or kSinglePassSpreadMaxChunks in
// two (each lane of the gathering subgroup then loads up to 8 partials,
// GATHER_AHEAD at a time); 16-bit rows past that in up to
// kSinglePassFewRowsMaxChunks chunks of kSinglePassBatchChunk at 512 x 8
// in one wave. H200 (580.159.04;
// bench/NOTES.md, v81-v82), us, two dispatches against one, means of two
// rounds, f32 / f16 / bf16: 1x1048576 (128 chunks of 8192) 9.45 / 8.68 /
// 8.70 against 6.99 / 6.80 / 7.10; 2x524288 (128) 9.46 / 8.61 / 8.69
// against 6.48 / 5.99 / 6.23; 2x1048576 (256 of 8192 in fp32, 128 of
// 16384 in 16-bit types) 11.44 / 10.03 / 10.23 against 9.22 / 7.26 / 7.44;
// 1x2097152 (256 of 8192, 128 of 16384) 11.76 / 10.38 / 10.51 against
// 10.03 / 8.25 / 8.26.
constexpr uint64_t kSinglePassFewRowsMaxChunks = 128;
constexpr uint64_t kSinglePassFewF32RowsMaxChunks = 256;
// The most partials a lane gathering a single-pass row loads at once in a
// polling round (GATHER_AHEAD; gather_ahead() in single_pass_plan.cpp).
constexpr uint32_t kSinglePassGatherAhead = 4;
// Polling rounds a workgroup waits for its row's partials before computing
// the missing ones itself (PATIENCE). On a GPU the partials of co-resident
// workgroups arrive within a few rounds; a round is at least a device-scope
// load and three barriers, so 4096 rounds are milliseconds: only a
// workgroup whose partner never ran waits that long. A CPU device (lavapipe)
// runs each thread's workgroups one after another, so waiting there only
// delays the computation that has to happen anyway.
constexpr uint32_t kSinglePassPatience = 4096;
constexpr uint32_t kSinglePassPatienceCpu = 4;

// llvmpipe (Mesa's CPU driver, lavapipe's compiler) counts the loop
// iterations each invocation runs, all its loops together, and once they
// pass this many ends every loop after its current iteration, silently
// (gallivm's LP_MAX_TGSI_LOOP_ITERATIONS, a guard against endless loops;
// Mesa 22.3). fit_loop_iterations() keeps single-pass plans within it; the
// counts its estimate takes per partial and per tile were measured there
// (single_pass_plan.cpp).
constexpr uint64_t kLlvmpipeLoopIterations = 65535;
constexpr uint64_t kLoopIterationsPerPartial = 16;
constexpr uint64_t kLoopIterationsPerTile = 8;

// Masked attention rows go query-major (RowOrder) where head-major order
// passes more than this many bytes through the cache between two reads of
// one mask row (mask_reuse_bytes() in attention_plan.cpp: for one mask shared by
// every head, the mask plus a head's rows of x in and out). H100 (50 MB
// L2), us head-major against query-major: at 1.5-10 MiB (rows of 512 and
// 1024, one mask) query-major is 1-5% slower, at 13.5 MiB (f16 (1, 32,
// 1536, 1536)) 2% slower (117.5 against 119.8); from 22.5 MiB on it is
// faster or level: f32 1536 225.6 against 214.5, 16-bit rows of 2048 (24
// MiB) 0.2-1.7% faster with one mask and 0.8% slower with a mask per
// batch, f16 2048 with an fp32 mask (32 MiB) 278.0 against 215.8, f32 2048
// (40 MiB) 440.5 against 381.3, f16 (1, 8, 4096, 4096) (96 MiB) 269.8
// against 216.8, f16 (2, 32, 1024, 1024) with a mask per head (192 MiB)
// 136.5 against 123.4 (bench/NOTES.md, v29).
constexpr uint64_t kQueryMajorReuseBytes = 16ull << 20;
// Query-major order takes blocks of query rows (query_block_rows() in
// attention_plan.cpp): the largest power of two dividing the query rows whose block
// passes at most this many bytes through the cache before a mask row is
// read again (a block's rows of x in and out and its mask rows, times the
// slices between two that share the mask). H100, us for blocks of 1 / the
// rule's / larger ones (bench/NOTES.md, v30): f16 (1, 32, 2048, 2048) 212.2
// / 205.6 (256, 3 MiB) / 205.2 (512) and 207.6 (1024); bf16 214.4 / 208.6
// (256) / 208.7 (512); f32 381.5 / 377.4 (128, 2.5 MiB) / 378.5 (256) and
// 385.6 (512); f16 (1, 8, 4096, 4096) 216.7 / 212.8 (64) / 213.8 (256) and
// 224.2 (1024); f32 1536 214.4 / 213.5 (256); f16 (2, 32, 1024, 1024) with a
// mask per head (read again 32 slices later) 123.3 / 123.7 (16) / 127.8 (64),
// 123.5 at 8; f16 (2, 32, 2048, 2048) with a mask per batch 420.0 / 404.3.
constexpr uint64_t kQueryBlockBytes = 4ull << 20;

}  // namespace vksoftmax::tuning
