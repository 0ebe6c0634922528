// The benchmark: softmax cases timed on the GPU with timestamp queries, and
// the device's copy ceiling timed the same way.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dependency.hpp"
#include "vksoftmax/buffer.hpp"
#include "vksoftmax/plan.hpp"
#include "vksoftmax/types.hpp"

namespace vksoftmax {
class Context;
}

namespace vksoftmax::bench {

struct Case {
    Shape shape;  // rows x cols: outer = rows, axis = cols
    Dtype dtype = Dtype::f32;
    bool log = false;
    std::string name() const;  // "1024x512"
};

// The shapes users bring, by family; "suite" is all of them.
struct Family {
    std::string name, what;
    std::vector<Shape> shapes;
};
const std::vector<Family>& families();
// The shapes of a family, or of them all for "suite"; empty for another name.
std::vector<Shape> family_shapes(const std::string& name);
// "core, classifier, ...": the families' names, for messages and help.
std::string family_names();

// A comma-separated list of families and ROWSxCOLS, crossed with the dtypes.
std::vector<Case> parse_cases(const std::string& shapes, const std::vector<Dtype>& dtypes, bool log);

struct Options {
    uint32_t iters = 20;    // back-to-back calls per timed submission
    uint32_t repeats = 15;  // timed submissions; median and min reported
    uint32_t warmup = 3;    // untimed calls before each timed run
    // Before the first timed run, keep the GPU busy with the case this long:
    // after an idle gap (the CPU check) clocks drop, and a burst of a few
    // calls does not bring them back (bench/NOTES.md).
    double warmup_ms = 1000;
    // Standard deviation of the logits. 4 is the peers' (../shared/peers-h200.md):
    // most fp16 outputs of long rows are then 0 or subnormal.
    float sigma = 4.f;
    PlanOptions plan;       // overrides for tuning
    // Also time `batch` copies of each case (its own slices of the buffers):
    // as one record_batch() per call, and as that many record() calls with
    // a barrier after each, the way a host without batches records them.
    uint32_t batch = 0;
    // Attention options on every case, seen as (batch, heads, cols, cols)
    // (self-attention: rows = batch x heads x cols), scaled by 1/sqrt(128):
    // "mask": an fp16 (cols, cols) mask broadcast over batch and heads,
    // uniform in [-4, 0] with -inf past the diagonal; "causal": the causal
    // mask from indices, no buffer; empty: none.
    std::string attention;
    uint64_t heads = 32;
    std::optional<Dtype> mask_dtype;  // "mask"'s storage; unset: bf16 for bf16 cases, else fp16
    // "mask"'s batch and head dimensions (each dividing the tensor's): 1, 1
    // broadcasts one (cols, cols) mask; (batch, 1) is a padding mask per batch.
    uint64_t mask_batch = 1, mask_heads = 1;
    // The backward pass instead (y: the softmax of the logits, dy:
    // normal(0, 1)), timed over its 3 x tensor bytes (y, dy in, dx out).
    bool backward = false;
    // With backward: the forward had a sink (one head, logit 0), and each
    // row's sink gradient is written too (its bytes counted).
    bool sinks = false;
    // Beside each case's copy ceiling, a pass that only reads its bytes and
    // one that only writes them (Row::read_ceiling, write_ceiling).
    bool ceilings = false;
};

// Device buffers every case of a run uses (each case takes the front of
// them): allocated once, the way PyTorch's caching allocator serves the
// peers, so that no case is timed on memory a different allocation history
// left behind (bench/NOTES.md, diagnosis 4).
struct Buffers {
    Buffers(Context& ctx, uint64_t tensor_bytes, uint64_t workspace_bytes);
    std::unique_ptr<Buffer> in, out, workspace;
    std::unique_ptr<Buffer> gradient;  // the backward pass's dy

};
// The largest workspace and bytes moved (Row::bytes: with the backward
// pass's sink gradient) among `cases` on this device, as measure() plans
// them with `o` (forward or backward, attention options).
struct Sizes {
    uint64_t workspace = 0, moved = 0;
};
Sizes sizes(Context& ctx, const std::vector<Case>& cases, const Options& o);

struct Timing {
    double median_us = 0, min_us = 0;
    double gbps = 0;  // bytes counted / median time
    std::vector<double> samples_us;  // every repeat, in the order taken
    // The medians of the timings taken before this one that the next one
    // did not confirm (time_calls() in bench.cpp): empty where the first
    // two agreed.
    std::vector<double> unsettled_medians_us;
    bool settled = true;  // false: the last two timings taken disagreed too
};

// Two timings agree when their medians are within kSettledFraction of the
// smaller; a case is timed at most kMaxTimings times (settle()).
constexpr double kSettledFraction = 0.03;
constexpr int kMaxTimings = 4;
// A timing is steady when its median is within kSteadyFraction of its
// fastest repeat. An H200 has switched from its slow state to its usual
// speed inside a timing (bf16 backward 1024x32764: seven repeats at
// 200.3 us, then 90.7, then 65.0), after a timing before it as slow, so
// that the two agreed on 200 us (bench/NOTES.md, v98). Steady timings of
// 378 H200 cases spread 1.3% at most.
constexpr double kSteadyFraction = 0.10;
// The warm-up of a timing that follows another with the GPU kept busy in
// between (the settle() retimings, each case's copy ceiling after the
// case): the clocks are up already, so 100 ms serves where the first
// timing needs Options::warmup_ms.
constexpr double kFollowWarmupMs = 100;
inline double follow_warmup_ms(const Options& o) { return o.warmup_ms < kFollowWarmupMs ? o.warmup_ms : kFollowWarmupMs; }
bool timings_agree(const Timing& a, const Timing& b);
bool steady(const Timing& t);
// Whether `ctx`'s device lowers its clock when idle, so that the time
// between timings matters: a GPU; not a CPU device (lavapipe), where the
// bench neither keeps the device busy while the reference is computed nor
// times the first case again.
bool clock_drops_when_idle(const Context& ctx);
// `first`, then `next()` until two timings in a row agree, kMaxTimings in
// all at most: the last, with the medians before it that the timing after
// them did not confirm, and whether the last two agreed. On a device whose
// clock changes state (`clock_states`: clock_drops_when_idle()) both must
// also be steady; a CPU device's repeats spread with its threads'
// scheduling instead.
Timing settle(Timing first, const std::function<Timing()>& next, bool clock_states);

struct Row {
    Case c;
    std::string attention;  // Options::attention
    std::string path;
    uint32_t passes = 0;
    uint64_t bytes = 0;  // 2 * N * sizeof(dtype) (backward: 3 *)
    Timing t;
    // The run's first case on a GPU: the median of its first timing, which
    // `t` (taken again after the last case) replaces; 0 for the others.
    double first_median_us = 0;
    double max_rel_error = 0;  // of one call, against the float64 reference
    bool verified = false;
    uint32_t workgroup_size = 0, slots = 0, groups = 0, vec = 0;
    uint32_t row_lanes = 0;  // lanes per row where a few lanes hold each (rows per slot); 0: all
    uint32_t write_shares = 1;  // workgroups that hold each row (PlanOptions::write_shares)
    bool odd_rows = false;   // vector accesses on rows not a multiple of vec long
    double pass1_us = 0;  // split path: median of pass 1 alone
    Timing ceiling;       // copy of the case's tensor bytes, timed the same way
    // With Options::ceilings: reading those bytes alone, and writing them
    // alone, timed the same way (gbps over the bytes once).
    Timing read_ceiling, write_ceiling;
    Timing batch, singles;        // Options::batch problems: one batch; records with barriers
    bool batch_verified = true;   // every problem of one batch against the reference
    std::vector<std::string> stats;  // driver statistics of each pass, where captured
};

// Softmax of fresh normal(0, o.sigma) logits: checked once against the CPU
// reference, then timed. Throws vksoftmax::Error on device failure.
// `buffers`: null to allocate the case's own (a diagnosis of allocation
// effects), else Buffers of at least half of sizes().moved and its
// workspace.
Row measure(Context& ctx, const Case& c, const Options& o, const Buffers* buffers);

// The row the bench reports for a run's first case, measured again after
// its last (`again`): again's timing, `first`'s copy ceilings (timed right
// after it), first's median in first_median_us, and both checks (wrong if
// either was, the larger error). On the H200 the first case of a run has
// twice taken twice its time through two timings that agreed (206.5 us
// where the same case took 108.5 in other runs, bench/NOTES.md v79, v80),
// which settle() cannot catch.
Row reprised(const Row& first, Row again);

// copy.comp over `bytes` of input (bytes read + written counted), on
// `buffers` where given, back to back with the barrier the cases get: the
// ceiling at that size (tens of MB back to back partly stay in L2). With
// `ceiling` read_only or write_only, the same bytes read or written alone
// (counted once).
Timing measure_copy(Context& ctx, uint64_t bytes, const Options& o, const Buffers* buffers,
                    Ceiling ceiling = Ceiling::copy);

// The fixed cost of a call: a one-workgroup dispatch that moves 16 bytes,
// back to back with the same barrier (or `dependency`). No softmax call
// can take less.
Timing measure_floor(Context& ctx, const Options& o, const Buffers* buffers,
                     Dependency dependency = Dependency::memory_barrier);

}  // namespace vksoftmax::bench
