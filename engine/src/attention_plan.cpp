// The attention options' share of a plan: its pipeline key's options,
// push constants and buffer sizes, the order the row kinds take an
// attention tensor's rows in, and what a backward problem may ask of them.
#include <cstdint>
#include <limits>
#include <string>

#include "planning.hpp"
#include "tuning.hpp"
#include "vksoftmax/attention.hpp"
#include "vksoftmax/divisor.hpp"
#include "vksoftmax/error.hpp"

namespace vksoftmax::planning {

using namespace tuning;

namespace {

// A masked row's bytes through the cache: x in and out and its mask row.
uint64_t attention_row_bytes(const Problem& problem) {
    return problem.shape.axis * (2 * dtype_size(problem.dtype) + dtype_size(problem.attention.mask_dtype));
}

// The (batch, head) slices from one slice to the next that reads the same
// mask slice: mask_heads where the mask is broadcast over heads (1 for one
// mask), else the next batch that shares it (heads * mask_batch); 0 where
// no other slice reads it (a mask per batch and head).
uint64_t mask_slice_period(const AttentionLayout& l) {
    if (l.mask_batch * l.mask_heads >= l.batch * l.heads) return 0;
    return l.mask_heads < l.heads ? l.mask_heads : l.heads * l.mask_batch;
}

// The bytes that pass through the cache, in head-major order, between two
// reads of one mask row; 0 where no row of the mask is read twice. Within a
// (batch, head) slice, a mask of fewer rows than the query rows is read
// again mask_rows rows later (each row's x in and out and its mask row).
// Across slices, a mask slice serves the next head that shares it
// (mask_heads slices later where the mask is broadcast over heads, else
// the next batch that shares it: heads * mask_batch slices later), each
// slice one head's rows of x in and out and one mask slice.
uint64_t mask_reuse_bytes(const Problem& problem, const AttentionLayout& l) {
    const uint64_t row_bytes = attention_row_bytes(problem);
    if (l.mask_rows < l.query_rows) return l.mask_rows * row_bytes;
    return mask_slice_period(l) * l.query_rows * row_bytes;
}

// The query rows of one block of query-major order (QUERY_BLOCK_SHIFT):
// the largest power of two dividing the query rows such that a block,
// times the slices between two that share a mask row, passes at most
// kQueryBlockBytes through the cache before that mask row is read again.
// 1 where no mask row is read by another slice (no mask, a mask per batch
// and head, or one of fewer rows than the query rows, read again within
// its own slice).
uint32_t query_block_rows(const Problem& problem, const AttentionLayout& l) {
    const uint64_t period = problem.attention.mask && l.mask_rows >= l.query_rows ? mask_slice_period(l) : 0;
    if (period == 0) return 1;
    const uint64_t between = period * attention_row_bytes(problem);  // a block row's share
    uint64_t block = 1;
    while (l.query_rows % (2 * block) == 0 && 2 * block * between <= kQueryBlockBytes) block *= 2;
    return static_cast<uint32_t>(block);
}

// log2 of the block of query-major order: PlanOptions::query_block where
// set (a power of two dividing the query rows), else query_block_rows().
uint32_t query_block_shift(const Problem& problem, const AttentionLayout& layout, const PlanOptions& options) {
    const uint64_t query_rows = layout.query_rows;
    const uint64_t block = options.query_block ? options.query_block : query_block_rows(problem, layout);
    if ((block & (block - 1)) != 0 || query_rows % block != 0)
        throw Error(ErrorKind::invalid_argument, "query-major blocks of " + std::to_string(block) +
                                                     " query rows: want a power of two dividing the " +
                                                     std::to_string(query_rows) + " query rows");
    uint32_t shift = 0;
    while ((uint64_t{1} << shift) < block) ++shift;
    return shift;
}

// Whether the row paths take an attention tensor's rows query-major
// (PlanOptions::row_order): forced, or by the rule, where head-major order
// would read a mask row again only after more than kQueryMajorReuseBytes
// have passed through the cache (mask_reuse_bytes()). Every range must
// hold whole (batch, head) slices. Error(invalid_argument) where the order
// is forced on a problem or path that cannot take it.
bool query_major_rows(const Problem& problem, const AttentionLayout& layout, const Plan& plan, Path path,
                      const PipelineKey& key, const PlanOptions& options) {
    if (options.row_order == RowOrder::head_major) return false;
    const uint64_t query_rows = plan.push.attention.query_rows;  // set where key.attention
    const bool possible = key.attention && !problem.backward && !chunked(path) && plan.range_outer % query_rows == 0;
    if (options.row_order == RowOrder::query_major) {
        if (!possible)
            throw Error(ErrorKind::invalid_argument,
                        "row order query-major needs attention options on the subgroup-row or workgroup-row path, "
                        "with every range holding whole (batch, head) slices; " + to_string(problem.shape) +
                            " takes the " + path_name(path) + " path" +
                            (key.attention ? " in ranges of " + std::to_string(plan.range_outer) + " rows, slices of " +
                                                 std::to_string(query_rows)
                                           : std::string(" without attention options")));
        return true;
    }
    return possible && problem.attention.mask &&
           mask_reuse_bytes(problem, layout) > kQueryMajorReuseBytes;
}

}  // namespace

// The attention options into the plan: its pipeline key's options, push
// constants and buffer sizes (Error(invalid_argument) from
// attention_layout(), Error(unsupported) for buffers past 32-bit indexing
// or the device's binding range).
void plan_attention(const DeviceInfo& d, const Problem& problem, const AttentionLayout& layout, float multiplier,
                    Plan& plan, PipelineKey& key) {
    const Attention& a = problem.attention;
    if (!a.any()) return;
    check_fits(d, layout.mask_elements, layout.mask_elements * dtype_size(a.mask_dtype));
    check_fits(d, layout.lse, layout.lse * 4);
    key.attention = true;
    key.mask = !a.mask                       ? mask_none
               : a.mask_dtype == Dtype::f16  ? mask_f16
               : a.mask_dtype == Dtype::bf16 ? mask_bf16
                                             : mask_f32;
    key.causal = a.causal;
    key.sinks = a.sinks;
    key.alibi = a.alibi_max_bias > 0.0;
    key.mask_per_head = a.mask && layout.mask_batch * layout.mask_heads > 1;
    key.lse = a.lse;
    plan.mask_bytes = mask_buffer_bytes(layout.mask_elements, a.mask_dtype);
    plan.sinks_bytes = layout.sinks * 4;
    plan.lse_bytes = layout.lse * 4;
    if (a.causal_offset < std::numeric_limits<int32_t>::min() || a.causal_offset > std::numeric_limits<int32_t>::max())
        throw Error(ErrorKind::unsupported, "causal offset " + std::to_string(a.causal_offset) + " does not fit 32 bits");
    const double heads_log2 = static_cast<double>(alibi_heads_log2(layout.heads));
    AttentionConstants& c = plan.push.attention;
    c.heads = static_cast<uint32_t>(layout.heads);
    c.query_rows = static_cast<uint32_t>(layout.query_rows);
    c.mask_batch = static_cast<uint32_t>(layout.mask_batch);
    c.mask_heads = static_cast<uint32_t>(layout.mask_heads);
    c.mask_rows = static_cast<uint32_t>(layout.mask_rows);
    c.by_query_rows = divisor_for(c.query_rows);
    c.by_heads = divisor_for(c.heads);
    c.by_mask_batch = divisor_for(c.mask_batch);
    c.by_mask_heads = divisor_for(c.mask_heads);
    c.by_mask_rows = divisor_for(c.mask_rows);
    c.causal_offset = static_cast<int32_t>(a.causal_offset);
    c.scale = multiplier;
    // log2 m0 = -max_bias / n, log2 m1 = -max_bias / 2 / n (alibi_slope()).
    c.alibi_e0 = static_cast<float>(-a.alibi_max_bias / heads_log2);
    c.alibi_e1 = static_cast<float>(-a.alibi_max_bias / 2.0 / heads_log2);
    c.alibi_heads_log2 = static_cast<uint32_t>(heads_log2);
    // With a mask the modules make each logit as they load it and take its
    // statistic at T = 1. Without, the scale goes into the exp (T = 1 / s),
    // sparing a multiply per element as it loads, except where x's units
    // could leave fp32 when the logits' do not: log-softmax at s < 1 (x - m;
    // the logits' units need no overflow guard) and sinks at s < 1 (sink / s).
    key.scale_in_exp = !a.mask && (multiplier >= 1.0f || (!problem.log && !a.sinks));
    plan.push.inv_t = key.scale_in_exp ? multiplier : 1.0f;
}

// The order the row kinds take an attention tensor's rows in
// (query_major_rows()), and its blocks; Error(invalid_argument) for a
// block size asked of rows taken head-major.
void plan_row_order(const Problem& problem, const AttentionLayout& layout, Path path, const PlanOptions& options,
                    Plan& plan, PipelineKey& key) {
    key.query_major = query_major_rows(problem, layout, plan, path, key, options);
    if (options.query_block && !key.query_major)
        throw Error(ErrorKind::invalid_argument, "query-major blocks of " + std::to_string(options.query_block) +
                                                     " query rows, but the rows are taken head-major");
    if (key.query_major) {
        set_query_slices(plan.push.attention, plan.push.rows);
        key.query_block_shift = query_block_shift(problem, layout, options);
    }
}

// Error(invalid_argument) for the attention options a backward problem
// cannot take: the mask, causal mask and ALiBi act through the forward
// output y (a hidden element's y is 0, and so is its dx), and the
// log-sum-exp is the forward's. Sinks it takes (their gradient).
void check_backward_options(const Problem& problem) {
    const Attention& a = problem.attention;
    if (problem.backward && (a.mask || a.causal || a.lse || a.alibi_max_bias != 0.0))
        throw Error(ErrorKind::invalid_argument,
                    "the backward pass takes no mask, causal mask, ALiBi or log-sum-exp (they act through the "
                    "forward output y): plan it without them (sinks it takes, for their gradient)");
}

// A backward problem whose forward had sinks: each row's sink gradient
// out (binding 4, fp32 per row), the row layout checked as the forward's.
void plan_sink_gradient(const DeviceInfo& d, const Problem& problem, Plan& plan, PipelineKey& key) {
    if (!problem.attention.sinks) return;
    attention_layout(problem);
    const uint64_t rows = problem.shape.rows();
    check_fits(d, rows, rows * 4);
    key.sinks = true;
    plan.sink_gradient_bytes = rows * 4;
}

}  // namespace vksoftmax::planning
