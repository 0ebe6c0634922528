#include "vksoftmax/plan.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "planning.hpp"
#include "tuning.hpp"
#include "vksoftmax/attention.hpp"
#include "vksoftmax/context.hpp"
#include "vksoftmax/error.hpp"
#include "vksoftmax/single_pass_workspace.hpp"

namespace vksoftmax {

using namespace tuning;
using namespace planning;

namespace {

// The logits' multiplier (scale, or 1 / T) as the shaders take it, or
// Error(invalid_argument) for one they cannot use.
float inverse_temperature(const Problem& problem) {
    const double k = logit_multiplier(problem);
    const float inv_t = static_cast<float>(k);
    if (!std::isfinite(inv_t) || !(inv_t > 0.0f))
        throw Error(ErrorKind::invalid_argument, "scale " + std::to_string(k) + " (or 1/T) does not fit fp32");
    return inv_t;
}

// Byte alignment of a range's offset: the device's storage-buffer offset
// alignment, and at least 16, so that a range's rows start on the same
// vector boundaries as in the whole tensor.
uint64_t range_alignment(const DeviceInfo& d) { return std::max<uint64_t>(16, d.min_storage_buffer_offset_alignment); }

uint64_t gcd(uint64_t a, uint64_t b) {
    while (b) {
        const uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

// Outer slices per range: as many as one binding holds (its bytes and
// 2^32 - 1 elements), in a multiple that keeps every range's offset
// aligned. Error(unsupported) where one outer slice alone does not fit.
uint64_t range_outer(const DeviceInfo& d, const Problem& problem, const PlanOptions& options) {
    const Shape& s = problem.shape;
    const uint64_t slice_elements = s.axis * s.inner, slice_bytes = slice_elements * dtype_size(problem.dtype);
    const uint64_t max_bytes = options.max_range_bytes ? std::min(options.max_range_bytes, d.max_storage_buffer_range)
                                                       : d.max_storage_buffer_range;
    const uint64_t fit = std::min(max_bytes / slice_bytes, std::numeric_limits<uint32_t>::max() / slice_elements);
    if (fit >= s.outer) return s.outer;
    const uint64_t align = range_alignment(d), step = align / gcd(slice_bytes, align);
    const uint64_t outer = fit / step * step;
    if (outer == 0)
        throw Error(ErrorKind::unsupported,
                    "a slice of " + std::to_string(slice_bytes) + " bytes (axis x inner of " + to_string(s) +
                        ") does not fit one storage-buffer binding (maxStorageBufferRange or the range asked for: " +
                        std::to_string(max_bytes) + " bytes) of " + d.name +
                        " in ranges aligned to " + std::to_string(align) + " bytes");
    return outer;
}

bool use_subgroup_reduction(const DeviceInfo& d, Reduction reduction) {
    switch (reduction) {
        case Reduction::automatic: return d.subgroup_arithmetic();
        case Reduction::subgroup:
            if (!d.subgroup_arithmetic())
                throw Error(ErrorKind::unsupported, d.name + " has no subgroup arithmetic in compute shaders");
            return true;
        case Reduction::shared: return false;
    }
    return false;
}

// A required subgroup size also bounds the workgroup: at most
// maxComputeWorkgroupSubgroups subgroups of that size.
uint32_t workgroup_cap(const DeviceInfo& d, uint32_t max_workgroup, uint32_t subgroup_size) {
    return d.max_workgroup_subgroups ? std::min(max_workgroup, floor_pow2(subgroup_size * d.max_workgroup_subgroups))
                                     : max_workgroup;
}

Limits device_limits(const DeviceInfo& d, const PlanOptions& options) {
    Limits l;
    l.subgroup_reduction = use_subgroup_reduction(d, options.reduction);
    l.shuffle = l.subgroup_reduction && d.subgroup_shuffle();
    const uint32_t required = options.subgroup_size;
    if (required != 0 && (!d.subgroup_size_control || required < d.min_subgroup_size || required > d.max_subgroup_size))
        throw Error(ErrorKind::unsupported, "subgroup size " + std::to_string(required) + " is not in the range " +
                                                d.name + " can require");
    l.required_subgroup_size = required;
    // Shaders read the real subgroup size and stay correct if the driver
    // gives another than the one planned for.
    l.subgroup_size = required ? required : std::max<uint32_t>(d.subgroup_size, 1);
    l.max_workgroup = floor_pow2(std::min({1024u, d.max_workgroup_invocations, d.max_workgroup_size_x}));
    if (required) l.max_workgroup = workgroup_cap(d, l.max_workgroup, required);
    l.min_workgroup = std::min(l.max_workgroup, std::max(required, 32u));
    l.multiprocessors = d.multiprocessors;
    l.loop_iterations = d.driver_id == VK_DRIVER_ID_MESA_LLVMPIPE ? kLlvmpipeLoopIterations : 0;
    l.max_groups = d.max_workgroup_count[0];
    return l;
}

}  // namespace

namespace planning {

// Error(unsupported) for a tensor the device or the shaders' 32-bit
// indexing cannot hold.
void check_fits(const DeviceInfo& d, uint64_t n, uint64_t bytes) {
    if (n > std::numeric_limits<uint32_t>::max())
        throw Error(ErrorKind::unsupported, "tensor of " + std::to_string(n) + " elements: at most 2^32-1 are supported");
    if (bytes > d.max_storage_buffer_range)
        throw Error(ErrorKind::unsupported, "tensor of " + std::to_string(bytes) + " bytes exceeds maxStorageBufferRange (" +
                                                std::to_string(d.max_storage_buffer_range) + ") of " + d.name);
}

// The paths that cut rows into chunks; the single-pass path reads them as
// the split path does and follows it.
bool chunked(Path path) { return path == Path::split || path == Path::single_pass; }

namespace {

// Whether contiguous rows whose length is not a multiple of 4 take vector
// accesses on `path` (ODD_ROWS: the body in whole vectors, head and tail
// element by element), as measured on an H200 (bench/NOTES.md, v9):
// - rows of at most 4 x the subgroup size stay scalar, a subgroup (or a few
//   lanes) each: 20480 x 77 took 6.95 us scalar, 8.17-8.56 in windows;
// - fp32 split rows stay scalar: 1x50257 8.02 us scalar, 8.20 in windows
//   (1x1000003 9.45, 9.70), while fp16 split rows gain (1x50257 9.00 ->
//   8.62 in 16-byte windows);
// - every other row gains (f32 4096x1009 11.6 -> 9.5, f16 8.5).
bool vector_odd_rows(const Problem& problem, Path path, const Limits& l) {
    const Shape& s = problem.shape;
    if (s.inner != 1 || s.axis % 4 == 0 || s.axis <= 4ull * l.subgroup_size) return false;
    return !chunked(path) || dtype_size(problem.dtype) == 2;
}

// The waves of the device's multiprocessors that the problem's rows make,
// a workgroup each: 0 where it counts none.
double row_waves(const Problem& problem, const Limits& l) {
    return l.multiprocessors == 0 ? 0.0 : static_cast<double>(problem.shape.rows()) / l.multiprocessors;
}

}  // namespace

// Elements per access on `path`: 16-byte vectors where rows are contiguous
// (8 fp16 elements fill two slots, so the slot count must be even). fp16
// rows a multiple of 4 long but not of 8 keep 8-byte accesses, which need
// no head and tail; fp16 rows not a multiple of 4 take 16-byte windows on
// the split path and 8-byte ones on the row paths (f16 4096x1009: 18.4 us
// in 16-byte windows, 8.5 in 8-byte ones, 11.5 scalar; bench/NOTES.md, v9).
uint32_t access_width(const Problem& problem, Path path, const Limits& l, uint32_t slots) {
    const Shape& s = problem.shape;
    const bool odd = s.axis % 4 != 0;
    if (s.inner != 1 || (odd && !vector_odd_rows(problem, path, l))) return 1;
    if (dtype_size(problem.dtype) != 2 || slots % 2 != 0) return 4;
    return s.axis % 8 == 0 || (odd && chunked(path)) ? 8 : 4;
}

uint64_t dispatch_grid(uint64_t items, uint32_t max_groups) {
    return max_groups ? std::min<uint64_t>(items, max_groups) : items;
}

// The longest window a row is read over on `path`: an ODD_ROWS row may
// start up to a vector's width minus one before its first element.
uint64_t row_window(const Problem& problem, Path path, const Limits& l) {
    const uint64_t axis = problem.shape.axis;
    if (!vector_odd_rows(problem, path, l)) return axis;
    return axis + access_width(problem, path, l, 2) - 1;
}

bool workgroup_holds_row(const Problem& problem, const Limits& l) {
    return row_window(problem, Path::workgroup_row, l) <= 4ull * kRowSlotsAtMaxWorkgroup * l.max_workgroup;
}

// `want` slots per invocation (at most `most`), rounded up to even where
// the row could take 16-byte fp16 accesses, which an odd count would halve
// (f16 1280x12888: 256 x 14 slots 23.5 us, 256 x 13 26.4); a single slot
// is left alone: rounding it up would idle half the lanes.
uint32_t slots_for(const Problem& problem, Path path, const Limits& l, uint64_t want, uint32_t most) {
    const uint32_t slots = static_cast<uint32_t>(std::clamp<uint64_t>(want, 1, most));
    const bool wide_f16 = access_width(problem, path, l, 2) == 8;
    return wide_f16 && slots > 1 && slots % 2 != 0 ? std::min(slots + 1, most & ~1u) : slots;
}

// The fewest slots (at most `most`, as slots_for() rounds them) whose tile
// over `lanes` lanes holds the row's window.
uint32_t slots_holding_row(const Problem& problem, Path path, const Limits& l, uint64_t lanes, uint32_t most) {
    return slots_for(problem, path, l, div_up(row_window(problem, path, l), 4 * lanes), most);
}

namespace {

// A forward masked bf16 attention row of up to kMaskedBf16RowMax (4096) elements,
// which a workgroup row holds at up to kMaskedBf16MaxSlots slots
// (tuning.hpp).
bool masked_bf16_row(const Problem& problem) {
    return !problem.backward && problem.dtype == Dtype::bf16 && problem.attention.mask &&
           problem.shape.axis <= kMaskedBf16RowMax;
}

// The most slots an invocation of a workgroup row holds: kMaxSlots, half
// that for the backward pass (y and dy), kMaskedBf16MaxSlots for masked
// bf16 rows, kOddRowMaxSlots for rows read in vector windows with heads
// and tails (ODD_ROWS).
uint32_t whole_row_most_slots(const Problem& problem, const Limits& l) {
    if (problem.backward) return kBackwardMaxSlots;
    if (masked_bf16_row(problem)) return kMaskedBf16MaxSlots;
    return vector_odd_rows(problem, Path::workgroup_row, l) ? kOddRowMaxSlots : kMaxSlots;
}

// Plain forward softmax: forward rows without attention options, the rows
// whose workgroup-row geometry the rules below tune apart from the others.
bool plain_forward(const Problem& problem) {
    return !problem.backward && !problem.attention.any();
}

// Plain forward rows read in vector windows with heads and tails
// (ODD_ROWS): at 8 slots on a workgroup row, 16-bit ones load whole
// windows (softmax_tiles.glsl, WHOLE_WINDOW_LOADS).
bool odd_plain_row(const Problem& problem, const Limits& l) {
    return plain_forward(problem) && vector_odd_rows(problem, Path::workgroup_row, l);
}

// The slots past which a plain forward odd row's workgroup doubles:
// kOddRowSpreadSlots, or kOddRowSpreadBatchSlots for 16-bit batches of
// kOddRowSpreadBatchRows rows or more.
uint32_t odd_row_spread_slots(const Problem& problem) {
    const bool large_16bit_batch = problem.dtype != Dtype::f32 && problem.shape.rows() >= kOddRowSpreadBatchRows;
    return large_16bit_batch ? kOddRowSpreadBatchSlots : kOddRowSpreadSlots;
}

// Whether a workgroup of `size` invocations is within the device's limits.
bool workgroup_fits(const Limits& l, uint32_t size) { return size >= l.min_workgroup && size <= l.max_workgroup; }

// The workgroup for contiguous forward rows without attention options that
// two subgroups would hold at more than half kNarrowRowSlots, in batches too
// small to fill the device with such workgroups: kFewRowsSubgroups
// subgroups up to kFewRowsMaxWaves waves for 16-bit and ODD_ROWS rows;
// kMinRowSubgroups up to kOddRowsWideMaxWaves for ODD_ROWS rows that two
// would hold at kOddRowsWideMinSlots or more (16-bit log-softmax past
// kOddRowsWideMinSlots: up to kOddHalfLogRowsWideMaxWaves), and up to
// kFloatRowsWideMaxWaves for fp32 rows a multiple of 4 long that two would
// hold at kFloatRowsWideMinSlots or more; 0 where none applies.
uint32_t few_short_rows_workgroup(const Problem& problem, const Limits& l, uint64_t window) {
    // The vec4 slots an invocation of kNarrowRowSubgroups subgroups would take.
    const uint64_t slots_of_two = div_up(window, 4ull * kNarrowRowSubgroups * l.subgroup_size);
    if (slots_of_two <= kNarrowRowSlots / 2 || slots_of_two > kNarrowRowSlots) return 0;
    const bool odd = vector_odd_rows(problem, Path::workgroup_row, l);
    const bool half = dtype_size(problem.dtype) == 2;
    const double waves = row_waves(problem, l);
    const uint32_t few = kFewRowsSubgroups * l.subgroup_size;
    if ((odd || half) && waves <= kFewRowsMaxWaves && workgroup_fits(l, few)) return few;
    const uint32_t wide = kMinRowSubgroups * l.subgroup_size;
    if (!workgroup_fits(l, wide)) return 0;
    if (odd) {
        const bool half_log_past_min = half && problem.log && slots_of_two > kOddRowsWideMinSlots;
        const double wide_waves = half_log_past_min ? kOddHalfLogRowsWideMaxWaves : kOddRowsWideMaxWaves;
        return waves <= wide_waves && slots_of_two >= kOddRowsWideMinSlots ? wide : 0;
    }
    return !half && waves <= kFloatRowsWideMaxWaves && slots_of_two >= kFloatRowsWideMinSlots ? wide : 0;
}

// The workgroup for contiguous forward rows a multiple of 4 long without
// attention options that kMinRowSubgroups subgroups would hold at all
// kMaxSlots slots, in batches of up to kFewRowsMaxWaves waves:
// kFewRowsSubgroups subgroups, but for a single fp32 softmax row (faster at
// kMinRowSubgroups, tuning.hpp); 0 otherwise.
uint32_t few_long_rows_workgroup(const Problem& problem, const Limits& l, uint64_t window) {
    const uint64_t slots_of_four = div_up(window, 4ull * kMinRowSubgroups * l.subgroup_size);
    const uint32_t few = kFewRowsSubgroups * l.subgroup_size;
    const bool held_at_most_slots = slots_of_four == kMaxSlots;
    const bool single_float_softmax = problem.shape.rows() == 1 && problem.dtype == Dtype::f32 && !problem.log;
    return held_at_most_slots && problem.shape.axis % 4 == 0 && !single_float_softmax &&
                   row_waves(problem, l) <= kFewRowsMaxWaves && workgroup_fits(l, few)
               ? few
               : 0;
}

// The workgroup for forward rows without attention options in batches too
// small to fill the device with the workgroups that larger batches take
// (few_short_rows_workgroup(), few_long_rows_workgroup()), on a device that
// counts its multiprocessors; 0 where no such rule applies.
uint32_t few_rows_workgroup(const Problem& problem, const Limits& l, uint64_t window) {
    if (!plain_forward(problem) || problem.shape.inner != 1 || l.multiprocessors == 0) return 0;
    const uint32_t short_rows = few_short_rows_workgroup(problem, l, window);
    return short_rows != 0 ? short_rows : few_long_rows_workgroup(problem, l, window);
}

// Whether a plain forward fp32 row a multiple of 4 long, which a workgroup
// of `wg` invocations would hold at `slots` slots, is held by one twice as
// wide: where `wg` is kFewRowsSubgroups subgroups at
// kLongFloatRowsWideMinSlots slots or more, in batches of more than
// kLongFloatRowsWideMinWaves waves and, but for softmax rows at all
// kMaxSlots, at most kLongFloatRowsWideMaxWaves (tuning.hpp).
bool long_float_rows_wide(const Problem& problem, const Limits& l, uint32_t wg, uint32_t slots) {
    if (!plain_forward(problem) || problem.dtype != Dtype::f32 || problem.shape.inner != 1 ||
        problem.shape.axis % 4 != 0 || l.multiprocessors == 0)
        return false;
    if (wg != kFewRowsSubgroups * l.subgroup_size || slots < kLongFloatRowsWideMinSlots || !workgroup_fits(l, 2 * wg))
        return false;
    const double waves = row_waves(problem, l);
    const bool softmax_at_most_slots = !problem.log && slots == kMaxSlots;
    return waves > kLongFloatRowsWideMinWaves && (softmax_at_most_slots || waves <= kLongFloatRowsWideMaxWaves);
}

// The workgroup that holds a row whole on the workgroup-row path at up to
// `most` slots an invocation: the narrowest of at least kMinRowSubgroups
// subgroups whose `most` slots hold the row's window, or kNarrowRowSubgroups
// for forward rows that those hold at up to kNarrowRowSlots slots, but
// plain forward odd rows that would take all kNarrowRowSlots
// (kOddRowNarrowSlots), or few_rows_workgroup()'s for
// batches too small to fill the device; plain forward odd rows double it
// past kOddRowSpreadSlots rather than `most`, and long fp32 rows in some
// batches once more (long_float_rows_wide()).
uint32_t whole_row_workgroup(const Problem& problem, const Limits& l, uint32_t most) {
    const uint64_t window = row_window(problem, Path::workgroup_row, l);
    uint32_t wg = std::max(l.min_workgroup, std::min(l.max_workgroup, kMinRowSubgroups * l.subgroup_size));
    const uint32_t narrow = kNarrowRowSubgroups * l.subgroup_size;
    const uint32_t narrow_slots = odd_plain_row(problem, l) ? kOddRowNarrowSlots : kNarrowRowSlots;
    const uint32_t few = few_rows_workgroup(problem, l, window);
    if (few != 0)
        wg = few;
    else if (!problem.backward && narrow >= l.min_workgroup && narrow < wg &&
             window <= 4ull * narrow_slots * narrow)
        wg = narrow;
    const uint32_t spread = odd_plain_row(problem, l) ? std::min(most, odd_row_spread_slots(problem)) : most;
    while (wg < l.max_workgroup && 4ull * spread * wg < window) wg *= 2;
    const uint32_t slots = slots_holding_row(problem, Path::workgroup_row, l, wg, most);
    return long_float_rows_wide(problem, l, wg, slots) ? 2 * wg : wg;
}

}  // namespace

}  // namespace planning

const char* path_name(Path p) {
    switch (p) {
        case Path::subgroup_row: return "subgroup-row";
        case Path::workgroup_row: return "workgroup-row";
        case Path::split: return "split";
        case Path::single_pass: return "single-pass";
    }
    return "?";
}

const char* row_order_name(RowOrder order) {
    switch (order) {
        case RowOrder::automatic: return "automatic";
        case RowOrder::head_major: return "head-major";
        case RowOrder::query_major: return "query-major";
    }
    return "?";
}

namespace {

// The workgroups that hold each row (WRITE_SHARES, row_shares_rule()),
// for contiguous plain forward rows of kSharedRowMin-kSharedRowMax
// elements, a multiple of 4, where the rule shares them and a workgroup of
// kSharedRowWorkgroup holds such a row (else 1): PlanOptions::write_shares
// where set and the grid holds them; else kSharedRowShares (16-bit:
// kSharedRowShares16) for batches of up to kSharedRowsMax rows, and for
// larger ones, on a device that counts its multiprocessors, half that
// while the shares outnumber the multiprocessors, down to
// kSharedBatchMinShares (16-bit rows of at most kSharedBatchHalfRowMax
// elements: kSharedBatchHalfRowMinShares); past that, 1.
uint32_t row_write_shares(const DeviceInfo& d, const Problem& problem, const PlanOptions& options, const Limits& l) {
    const uint64_t axis = problem.shape.axis;
    const uint64_t rows = problem.shape.rows();
    if (!plain_forward(problem) || problem.shape.inner != 1 || axis % 4 != 0) return 1;
    if (axis < kSharedRowMin || axis > kSharedRowMax) return 1;
    if (!workgroup_fits(l, kSharedRowWorkgroup) || axis > 4ull * kMaxSlots * kSharedRowWorkgroup) return 1;
    if (!row_shares_rule(d, options.rules.row_shares).shared) return 1;
    if (options.write_shares) {
        const uint64_t groups = rows * options.write_shares;
        return dispatch_grid(groups, d.max_workgroup_count[0]) == groups ? options.write_shares : 1;
    }
    uint32_t shares = problem.dtype == Dtype::f32 ? kSharedRowShares : kSharedRowShares16;
    if (rows <= kSharedRowsMax) return shares;
    if (l.multiprocessors == 0) return 1;
    const uint32_t fewest = problem.dtype != Dtype::f32 && axis <= kSharedBatchHalfRowMax ? kSharedBatchHalfRowMinShares
                                                                                         : kSharedBatchMinShares;
    while (shares > fewest && rows * shares > l.multiprocessors) shares /= 2;
    return rows * shares <= l.multiprocessors ? shares : 1;
}

Path choose_path(const DeviceInfo& d, const Problem& problem, const PlanOptions& options, const Limits& l) {
    if (options.path) {
        if (*options.path == Path::subgroup_row && !l.subgroup_reduction)
            throw Error(ErrorKind::unsupported, "the subgroup-row path needs subgroup arithmetic");
        if (*options.path == Path::single_pass) {
            const SinglePassRule rule = single_pass_rule(d, options.single_pass);
            if (!rule.allowed) throw Error(ErrorKind::unsupported, "the single-pass path is not allowed: " + rule.reason);
        }
        return *options.path;
    }
    if (l.subgroup_reduction &&
        row_window(problem, Path::subgroup_row, l) <= 4ull * kSubgroupRowSlots * l.subgroup_size)
        return Path::subgroup_row;
    if (workgroup_holds_row(problem, l)) {
        if (row_write_shares(d, problem, options, l) > 1) return Path::workgroup_row;
        return spread_short_rows(d, problem, options, l) ? Path::single_pass : Path::workgroup_row;
    }
    const SinglePassRule rule = single_pass_rule(d, options.single_pass);
    if (!rule.allowed) return Path::split;
    if (rule.resident_batches_only &&
        !(problem.backward ? resident_rows(d, problem, options, l)
                           : spread_over_a_wave(problem, options, l) || resident_batch(d, problem, options, l)))
        return Path::split;
    return Path::single_pass;
}

}  // namespace

Path choose_path(const DeviceInfo& device, const Problem& problem, const PlanOptions& options) {
    return choose_path(device, problem, options, device_limits(device, options));
}

namespace {

// Lanes that hold one row of at most half a subgroup's 4 x size (a row of
// 10: 4 lanes), reduced by subgroup shuffles; 0 where the whole subgroup
// holds a row (longer rows, or a device without shuffles).
uint32_t row_lanes_for(const Problem& problem, Path path, const Limits& l) {
    const uint64_t axis = problem.shape.axis;
    if (path != Path::subgroup_row || !l.shuffle || axis > 2ull * l.subgroup_size) return 0;
    uint32_t lanes = 1;
    while (4ull * lanes < axis) lanes *= 2;
    return lanes;
}

// Short rows, one per slot (ShaderKind::rows_per_slot): slots count rows,
// not slots of one row. Rows of half a subgroup or less, held by a few
// lanes each (row_lanes), may be scalar; longer ones held by the whole
// subgroup must be 4-wide.
bool holds_rows_per_slot(const Problem& problem, Path path, const Limits& l) {
    if (row_lanes_for(problem, path, l)) return true;
    return path == Path::subgroup_row && row_window(problem, path, l) <= 4ull * l.subgroup_size &&
           access_width(problem, path, l, 1) == 4;
}

uint32_t rows_per_workgroup(const Geometry& g, const Limits& l, bool slot_rows) {
    const uint32_t rows_per_subgroup = g.row_lanes ? std::max(1u, l.subgroup_size / g.row_lanes) : 1u;
    return std::max(1u, g.workgroup_size / l.subgroup_size) * (slot_rows ? g.slots * rows_per_subgroup : 1u);
}

// A subgroup owns a row, or holds several short ones (one per slot).
Geometry plan_subgroup_rows(const DeviceInfo& d, const Problem& problem, const Limits& l, bool slot_rows) {
    Geometry g;
    g.required_subgroup_size = l.required_subgroup_size;
    // Pin the planned size where the device lets us, so that a row fits the
    // registers of one subgroup.
    uint32_t cap = l.max_workgroup;
    const uint32_t sg = l.subgroup_size;
    if (!l.required_subgroup_size && d.subgroup_size_control && sg >= d.min_subgroup_size && sg <= d.max_subgroup_size) {
        g.required_subgroup_size = sg;
        cap = workgroup_cap(d, l.max_workgroup, sg);
    }
    g.subgroup_rows = true;
    g.row_lanes = row_lanes_for(problem, Path::subgroup_row, l);
    if (g.row_lanes && access_width(problem, Path::subgroup_row, l, 1) == 1)
        g.slots = 1;  // scalar rows of a few lanes: one per cluster (kSlotRows)
    else if (slot_rows)
        g.slots = kSlotRows;
    else
        g.slots = slots_holding_row(problem, Path::subgroup_row, l, sg, kSubgroupRowSlots);
    g.workgroup_size = std::min(cap, std::max(sg, g.slots == 1 ? kRowsWorkgroupShort : kRowsWorkgroup));
    g.rows_per_workgroup = rows_per_workgroup(g, l, slot_rows);
    g.items = div_up(problem.shape.rows(), g.rows_per_workgroup);
    return g;
}

// Whether the backward pass holds long rows whole once they make more
// than one wave rather than kBackwardWholeRowWaves: contiguous bf16 rows,
// and fp32 rows a multiple of 4 long (at 1024 x 8 they read dy again).
bool backward_whole_past_one_wave(const Problem& problem) {
    return problem.shape.inner == 1 &&
           (problem.dtype == Dtype::bf16 || (problem.dtype == Dtype::f32 && problem.shape.axis % 4 == 0));
}

// Whether forward 16-bit rows past kHalfRowSlotsAtMaxWorkgroup per
// invocation of the largest workgroup are held whole there, at up to
// kRowSlotsAtMaxWorkgroup slots, rather than read in tiles: contiguous rows
// a multiple of 4 long (8- or 16-byte windows), without attention options,
// that make at most one wave of the device's multiprocessors
// (kHeldHalfRowMaxWaves).
bool half_row_held_at_max_workgroup(const Problem& problem, const Limits& l) {
    return plain_forward(problem) && dtype_size(problem.dtype) == 2 && problem.shape.inner == 1 &&
           problem.shape.axis % 4 == 0 && l.multiprocessors > 0 && row_waves(problem, l) <= kHeldHalfRowMaxWaves &&
           row_window(problem, Path::workgroup_row, l) > 4ull * kHalfRowSlotsAtMaxWorkgroup * l.max_workgroup &&
           workgroup_holds_row(problem, l);
}

// Whether rows past kHalfRowSlotsAtMaxWorkgroup per invocation of the
// largest workgroup are read in tiles rather than held whole: forward
// fp16 and bf16 rows but those held there (`half_held`:
// half_row_held_at_max_workgroup()); the backward pass's unless they make
// more than one wave (backward_whole_past_one_wave()) or
// kBackwardWholeRowWaves waves.
bool tiles_at_max_workgroup(const Problem& problem, const Limits& l, bool half_held) {
    if (!problem.backward) return dtype_size(problem.dtype) == 2 && !half_held;
    const double waves = row_waves(problem, l);
    return backward_whole_past_one_wave(problem) ? waves <= 1.0 : waves < kBackwardWholeRowWaves;
}

// Whether rows read in tiles at the largest workgroup take them at
// kHalfRowTileSlots in workgroups of half its size instead: forward rows
// read in 16-byte windows (contiguous, a multiple of 8 long) without
// attention options that make kHalfRowTileWaves waves.
bool tiles_at_half_workgroup(const Problem& problem, const Limits& l) {
    return !problem.backward && !problem.attention.any() &&
           access_width(problem, Path::workgroup_row, l, kHalfRowTileSlots) == 8 &&
           row_waves(problem, l) >= kHalfRowTileWaves && l.max_workgroup / 2 >= l.min_workgroup;
}

// A workgroup owns a row, held in registers or, past the largest
// workgroup's half slots, read in tiles (tiles_at_max_workgroup()) of
// kHalfRowSlotsAtMaxWorkgroup at that workgroup or of kHalfRowTileSlots at
// half of it (tiles_at_half_workgroup()).
Geometry plan_workgroup_row(const Problem& problem, const Limits& l) {
    Geometry g;
    g.required_subgroup_size = l.required_subgroup_size;
    g.items = problem.shape.rows();
    const uint64_t axis = row_window(problem, Path::workgroup_row, l);
    const bool half_held = half_row_held_at_max_workgroup(problem, l);
    const bool tiles_at_max = tiles_at_max_workgroup(problem, l, half_held);
    if (tiles_at_max && axis > 4ull * kHalfRowSlotsAtMaxWorkgroup * l.max_workgroup) {
        // Tiles shorter than the row: ShaderKind::row_in_tiles.
        const bool half_workgroup = tiles_at_half_workgroup(problem, l);
        g.workgroup_size = half_workgroup ? l.max_workgroup / 2 : l.max_workgroup;
        g.slots = half_workgroup ? kHalfRowTileSlots : kHalfRowSlotsAtMaxWorkgroup;
        return g;
    }
    const uint32_t most = half_held ? kRowSlotsAtMaxWorkgroup : whole_row_most_slots(problem, l);
    g.workgroup_size = whole_row_workgroup(problem, l, most);
    g.slots = slots_holding_row(problem, Path::workgroup_row, l, g.workgroup_size, most);
    return g;
}

}  // namespace

namespace planning {

// Chunks of a chunked path for the geometry's tile: `want` elements each,
// rounded up to whole tiles, over the row's longest window. The
// single-pass path's chunk count is a power of two (the shader's
// generations count in steps of it, and 2^32 must be a multiple; the last
// chunks may hold nothing) of at most 32 per invocation (the shader's
// mask of chunks to merge), so its chunks are at least a 32 x workgroup
// share of the row.
void set_chunks(Geometry& g, const Problem& problem, const Limits& l, Path path, uint64_t want) {
    const uint64_t window = row_window(problem, path, l);
    const bool single_pass = path == Path::single_pass;
    if (single_pass) want = std::max(want, div_up(window, 32ull * g.workgroup_size));
    const uint64_t tile = 4ull * g.slots * g.workgroup_size;
    const uint64_t c = std::max<uint64_t>(tile, div_up(want, tile) * tile);
    g.chunk = static_cast<uint32_t>(std::min<uint64_t>(c, std::numeric_limits<uint32_t>::max() / 2));
    g.chunks = static_cast<uint32_t>(div_up(window, g.chunk));
    if (single_pass && floor_pow2(g.chunks) < g.chunks) g.chunks = 2 * floor_pow2(g.chunks);
    const uint64_t rows = problem.shape.rows();
    g.items = rows * g.chunks;
    g.workspace_bytes = single_pass ? single_pass_workspace::bytes(rows, g.chunks) : rows * g.chunks * 16;
}

}  // namespace planning

namespace {

// Long rows: chunks across workgroups, two dispatches.
Geometry plan_split(const Problem& problem, const PlanOptions& options, const Limits& l) {
    Geometry g;
    g.required_subgroup_size = l.required_subgroup_size;
    g.workgroup_size = std::max(l.min_workgroup, std::min(l.max_workgroup, kSplitWorkgroup));
    g.slots = kSplitSlots;
    const uint64_t rows = problem.shape.rows();
    const uint64_t want = options.chunk_elements
                              ? options.chunk_elements
                              : div_up(problem.shape.axis, std::clamp<uint64_t>(div_up(kSplitTargetItems, rows), 1, kSplitMaxChunks));
    set_chunks(g, problem, l, Path::split, want);
    if (g.items > std::numeric_limits<uint32_t>::max())
        throw Error(ErrorKind::unsupported, "too many rows x chunks for one dispatch");
    return g;
}

// The lanes a row's tile spans: a subgroup's for subgroup rows, else the
// workgroup's.
uint64_t tile_lanes(const Geometry& g, const Limits& l) { return g.subgroup_rows ? l.subgroup_size : g.workgroup_size; }

// A row path's slots forced past what holds the row, cut to what does:
// the extra slots would hold nothing, and on NVIDIA 580.159.04 such tiles
// (workgroup rows of 700-1500 elements at 64 x 7-16 slots, 1.7-4.1 times
// the row) gave NaN rows where the row's NaN and +inf are found by its
// sum, while every geometry that holds the row in its fewest slots passed
// (bench/NOTES.md, v51). Counts that leave the tile shorter than the row
// are kept: the row is read tile by tile. An even count stays even, so
// that 16-bit rows keep their 16-byte accesses (each fills a pair of
// slots).
void cut_slots_to_row(Geometry& g, const Problem& problem, const Limits& l, Path path, bool slot_rows) {
    if (chunked(path) || slot_rows) return;
    uint32_t holding = slots_holding_row(problem, path, l, tile_lanes(g, l), kMaxSlots);
    if (g.slots % 2 == 0 && holding % 2 != 0) ++holding;
    g.slots = std::min(g.slots, holding);
}

// Tuning overrides of the workgroup size and slot count: the shaders stay
// correct for any geometry (rows longer than a tile are folded tile by
// tile), with the slots cut to the row (cut_slots_to_row()).
void apply_overrides(Geometry& g, const Problem& problem, const PlanOptions& options, const Limits& l, Path path,
                     bool slot_rows) {
    if (!options.workgroup_size && !options.slots) return;
    if (options.workgroup_size) {
        if (options.workgroup_size > l.max_workgroup || (options.workgroup_size & (options.workgroup_size - 1)))
            throw Error(ErrorKind::invalid_argument,
                        "workgroup size override must be a power of two <= " + std::to_string(l.max_workgroup));
        g.workgroup_size = options.workgroup_size;
    }
    if (options.slots) {
        if (options.slots > kMaxSlots)
            throw Error(ErrorKind::invalid_argument,
                        "slots override " + std::to_string(options.slots) + ": at most " + std::to_string(kMaxSlots));
        g.slots = options.slots;
    }
    // Slots forced alone: the plan's workgroup halves until they fit.
    while (!options.workgroup_size && uint64_t{g.workgroup_size} * g.slots > kMaxWorkgroupSlots &&
           g.workgroup_size / 2 >= l.min_workgroup)
        g.workgroup_size /= 2;
    if (uint64_t{g.workgroup_size} * g.slots > kMaxWorkgroupSlots)
        throw Error(ErrorKind::invalid_argument,
                    "workgroup of " + std::to_string(g.workgroup_size) + " x " + std::to_string(g.slots) +
                        " slots: at most " + std::to_string(kMaxWorkgroupSlots) +
                        " vec4 slots a workgroup (1024 x 8, 512 x 16)");
    if (options.slots) cut_slots_to_row(g, problem, l, path, slot_rows);
    if (g.subgroup_rows) {
        g.rows_per_workgroup = rows_per_workgroup(g, l, slot_rows);
        g.items = div_up(problem.shape.rows(), g.rows_per_workgroup);
    }
    if (!chunked(path)) return;
    // The chunks again for the new tile: whole tiles, then (single-pass)
    // filled as the plan fills them, unless the chunk was forced too.
    set_chunks(g, problem, l, path, options.chunk_elements ? options.chunk_elements : g.chunk);
    if (path == Path::single_pass) fill_chunks(g, problem, l);
}

// The tensor's element count, Error where the device cannot store its
// type or the count passes 2^64.
uint64_t checked_elements(const DeviceInfo& d, const Problem& problem) {
    if (dtype_size(problem.dtype) == 2 && !d.storage_16bit)
        throw Error(ErrorKind::unsupported, std::string(dtype_name(problem.dtype)) +
                                                " tensors need storageBuffer16BitAccess, which " + d.name + " lacks");
    const Shape& shape = problem.shape;
    uint64_t rows = 0, elements = 0;
    if (__builtin_mul_overflow(shape.outer, shape.inner, &rows) || __builtin_mul_overflow(rows, shape.axis, &elements))
        throw Error(ErrorKind::invalid_argument, "shape " + to_string(shape) + " has more than 2^64 elements");
    return elements;
}

// The pipeline key's fields that the problem's types, the path and its
// geometry decide.
PipelineKey geometry_key(const DeviceInfo& d, const Problem& problem, Path path, const Geometry& g, const Limits& l,
                         const PlanOptions& options) {
    PipelineKey key;
    key.dtype = problem.dtype;
    key.subgroup = l.subgroup_reduction;
    key.log = problem.log;
    key.accurate = problem.precision == Precision::accurate;
    key.required_subgroup_size = g.required_subgroup_size;
    key.subgroup_rows = g.subgroup_rows;
    key.row_lanes = g.row_lanes;
    key.patience = path == Path::single_pass ? single_pass_patience(d, options) : 0;
    if (path == Path::single_pass) {
        key.held_chunks = holds_chunks(g);
        key.gather_ahead = gather_ahead(g, l);
    }
    key.workgroup_size = g.workgroup_size;
    key.slots = g.slots;
    return key;
}

// The elements each access moves, and whether rows end off a vector
// boundary. A slot row is one slot wide: 4-wide (or scalar, for rows of a
// few lanes), never a 16-byte pair.
void plan_access(const Problem& problem, Path path, const Geometry& g, const Limits& l, bool slot_rows,
                 PipelineKey& key) {
    key.vec = slot_rows ? access_width(problem, path, l, 1) : access_width(problem, path, l, g.slots);
    key.odd_rows = key.vec > 1 && problem.shape.axis % key.vec != 0;
}

// Whether a row path's tile (possibly shortened by overrides) is shorter
// than the row: such a plan gets the variant made only of the tile-by-tile
// loops, since on NVIDIA 580.159.04 the variant holding both forms gave NaN
// rows for some slot counts (bench/NOTES.md).
bool long_rows(const Problem& problem, Path path, const Geometry& g, const Limits& l, bool slot_rows) {
    const uint64_t planned_tile = 4ull * g.slots * tile_lanes(g, l);
    return !chunked(path) && !slot_rows && row_window(problem, path, l) > planned_tile;
}

// The debug label of the recorded work (Plan::label).
std::string plan_label(const Problem& problem, Path path, const PipelineKey& key) {
    return std::string("vksoftmax ") + (problem.log ? "log-softmax " : "softmax ") +
           (problem.backward ? "backward " : "") + dtype_name(problem.dtype) + " " + to_string(problem.shape) + " (" +
           path_name(path) + (key.attention ? ", attention options" : "") + ")";
}

// What pass `pass` of a plan dispatches.
ShaderKind shader_kind(Path path, uint32_t pass, bool slot_rows, bool long_rows) {
    if (path == Path::split) return pass == 0 ? ShaderKind::split_statistics : ShaderKind::split_normalize;
    if (path == Path::single_pass) return ShaderKind::single_pass;
    if (slot_rows) return ShaderKind::rows_per_slot;
    return long_rows ? ShaderKind::row_in_tiles : ShaderKind::row_in_registers;
}

// The plan's dispatches: passes, workgroups, the workspace (the chunked
// paths' partials, a slice per range; 0 otherwise) and the push constants
// of one range.
void plan_dispatch(const DeviceInfo& d, const Shape& range, Path path, const Geometry& g, float inv_t, Plan& plan) {
    plan.passes = path == Path::split ? 2 : 1;
    plan.rows_per_workgroup = g.rows_per_workgroup;
    plan.range_workspace_bytes =
        plan.ranges > 1 ? div_up(g.workspace_bytes, range_alignment(d)) * range_alignment(d) : g.workspace_bytes;
    plan.workspace_bytes = plan.range_workspace_bytes * plan.ranges;
    plan.workspace_zeroed = path == Path::single_pass;
    plan.groups = static_cast<uint32_t>(dispatch_grid(g.items, d.max_workgroup_count[0]));
    plan.push = PushConstants{static_cast<uint32_t>(range.rows()), static_cast<uint32_t>(range.axis),
                              static_cast<uint32_t>(range.inner), g.chunks, g.chunk, inv_t, {}};
}

// Whether a module of `key` on `path` would take a subgroup's max on
// integer keys were it given them: single-pass modules at up to
// kSinglePassKeyMaxWorkgroup invocations and workgroup-row modules. Past
// that size a single-pass key module runs float maxima anyway (v67), so
// such chunks take the float module that batches share (bench/NOTES.md,
// v101).
bool takes_keys(Path path, const PipelineKey& key) {
    if (!key.subgroup) return false;
    if (path == Path::single_pass) return key.workgroup_size <= kSinglePassKeyMaxWorkgroup;
    return path == Path::workgroup_row;
}

// Whether integer keys, where the driver's rule gives them to a single
// row, were measured faster than float maxima for its module: not in
// 16-bit single-pass chunks of more than kSinglePassKeyMaxHalfSlots slots
// (bench/NOTES.md, v101).
bool keys_pay(const Problem& problem, Path path, const PipelineKey& key) {
    return path != Path::single_pass || problem.dtype == Dtype::f32 || key.slots <= kSinglePassKeyMaxHalfSlots;
}

// The pipeline key that every pass shares (each pass then sets its kind):
// the geometry's fields, the attention options' (a backward problem's
// sinks'), how non-finite rows and subgroup maxima are found, the row
// order and the access width, for the plan's problem on its path, after
// plan_dispatch() (the logits' multiplier is its push constant's). Sets the
// plan's attention fields.
PipelineKey plan_key(const DeviceInfo& d, const PlanOptions& options, const Geometry& g, const Limits& l, bool slot_rows,
                     Plan& plan) {
    const Problem& problem = plan.problem;
    const Path path = plan.path;
    const float inv_t = plan.push.inv_t;  // plan_dispatch()'s, from inverse_temperature()
    PipelineKey key = geometry_key(d, problem, path, g, l, options);
    // The forward's attention layout, checked once (Error(invalid_argument)
    // for options that do not fit the shape); a backward problem's is its
    // sinks' alone.
    AttentionLayout layout;
    if (problem.backward) {
        plan_sink_gradient(d, problem, plan, key);
    } else {
        layout = attention_layout(problem);
        plan_attention(d, problem, layout, inv_t, plan, key);
    }
    key.backward = problem.backward;
    key.nonfinite_by_sum = !problem.backward && !key.accurate && nonfinite_rule(d, options.rules.nonfinite).by_sum;
    const SubgroupMax max_form = options.rules.subgroup_max;
    key.subgroup_max_by_key = takes_keys(path, key) && !problem.backward && !key.attention &&
                              subgroup_max_rule(d, problem.shape.rows(), max_form).by_key &&
                              (max_form == SubgroupMax::integer_keys || keys_pay(problem, path, key));
    plan_row_order(problem, layout, path, options, plan, key);
    // Attention modules never guard: they take T = 1, or their scale as T
    // only where it is 1 or more for log-softmax (the temperature joins the
    // scale).
    key.log_overflow_guard = problem.log && !problem.backward && !key.attention && inv_t < 1.0f;
    plan_access(problem, path, g, l, slot_rows, key);
    key.tile_loads_together =
        key.attention && key.subgroup_rows && tile_loads_rule(d, options.rules.tile_loads).together;
    return key;
}

// Whether a pass reads dy again for its write rather than holding it
// (REREAD_GRADIENT): fp32 backward workgroup rows held in registers,
// 4-wide, at kBackwardRereadGradientSlots in workgroups of
// kBackwardRereadGradientWorkgroup.
bool rereads_gradient(const Problem& problem, const PipelineKey& key) {
    return problem.backward && problem.dtype == Dtype::f32 && key.kind == ShaderKind::row_in_registers &&
           key.vec == 4 && !key.odd_rows && !key.subgroup_rows && key.slots >= kBackwardRereadGradientSlots &&
           key.workgroup_size >= kBackwardRereadGradientWorkgroup;
}

// The workgroup size of rows held in shares: kSharedRowWorkgroup, but
// kSharedLogWideWorkgroup for the fp32 log-softmax rows that would fill
// its 16 slots, in the batches where that was measured faster.
uint32_t shared_row_workgroup(const Problem& problem, const Limits& l) {
    const uint64_t rows = problem.shape.rows();
    const bool wide = problem.log && problem.dtype == Dtype::f32 && problem.shape.axis > kSharedLogWideRowMin &&
                      rows >= kSharedLogWideRowsMin && rows <= kSharedLogWideRowsMax &&
                      workgroup_fits(l, kSharedLogWideWorkgroup);
    return wide ? kSharedLogWideWorkgroup : kSharedRowWorkgroup;
}

// The geometry of a workgroup row that `shares` workgroups hold
// (row_write_shares()): shared_row_workgroup() invocations, slots enough
// for the row. A forced geometry replaces it afterwards.
void shared_row_geometry(const Problem& problem, const Limits& l, uint32_t shares, Geometry& g) {
    if (shares == 1) return;
    g.workgroup_size = shared_row_workgroup(problem, l);
    g.slots = slots_holding_row(problem, Path::workgroup_row, l, g.workgroup_size, kMaxSlots);
}

// The shares of a workgroup row whose final tile holds the row in
// registers (a forced geometry may cut it below the row, and the tiled
// kind reads the row again for its writes): the grid counts every share.
void share_rows(const Problem& problem, const Limits& l, uint32_t shares, Geometry& g) {
    if (shares == 1 || long_rows(problem, Path::workgroup_row, g, l, false)) return;
    g.write_shares = shares;
    g.items = problem.shape.rows() * shares;
}

// Whether pass 0 of a plan fetches each workgroup's next row before it
// reduces the current one (NEXT_ROW_FIRST, row_fetch_rule()): forward
// attention rows held whole in the registers of a workgroup (not a
// subgroup) in 16-byte accesses of kNextRowFirstMinSlots slots or more,
// under a 16-bit mask that every head shares and no causal mask; under
// the automatic choice, in batches of at least kNextRowFirstMinWaves rows
// per multiprocessor.
bool fetches_next_row_first(const DeviceInfo& d, const PlanOptions& options, const Problem& problem, const Limits& l,
                            const PipelineKey& key) {
    const bool mask_16bit = key.mask == mask_f16 || key.mask == mask_bf16;
    if (problem.backward || !key.attention || !mask_16bit || key.mask_per_head || key.causal) return false;
    if (key.kind != ShaderKind::row_in_registers || !key.subgroup || key.subgroup_rows || key.vec != 8 ||
        key.odd_rows || key.slots < kNextRowFirstMinSlots)
        return false;
    const RowFetch choice = options.rules.row_fetch;
    if (choice == RowFetch::automatic && row_waves(problem, l) < kNextRowFirstMinWaves) return false;
    return row_fetch_rule(d, choice).next_row_first;
}

}  // namespace

Plan plan_geometry(const DeviceInfo& d, const Problem& problem, const PlanOptions& options) {
    Plan plan;
    plan.problem = problem;
    const float inv_t = inverse_temperature(problem);
    check_backward_options(problem);
    if (options.write_shares > kMaxWriteShares)
        throw Error(ErrorKind::invalid_argument, "write shares override " + std::to_string(options.write_shares) +
                                                     ": at most " + std::to_string(kMaxWriteShares));
    const uint64_t elements = checked_elements(d, problem);
    plan.tensor_bytes = elements * dtype_size(problem.dtype);
    if (elements == 0) return plan;
    const Shape& shape = problem.shape;
    if (shape.rows() > std::numeric_limits<uint32_t>::max())
        throw Error(ErrorKind::unsupported,
                    "tensor of " + std::to_string(shape.rows()) + " rows: at most 2^32-1 are supported");

    // Tensors past one binding: ranges of outer slices, each planned as a
    // problem of its own (the largest range; the last may be shorter).
    plan.range_outer = range_outer(d, problem, options);
    plan.ranges = static_cast<uint32_t>(div_up(shape.outer, plan.range_outer));
    Problem range = problem;
    range.shape.outer = plan.range_outer;

    const Limits l = device_limits(d, options);
    const Path path = choose_path(d, range, options, l);
    const bool slot_rows = holds_rows_per_slot(range, path, l);
    Geometry g = path == Path::subgroup_row    ? plan_subgroup_rows(d, range, l, slot_rows)
                 : path == Path::workgroup_row ? plan_workgroup_row(range, l)
                 : path == Path::single_pass   ? plan_single_pass(range, options, l)
                                               : plan_split(range, options, l);
    const uint32_t shares =
        path == Path::workgroup_row && !slot_rows ? row_write_shares(d, range, options, l) : 1;
    shared_row_geometry(range, l, shares, g);
    apply_overrides(g, range, options, l, path, slot_rows);
    share_rows(range, l, shares, g);
    if (path == Path::single_pass) fit_loop_iterations(g, range, l, single_pass_patience(d, options));

    plan.path = path;
    plan_dispatch(d, range.shape, path, g, inv_t, plan);
    const PipelineKey key = plan_key(d, options, g, l, slot_rows, plan);
    for (uint32_t p = 0; p < plan.passes; ++p) {
        plan.key[p] = key;
        plan.key[p].kind = shader_kind(path, p, slot_rows, long_rows(problem, path, g, l, slot_rows));
        plan.key[p].reread_gradient = rereads_gradient(problem, plan.key[p]);
    }
    plan.key[0].write_shares = g.write_shares;
    if (plan.passes == 1 && fetches_next_row_first(d, options, range, l, plan.key[0])) {
        plan.key[0].next_row_first = true;
        plan.groups = static_cast<uint32_t>(dispatch_grid(div_up(g.items, kNextRowFirstRows), d.max_workgroup_count[0]));
    }
    plan.label = plan_label(problem, path, key);
    return plan;
}

Plan make_plan(Context& ctx, const Problem& problem, const PlanOptions& options) {
    Plan plan = plan_geometry(ctx.info(), problem, options);
    for (uint32_t p = 0; p < plan.passes; ++p) plan.pipeline[p] = &ctx.pipeline(plan.key[p]);
    return plan;
}

}  // namespace vksoftmax
