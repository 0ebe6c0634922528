// What the per-path planners share (plan.cpp; the single-pass path's in
// single_pass_plan.cpp, the attention options' in attention_plan.cpp): the
// device's limits for a problem, a plan's geometry, and how a row is read
// and cut into chunks.
#pragma once
#include <cstdint>

#include "vksoftmax/attention.hpp"
#include "vksoftmax/device_info.hpp"
#include "vksoftmax/plan.hpp"
#include "vksoftmax/types.hpp"

namespace vksoftmax::planning {

inline uint64_t div_up(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
inline uint32_t floor_pow2(uint32_t x) {
    uint32_t p = 1;
    while (p * 2 <= x) p *= 2;
    return p;
}
inline uint64_t ceil_pow2(uint64_t x) {
    uint64_t p = 1;
    while (p < x) p *= 2;
    return p;
}

// What the planners may use of the device for this problem.
struct Limits {
    bool subgroup_reduction = false;
    bool shuffle = false;                 // subgroup shuffles too
    uint32_t required_subgroup_size = 0;  // asked for by the options; 0: none
    uint32_t subgroup_size = 1;           // the size the geometry is planned for
    uint32_t max_workgroup = 1, min_workgroup = 1;
    uint32_t multiprocessors = 0;         // the device's count where it tells it; 0: unknown
    // The loop iterations an invocation may run in all before the driver
    // cuts its loops short (kLlvmpipeLoopIterations); 0: no such cap.
    uint64_t loop_iterations = 0;
    uint32_t max_groups = 0;  // maxComputeWorkGroupCount[0]: the grid a dispatch may have
};

// The geometry of one plan: workgroups, slots and the work items they take.
struct Geometry {
    uint32_t workgroup_size = 256;
    uint32_t slots = 1;
    uint32_t required_subgroup_size = 0;
    bool subgroup_rows = false;
    uint32_t row_lanes = 0;  // rows_per_slot: lanes per row; 0: the whole subgroup
    uint32_t rows_per_workgroup = 1;
    uint64_t items = 0;  // work items the dispatch's workgroups take
    uint32_t chunks = 1, chunk = 0;  // split path: chunks per row, elements per chunk
    bool chunks_by_row = false;      // single-pass: each chunk the count's share of the row (fill_chunks())
    uint64_t workspace_bytes = 0;
    uint32_t write_shares = 1;  // workgroups a row (WRITE_SHARES); items counts each
};

// The paths that cut rows into chunks (plan.cpp).
bool chunked(Path path);
// Elements per access on `path` (plan.cpp).
uint32_t access_width(const Problem& problem, Path path, const Limits& l, uint32_t slots);
// The longest window a row is read over on `path` (plan.cpp).
uint64_t row_window(const Problem& problem, Path path, const Limits& l);
// Whether a workgroup row holds the problem's rows (at its most slots,
// kRowSlotsAtMaxWorkgroup at the largest workgroup): the rows choose_path()
// gives the workgroup row, or spread_short_rows() chunks (plan.cpp).
bool workgroup_holds_row(const Problem& problem, const Limits& l);
// `want` slots per invocation, at most `most` (plan.cpp).
uint32_t slots_for(const Problem& problem, Path path, const Limits& l, uint64_t want, uint32_t most);
// The workgroups a dispatch of `items` work items has: one an item, at
// most `max_groups` (maxComputeWorkGroupCount[0]; 0: no limit known),
// whose workgroups then loop over the items (plan.cpp).
uint64_t dispatch_grid(uint64_t items, uint32_t max_groups);
// Chunks of a chunked path for the geometry's tile (plan.cpp).
void set_chunks(Geometry& g, const Problem& problem, const Limits& l, Path path, uint64_t want);
// Error(unsupported) for a tensor of n elements and `bytes` that the
// device or the shaders' 32-bit indexing cannot hold (plan.cpp).
void check_fits(const DeviceInfo& d, uint64_t n, uint64_t bytes);

// The attention options (attention_plan.cpp): their share of the plan and
// its pipeline key (Error(invalid_argument) for options that do not fit
// the shape, Error(unsupported) for buffers the device cannot hold); the
// order the row kinds take the rows in (after plan_attention(), with the
// plan's ranges and push constants set); the options a backward problem
// refuses, and its sink gradient.
void plan_attention(const DeviceInfo& d, const Problem& problem, const AttentionLayout& layout, float multiplier,
                    Plan& plan, PipelineKey& key);
void plan_row_order(const Problem& problem, const AttentionLayout& layout, Path path, const PlanOptions& options,
                    Plan& plan, PipelineKey& key);
void check_backward_options(const Problem& problem);
void plan_sink_gradient(const DeviceInfo& d, const Problem& problem, Plan& plan, PipelineKey& key);

// The single-pass path (single_pass_plan.cpp): its geometry, its chunks
// filled by the row where the plan sizes them so, and the rules by which
// a vendor that takes it only for resident grids takes it.
Geometry plan_single_pass(const Problem& problem, const PlanOptions& options, const Limits& l);
void fill_chunks(Geometry& g, const Problem& problem, const Limits& l);
// The single-pass path's polling rounds before a workgroup computes the
// partials still missing itself (PATIENCE): the options', else the device
// type's.
uint32_t single_pass_patience(const DeviceInfo& d, const PlanOptions& options);
// The loop iterations an invocation of a single-pass geometry may run in
// all, at most; and the geometry's chunks made fewer (longer) until that
// fits the device's cap (Limits::loop_iterations).
uint64_t single_pass_loop_iterations(const Geometry& g, const Limits& l, uint32_t patience);
void fit_loop_iterations(Geometry& g, const Problem& problem, const Limits& l, uint32_t patience);
bool resident_batch(const DeviceInfo& d, const Problem& problem, const PlanOptions& options, const Limits& l);
bool resident_rows(const DeviceInfo& d, const Problem& problem, const PlanOptions& options, const Limits& l);
bool spread_short_rows(const DeviceInfo& d, const Problem& problem, const PlanOptions& options, const Limits& l);
bool spread_over_a_wave(const Problem& problem, const PlanOptions& options, const Limits& l);
// Whether a single-pass geometry holds each chunk in one tile (HELD_CHUNKS),
// and how many partials a gathering lane loads at once (GATHER_AHEAD).
bool holds_chunks(const Geometry& g);
uint32_t gather_ahead(const Geometry& g, const Limits& l);

}  // namespace vksoftmax::planning
