// Pipeline: one compute pipeline of softmax.comp, built from the SPIR-V
// embedded in the library with one set of specialization constants.
#pragma once
#include <vulkan/vulkan.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "vksoftmax/divisor.hpp"
#include "vksoftmax/handle.hpp"
#include "vksoftmax/types.hpp"

namespace vksoftmax {

class Context;
struct DeviceFunctions;

// What one dispatch does: its KIND specialization constant (the KIND_*
// constants of softmax_common.glsl, same values). single_pass is the
// module of softmax_single_pass.comp; the others are softmax.comp's.
enum class ShaderKind : uint32_t {
    row_in_registers = 0,  // a group owns a row, read once into registers (tile by tile if longer)
    split_statistics = 1,  // split pass 1: each chunk's (m, d) and flags
    split_normalize = 2,   // split pass 2: merge a row's partials, write the chunk
    row_in_tiles = 3,      // a group owns a row the plan knows is longer than a tile
    rows_per_slot = 4,     // a subgroup holds several short rows, one in each vec4 slot
    single_pass = 5,       // long rows in one dispatch (softmax_single_pass.comp)
};
const char* kind_name(ShaderKind kind);

// What copy.comp times (its MODE): a copy, or reads or writes alone.
enum class Ceiling : uint32_t { copy = 0, read_only = 1, write_only = 2 };
const char* ceiling_name(Ceiling c);

// Which shader variant: a module (storage type, reduction) and the values
// of its specialization constants. Mirrors softmax_common.glsl.
struct PipelineKey {
    bool copy = false;  // copy.comp (the bandwidth ceilings) instead of softmax.comp
    Ceiling ceiling = Ceiling::copy;  // copy.comp's MODE
    Dtype dtype = Dtype::f32;
    bool subgroup = true;  // subgroup arithmetic (else shared-memory tree)
    uint32_t workgroup_size = 256;
    uint32_t slots = 1;  // vec4 slots per invocation (rows_per_slot: one row in each)
    uint32_t vec = 1;  // elements per memory access: 1, 4, or 8 (fp16, 16 bytes)
    // Contiguous rows not a multiple of vec long: read over windows from a
    // vector boundary, head and tail element by element (ODD_ROWS).
    bool odd_rows = false;
    bool log = false;
    // Log-softmax at T > 1: outputs guard against x - m overflowing
    // (LOG_OVERFLOW_GUARD; at T <= 1 the overflow is the right answer).
    bool log_overflow_guard = false;
    bool subgroup_rows = false;
    bool accurate = false;
    ShaderKind kind = ShaderKind::row_in_registers;
    uint32_t required_subgroup_size = 0;  // 0: the driver's choice
    // rows_per_slot: lanes holding one row (a power of two below the
    // subgroup size, reduced by subgroup shuffles, a module of their own);
    // 0: the whole subgroup holds each row.
    uint32_t row_lanes = 0;
    // single_pass: polling rounds before a workgroup computes the partials
    // still missing itself (PATIENCE); whether its chunks are held in the
    // slots (HELD_CHUNKS); partials a gathering lane loads at once
    // (GATHER_AHEAD, 1 to 4).
    uint32_t patience = 0;
    bool held_chunks = false;
    uint32_t gather_ahead = 1;
    // The attention modules (ATTENTION, softmax_attention.glsl) and their
    // options: MASK (mask_none, or the mask's storage), CAUSAL, SINKS, LSE,
    // ALIBI (per-head slopes) and MASK_PER_HEAD (a mask with a batch or
    // head dimension over 1).
    bool attention = false;
    uint32_t mask = 0;  // AttentionMask
    bool causal = false, sinks = false, lse = false, alibi = false, mask_per_head = false;
    // SCALE_IN_EXP: an attention module without a mask takes the statistic
    // of x and its scale in the exp (push constant inv_t = scale).
    bool scale_in_exp = false;
    // QUERY_MAJOR: the row kinds of softmax.comp hand out an attention
    // tensor's rows query row by query row, every (batch, head) slice of
    // query row q before q + 1 (PlanOptions::row_order); in blocks of
    // 2^query_block_shift query rows (QUERY_BLOCK_SHIFT: a slice takes a
    // block of rows before the next slice takes the same block).
    bool query_major = false;
    uint32_t query_block_shift = 0;
    // TILE_LOADS_TOGETHER: an attention module's subgroup rows issue a
    // tile's loads together (tile_loads_rule()).
    bool tile_loads_together = false;
    // NEXT_ROW_FIRST: an attention module's workgroup rows fetch the next
    // row before reducing the current one (row_fetch_rule(); the plan's
    // grid gives each workgroup kNextRowFirstRows rows or more).
    bool next_row_first = false;
    // WRITE_SHARES: workgroups that hold each row of ShaderKind::
    // row_in_registers, each reading it whole and writing its share of the
    // outputs (row_shares_rule(); the plan's grid is rows x write_shares).
    uint32_t write_shares = 1;
    // The backward pass's modules (softmax_backward.comp): the same kinds,
    // bindings 0 y, 1 dx, 2 workspace, 3 dy, 4 each row's sink gradient
    // (written with `sinks`: the forward had sinks).
    bool backward = false;
    // REREAD_GRADIENT (softmax_backward.comp): a backward row held in the
    // slots reads dy again for its write instead of holding it
    // (rereads_gradient() in plan.cpp).
    bool reread_gradient = false;
    // NONFINITE_BY_SUM (softmax_common.glsl): a row's NaN and +inf are
    // found by its sum's bits, not element by element (nonfinite_rule()).
    bool nonfinite_by_sum = false;
    // SUBGROUP_MAX_BY_KEY: a plain single-pass or workgroup-row module
    // whose subgroup maxima are taken on integer keys (subgroup_max_rule()).
    bool subgroup_max_by_key = false;

