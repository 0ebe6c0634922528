// Plan: which GPU path and geometry a softmax takes on one device, chosen
// from the shape, dtype and the device's limits; and its recording into a
// command buffer.
#pragma once
#include <vulkan/vulkan.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "vksoftmax/buffer_range.hpp"
#include "vksoftmax/device_info.hpp"
#include "vksoftmax/pipeline.hpp"
#include "vksoftmax/types.hpp"

namespace vksoftmax {

class Context;

enum class Path {
    subgroup_row,   // a subgroup owns a short row; several rows per workgroup
    workgroup_row,  // a workgroup owns a row held in registers
    split,          // long rows: chunks across workgroups, two dispatches
    single_pass,    // long rows: chunks across workgroups in one dispatch, which wait on each other
};
const char* path_name(Path p);

enum class Reduction { automatic, subgroup, shared };

// The order in which the row paths take an attention tensor's rows
// (PipelineKey::query_major). automatic: the plan's rule, query-major where
// head-major order would let a mask row leave the cache before the next
// (batch, head) slice that reads it does (query_major_rows() in attention_plan.cpp;
// bench/NOTES.md, v29);
// head_major: the tensor's own order; query_major: every (batch, head)
// slice of query row q before q + 1 (in blocks of query rows:
// PlanOptions::query_block), for attention problems on the
// subgroup-row and workgroup-row paths whose ranges hold whole slices
// (Error(invalid_argument) elsewhere).
enum class RowOrder { automatic, head_major, query_major };
const char* row_order_name(RowOrder order);

// Whether long rows may take the single-pass path, whose workgroups gather
// each other's partials within one dispatch (single_pass_rule()):
// automatic: where the device has the Vulkan memory model at device scope
// and the path was measured faster than two dispatches on its vendor's
// devices, for the problems it was faster on (NVIDIA: batches of long rows
// whose grid the GPU holds at once; bench/NOTES.md, v18 and, for the
// backward pass, v22); allowed:
// wherever it has the memory model; never: the two-dispatch split path.
enum class SinglePass { automatic, allowed, never };
const char* single_pass_name(SinglePass s);

// Whether `device` takes the single-pass path under `s`, and why (for
// reports): the memory-model features first, then what is known of the
// vendor (engine/src/single_pass_rule.cpp).
struct SinglePassRule {
    bool allowed = false;
    // The vendor takes the path only for grids that stay resident
    // (single_pass_plan.cpp): forward rows that one wave of held chunks
    // covers, at most 64 chunks a row, and fewer than 8 rows in up to two
    // such waves, up to 128 chunks a row (fp32 256) (spread_over_a_wave()),
    // and other batches of at least 8 rows, 6 to 40 MiB (less in held
    // chunks of a few waves), a grid of at most 4 workgroups per
    // multiprocessor, chunks at least 3/4 full (resident_batch()); the
    // backward pass for grids of one wave, and batches of 8 rows whose
    // every row's chunks stay resident, whatever their bytes
    // (resident_rows()); rows that one workgroup would hold (forward from
    // 16384 elements and over 32 KB in 3 chunks or more, backward from
    // 24576), where their chunks of at most 8192 make one wave
    // (spread_short_rows()).
    bool resident_batches_only = false;
    std::string reason;
};
SinglePassRule single_pass_rule(const DeviceInfo& device, SinglePass s = SinglePass::automatic);

// How the forward shaders find a row's NaN and +inf (nonfinite_rule()).
// each_element: every element is tested as it joins the max (two integer
// maxima of its bits) and exp2's argument is clamped, which any Vulkan
// device runs right; by_sum: neither, because a NaN or +inf element makes
// the row's sum NaN, tested once a row, which needs a device whose exp2
// gives 0 for -inf and NaN for NaN; automatic: by_sum on the drivers
// known to (engine/src/nonfinite_rule.cpp), each_element elsewhere. The
// backward pass and Precision::accurate always test each element.
enum class NonfiniteCheck { automatic, each_element, by_sum };
const char* nonfinite_check_name(NonfiniteCheck c);

// Whether `device` takes by_sum under `c`, and why (for reports).
struct NonfiniteRule {
    bool by_sum = false;
    std::string reason;
};
NonfiniteRule nonfinite_rule(const DeviceInfo& device, NonfiniteCheck c = NonfiniteCheck::automatic);

// How the single-pass and workgroup-row modules take a subgroup's max of
// the row's statistics: float_max (subgroupMax of floats, every device)
// or integer_keys (of integer keys that order as the floats do: one
// instruction on NVIDIA, but the same keys gave wrong maxima in a
// subgroup-row module on its 580.159.04 driver, bench/NOTES.md v67);
// automatic: integer_keys for forward single rows (plain softmax and
// log-softmax, no attention options) on the drivers where they were
// measured faster and checked (engine/src/subgroup_max_rule.cpp), but
// for 16-bit single-pass chunks of 8 slots (measured slower there);
// float_max elsewhere. integer_keys takes them for every forward
// single-pass or workgroup-row problem without attention options (tests,
// conformance); the subgroup-row and split paths, and single-pass
// workgroups of more than 256 invocations, keep float_max.
enum class SubgroupMax { automatic, float_max, integer_keys };
const char* subgroup_max_name(SubgroupMax m);

// Whether a forward single-pass or workgroup-row problem of `rows` rows
// without attention options takes integer keys on `device` under `m`, and
// why.
struct SubgroupMaxRule {
    bool by_key = false;
    std::string reason;
};
SubgroupMaxRule subgroup_max_rule(const DeviceInfo& device, uint64_t rows, SubgroupMax m = SubgroupMax::automatic);

// How an attention module's subgroup rows load a tile: in_branches (each
// vector's load and logits in a branch of its own, one memory latency after
// another where the compiler keeps them apart) or together (a masked 16-bit
// tile of 8 slots loads x's and the mask's vectors before any takes its
// logits; a causal tile of more than 4 slots takes its logits in a loop
// after its loads), which NVIDIA's driver runs 1-8% faster and lavapipe
// compiles up to 4x more slowly (bench/NOTES.md, v78, v79). automatic: together
// on the drivers where it was measured (engine/src/tile_loads_rule.cpp),
// in_branches elsewhere. Workgroup rows take their tile forms from their
// slot counts alone, on every device (shaders/softmax_tiles.glsl).
enum class TileLoads { automatic, in_branches, together };
const char* tile_loads_name(TileLoads t);

// Whether attention modules' subgroup rows on `device` load their tiles
// together under `t`, and why.
struct TileLoadsRule {
    bool together = false;
    std::string reason;
};
TileLoadsRule tile_loads_rule(const DeviceInfo& device, TileLoads t = TileLoads::automatic);

// How masked 16-bit attention rows held by a workgroup fetch their rows:
// in_turn (a workgroup reads a row, reduces it and writes it, then takes the
// next) or next_row_first (each workgroup takes two rows or more and issues
// the next row's loads of x and of its mask before it reduces the current one,
// so that they are in flight while it does), which NVIDIA's driver runs 2-4%
// faster on an H100 and 11-13% faster on an H200 on rows of 8 slots or more
// (bench/NOTES.md, v118, v120). automatic: next_row_first on the drivers where
// it was measured (engine/src/row_fetch_rule.cpp), in_turn elsewhere; either
// way only for rows the plan finds it fits (fetches_next_row_first() in
// plan.cpp), and next_row_first there on every device (tests, conformance).
enum class RowFetch { automatic, in_turn, next_row_first };
const char* row_fetch_name(RowFetch f);

// Whether masked 16-bit workgroup rows on `device` fetch the next row
// first under `f`, and why.
struct RowFetchRule {
    bool next_row_first = false;
    std::string reason;
};
RowFetchRule row_fetch_rule(const DeviceInfo& device, RowFetch f = RowFetch::automatic);

// How plain forward rows of 8193-16384 elements in small batches (up to
// 16 rows, and up to 66 on a device that counts 132 multiprocessors) are
// held: whole (one workgroup a row, or the single-pass path's chunks)
// or shared (several workgroups a row, each reading the whole row and
// taking its statistic, each writing its share of the outputs: no
// workgroup waits on another, and the row is read once from memory and
// again from L2), which NVIDIA's driver runs 1-13% faster on an H100
// (bench/NOTES.md, v124-v126). automatic: shared on the drivers where it was
// measured (engine/src/row_shares_rule.cpp), whole elsewhere; either way
// only for rows the plan finds it fits (row_write_shares() in plan.cpp),
// and shared there on every device (tests, conformance).
enum class RowShares { automatic, whole, shared };
const char* row_shares_name(RowShares s);

// Whether such rows on `device` are shared under `s`, and why.
struct RowSharesRule {
    bool shared = false;
    std::string reason;
};
RowSharesRule row_shares_rule(const DeviceInfo& device, RowShares s = RowShares::automatic);

// The choices given to the per-driver shader-form rules above, kept
// together so that a caller (tests, conformance, bench) sets them once and
// passes them on whole; automatic each: the rule's driver table decides.
struct DriverRules {
    NonfiniteCheck nonfinite = NonfiniteCheck::automatic;
    SubgroupMax subgroup_max = SubgroupMax::automatic;
    TileLoads tile_loads = TileLoads::automatic;
    RowFetch row_fetch = RowFetch::automatic;
    RowShares row_shares = RowShares::automatic;
};

struct PlanOptions {
    Reduction reduction = Reduction::automatic;
    uint32_t subgroup_size = 0;      // required subgroup size; 0: the device's
    std::optional<Path> path;        // force a path (tests, conformance)
    uint32_t chunk_elements = 0;     // split and single-pass paths: elements per chunk (rounded to a tile)
    SinglePass single_pass = SinglePass::automatic;
    DriverRules rules;  // the shader forms' per-driver rules (tests, conformance, bench)
    // Single-pass path: polling rounds before a workgroup computes the
    // partials still missing itself; 0: the plan's (tests set 1 to take
    // that path on every device).
    uint32_t single_pass_patience = 0;
    // Tests: bytes one range of a tensor may bind; 0: maxStorageBufferRange.
    uint64_t max_range_bytes = 0;
    RowOrder row_order = RowOrder::automatic;
    // Query-major order: query rows a slice takes before the next slice
    // takes the same ones (a power of two dividing the query rows); 0: the
    // plan's (query_block_rows() in attention_plan.cpp). Error(invalid_argument)
    // without query-major order or where it does not divide.
    uint32_t query_block = 0;
    uint32_t workgroup_size = 0;     // override (a power of two); 0: the plan's choice
    uint32_t slots = 0;              // override of vec4 slots per invocation (rows_per_slot: rows
                                     // per subgroup, one per slot); 0: the plan's choice. At most
                                     // 16, and 8192 a workgroup: alone, it halves the plan's
                                     // workgroup to fit; with workgroup_size past it, refused.
                                     // A row path's count past what holds the row is cut to it
    // Override of the workgroups that share each row where the rows are
    // shared (RowShares), 1 to 16 (1: each row whole); rows the form does
    // not fit, or whose shares the dispatch could not hold, stay whole. 0:
    // the plan's count.
    uint32_t write_shares = 0;
};

struct Plan {
    Problem problem;
    Path path = Path::workgroup_row;
    uint32_t passes = 0;  // dispatches: 1, 2 for split, 0 for an empty tensor
    PipelineKey key[2];
    const Pipeline* pipeline[2] = {nullptr, nullptr};
    uint32_t groups = 0;  // workgroups per dispatch
    PushConstants push{};
    uint64_t tensor_bytes = 0;     // input (and output) size
    // The split and single-pass paths' partials (and the single-pass path's
    // counters); 0 otherwise.
    uint64_t workspace_bytes = 0;
    // The single-pass path keeps flags and counts in its workspace: it must
    // hold zeros before this plan's first call; each call leaves it ready
    // for the next call of the same plan (zero it again before another
    // plan uses it).
    bool workspace_zeroed = false;
    uint32_t rows_per_workgroup = 1;
    // A tensor larger than one storage-buffer binding (maxStorageBufferRange)
    // or 32-bit indexing is cut into ranges of `range_outer` outer slices
    // each (the last may hold fewer), bound at their own offsets and
    // dispatched one after another; rows are independent. `ranges` is 1
    // where the tensor fits; push and groups are a whole range's.
    uint32_t ranges = 1;
    uint64_t range_outer = 0;
    uint64_t range_workspace_bytes = 0;  // each range's slice of the workspace (aligned)
    // The attention options' buffers (Problem::attention): bytes each must
    // hold; 0 where the option is off. A 16-bit mask of an odd element count
    // takes 2 bytes more than its elements (mask_buffer_bytes()).
    uint64_t mask_bytes = 0, sinks_bytes = 0, lse_bytes = 0;
    // A backward plan of a forward with sinks: each row's sink gradient
    // (fp32, one per row) to write; 0 otherwise.
    uint64_t sink_gradient_bytes = 0;
    // The debug label of the recorded work (where VK_EXT_debug_utils is on):
    // "vksoftmax softmax f32 (outer 64, axis 3000, inner 1) (subgroup-row)".
    std::string label;
};

// Which path a problem takes on a device: the forced one, else a subgroup
// per row for rows of up to 32 x the subgroup size (with subgroup
// arithmetic), a workgroup per row up to 32 x the largest workgroup, else
// single-pass where single_pass_rule() takes it, else split.
Path choose_path(const DeviceInfo& device, const Problem& problem, const PlanOptions& options = {});

// The plan for a device from its description alone: path, geometry, shader
// variants and push constants, validated (Error: invalid_argument or
// unsupported), with no pipeline created (plan.pipeline stays null). One
// planner per path; the tuning constants are in engine/src/tuning.hpp.
Plan plan_geometry(const DeviceInfo& device, const Problem& problem, const PlanOptions& options = {});

// plan_geometry() on the context's device, and the pipelines the plan needs
// created, so recording never does.
Plan make_plan(Context& ctx, const Problem& problem, const PlanOptions& options = {});

// Timestamps around the passes: queries first .. first + passes of `pool`
// (reset by the caller), written at the bottom of the pipe.
struct Timestamps {
    VkQueryPool pool = VK_NULL_HANDLE;
    uint32_t first = 0;
};

// The attention options' buffers: the mask and the sinks are read, the
// log-sum-exp written (plan.mask_bytes, sinks_bytes, lse_bytes; each is
// ignored where its option is off).
struct AttentionBuffers {
    BufferRange mask, sinks, lse;
};

// Records the plan's dispatches into `cb`. Reads `in`, writes `out`, uses
// `workspace` (plan.workspace_bytes; may be empty when that is 0). The
// caller makes the input's writes visible to compute-shader reads before,
// and the output's shader writes visible to its readers after; the only
// barrier recorded is the one between the split path's two passes. Const:
// one plan may be recorded from several threads into different buffers.
void record(const Context& ctx, const Plan& plan, VkCommandBuffer cb, const BufferRange& in, const BufferRange& out,
            const BufferRange& workspace, const Timestamps& timestamps = {});
// The same with the attention options' buffers: the mask and sinks are
// read as the input is, the log-sum-exp written as the output is (the same
// barrier contract).
void record(const Context& ctx, const Plan& plan, VkCommandBuffer cb, const BufferRange& in, const BufferRange& out,
            const BufferRange& workspace, const AttentionBuffers& attention, const Timestamps& timestamps = {});

// The backward pass of a plan made for Problem::backward: reads the
// forward output `y` and its gradient `dy` (each the tensor's bytes),
// writes `dx`. The barrier contract is record()'s, with y and dy read as
// its input is.
void record_backward(const Context& ctx, const Plan& plan, VkCommandBuffer cb, const BufferRange& y,
                     const BufferRange& dy, const BufferRange& dx, const BufferRange& workspace,
                     const Timestamps& timestamps = {});
// The same for a forward with sinks (Problem::attention.sinks): also writes
// each row's sink gradient to `sink_gradient` (plan.sink_gradient_bytes),
// as dx is written.
void record_backward(const Context& ctx, const Plan& plan, VkCommandBuffer cb, const BufferRange& y,
                     const BufferRange& dy, const BufferRange& dx, const BufferRange& workspace,
                     const BufferRange& sink_gradient, const Timestamps& timestamps = {});

// One problem of a batch: its plan (made on the batch's context) and buffers
// (a backward plan: `in` y, `gradient` dy, `out` dx, and for a forward with
// sinks `sink_gradient`).
struct BatchItem {
    const Plan* plan = nullptr;
    BufferRange in, out, workspace;
    AttentionBuffers attention;
    BufferRange gradient;
    BufferRange sink_gradient;
};

// Records independent problems with no barrier between them: every
// problem's first pass, then (where any plan is split) one barrier on all
// their workspaces and every split plan's second pass. N small softmaxes
// then cost one barrier (the host's, after) instead of N. The problems
// must not alias: no problem's output or workspace may overlap another's
// input, output or workspace (inputs may be shared). Overlaps within one
// VkBuffer are refused (Error(invalid_argument)); buffers aliasing the
// same memory cannot be seen and are the host's to avoid. The barrier
// contract is record()'s, for all the problems at once. With a query pool,
// writes 2 timestamps (before and after the batch).
void record_batch(const Context& ctx, const BatchItem* items, size_t count, VkCommandBuffer cb,
                  const Timestamps& timestamps = {});

}  // namespace vksoftmax