    std::string id() const;
};

// MASK of softmax_attention.glsl: no mask, or how it is stored.
enum AttentionMask : uint32_t { mask_none = 0, mask_f32 = 1, mask_f16 = 2, mask_bf16 = 3 };

// The attention modules' push constants (softmax_common.glsl, ATTENTION).
struct AttentionConstants {
    uint32_t heads, query_rows, mask_batch, mask_heads, mask_rows;
    int32_t causal_offset;
    float scale, alibi_e0, alibi_e1;
    uint32_t alibi_heads_log2;
    uint32_t first_row;  // the range's first row in the whole tensor (Plan::ranges)
    uint32_t query_slices;  // the range's (batch, head) slices: its rows / query_rows
    // query_rows, heads, mask_batch, mask_heads, mask_rows and query_slices
    // as divisors (divisor.hpp): the shader takes each row's index apart
    // without dividing.
    Divisor by_query_rows, by_heads, by_mask_batch, by_mask_heads, by_mask_rows, by_query_slices;
};

// A query-major range's (batch, head) slices and their divisor, from its
// rows (QUERY_MAJOR; the last range of a tensor may hold fewer).
inline void set_query_slices(AttentionConstants& c, uint32_t range_rows) {
    c.query_slices = range_rows / c.query_rows;
    c.by_query_slices = divisor_for(c.query_slices);
}

// Push constants of softmax.comp, in its declaration order; the plain
// modules take the first six (plain_push_bytes).
struct PushConstants {
    uint32_t rows, axis, inner, chunks, chunk;
    float inv_t;
    AttentionConstants attention;
};
constexpr uint32_t plain_push_bytes = 24;
// The block softmax_common.glsl declares: 4-byte members only, so that the
// host's layout and std430's agree (and within the 128 bytes every device has).
static_assert(sizeof(PushConstants) == 120, "PushConstants must match softmax_common.glsl's push constant block");
uint32_t push_bytes(const PipelineKey& key);

// The storage buffers of a dispatch: 0 input, 1 output, 2 workspace; the
// attention modules also 3 mask, 4 sinks, 5 log-sum-exp; the backward
// modules 3 the gradient dy (input y, output dx) and, for a forward with
// sinks, 4 the sink gradient (out).
constexpr uint32_t max_bindings = 6;
struct DescriptorBuffers {
    VkDescriptorBufferInfo info[max_bindings] = {};
    uint32_t count = 3;
};
uint32_t binding_count(const PipelineKey& key);

// The writes of the buffers' bindings into `set`, or pushed where `set` is
// VK_NULL_HANDLE; they point into `buffers` (the first buffers.count).
std::array<VkWriteDescriptorSet, max_bindings> buffer_writes(const DescriptorBuffers& buffers, VkDescriptorSet set);

// Descriptor bindings: DescriptorBuffers; set by
// vkCmdPushDescriptorSetKHR, so nothing is allocated per dispatch, or where
// the context has no push descriptors, by a descriptor set from the host's
// pool (Context::descriptor_set()).
class Pipeline {
public:
    Pipeline(Context& ctx, const PipelineKey& key);
    VkPipeline pipeline() const { return pipeline_.get(); }
    VkPipelineLayout layout() const { return layout_.get(); }
    const PipelineKey& key() const { return key_; }
    // Records: bind, push the buffer descriptors (or bind `set`, which
    // holds them, where it is not VK_NULL_HANDLE) and the constants,
    // dispatch `groups` workgroups.
    void dispatch(const DeviceFunctions& vk, VkCommandBuffer cb, const DescriptorBuffers& buffers,
                  VkDescriptorSet set, const PushConstants& push, uint32_t groups) const;
    VkDescriptorSetLayout set_layout() const { return set_layout_.get(); }
    // The driver's statistics of this pipeline ("Register Count: 40", ...),
    // where the context captures them; empty otherwise.
    std::vector<std::string> statistics() const { return statistics_; }

private:
    void create_layouts(Context& ctx, const std::string& what);
    Handle<VkShaderModule> create_module(Context& ctx, const std::string& what) const;
    void create_pipeline(Context& ctx, VkShaderModule module, const std::string& what);
    void read_statistics(Context& ctx, const std::string& what);
    PipelineKey key_;
    Handle<VkDescriptorSetLayout> set_layout_;
    Handle<VkPipelineLayout> layout_;
    Handle<VkPipeline> pipeline_;
    std::vector<std::string> statistics_;
};

}  // namespace vksoftmax
