#include "vksoftmax/plan.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "vksoftmax/context.hpp"
#include "vksoftmax/error.hpp"

namespace vksoftmax {
namespace {

uint64_t div_up(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
uint32_t floor_pow2(uint32_t x) {
    uint32_t p = 1;
    while (p * 2 <= x) p *= 2;
    return p;
}

// Measured on an H200 (bench/NOTES.md): holding a row in more vec4 slots
// per invocation beats spreading it over more invocations, because every
// cross-subgroup step costs barriers (f32 1280x12888: 256 x 13 slots
// 35.9 us, 512 x 7 37.7), down to workgroups of 4 subgroups (f16
// 20480x4096: 128 x 8 83.8 us, 64 x 16 85.6). A workgroup holds rows up to
// 32 floats per invocation of its largest size (32768 at 1024: half an
// NVIDIA SM's register file); a subgroup owns rows up to 32 x subgroup
// size (1024 floats at 32) and needs no barrier at all.
constexpr uint32_t kMaxVpt = 16;            // vec4 slots per invocation: 64 floats in registers
constexpr uint32_t kRowVptAtMaxWorkgroup = 8;  // workgroup rows up to 4 * 8 * largest workgroup
constexpr uint32_t kMinRowSubgroups = 4;    // subgroups on a workgroup row, at least
// A fp16 row is held as fp32, twice its bytes: beyond 16 elements per
// invocation of the largest workgroup it is read in tiles of 4 slots and
// re-read for the write (the second read mostly from cache) rather than
// held whole. Whole, f16 1024x32768 needs 127 registers x 512 invocations,
// one workgroup per NVIDIA SM, 54.7 us; in two tiles 31 x 1024, two per SM,
// 46.0 us. fp32 rows lose more to the re-read than they gain (f32
// 1024x32768: 75.0 us whole, 85.8 in two tiles) and are held whole.
constexpr uint32_t kHalfRowVptAtMaxWorkgroup = 4;
constexpr uint32_t kSubgroupRowVpt = 8;     // a subgroup holds rows up to 32 * subgroup size
constexpr uint32_t kRowsWorkgroupShort = 256;  // subgroup rows of one vec4 slot: more rows per workgroup
// Rows of at most 4 x subgroup size, 4-wide: rows held per subgroup, one per
// slot, so that their loads are in flight together (PyTorch's warp softmax
// holds two such rows per warp too). Scalar rows (4 loads per slot) stay one
// per subgroup: f16 20480x77 took 7.16 us with two, 6.91 with one.
constexpr uint32_t kSlotRows = 2;
constexpr uint32_t kRowsWorkgroup = 128;
constexpr uint32_t kSplitWorkgroup = 256;
constexpr uint32_t kSplitVpt = 4;
constexpr uint64_t kSplitTargetItems = 1024;  // chunks in flight across all rows
constexpr uint64_t kSplitMaxChunks = 512;     // partials each pass-2 workgroup merges

}  // namespace

const char* path_name(Path p) {
    switch (p) {
        case Path::subgroup_row: return "subgroup-row";
        case Path::workgroup_row: return "workgroup-row";
        case Path::split: return "split";
    }
    return "?";
}

Plan make_plan(Context& ctx, const Problem& problem, const PlanOptions& options) {
    const DeviceInfo& d = ctx.info();
    const Shape& s = problem.shape;
    Plan plan;
    plan.problem = problem;

    if (!(problem.temperature > 0.0) || !std::isfinite(problem.temperature))
        throw Error(ErrorKind::invalid_argument,
                    "temperature must be positive and finite, got " + std::to_string(problem.temperature));
    float inv_t = static_cast<float>(1.0 / problem.temperature);
    if (!std::isfinite(inv_t))
        throw Error(ErrorKind::invalid_argument,
                    "temperature " + std::to_string(problem.temperature) + " is too small: 1/T overflows fp32");
    if (problem.dtype == Dtype::f16 && !d.storage_16bit)
        throw Error(ErrorKind::unsupported, "fp16 tensors need storageBuffer16BitAccess, which " + d.name + " lacks");

    const uint64_t n = s.elements();
    plan.tensor_bytes = n * dtype_size(problem.dtype);
    if (n == 0) return plan;
    if (n > std::numeric_limits<uint32_t>::max())
        throw Error(ErrorKind::unsupported, "tensor of " + std::to_string(n) + " elements: at most 2^32-1 are supported");
    if (plan.tensor_bytes > d.max_storage_buffer_range)
        throw Error(ErrorKind::unsupported, "tensor of " + std::to_string(plan.tensor_bytes) +
                                                " bytes exceeds maxStorageBufferRange (" +
                                                std::to_string(d.max_storage_buffer_range) + ") of " + d.name);

    bool use_sg = false;
    switch (options.reduction) {
        case Reduction::automatic: use_sg = d.subgroup_arithmetic(); break;
        case Reduction::subgroup:
            if (!d.subgroup_arithmetic())
                throw Error(ErrorKind::unsupported, d.name + " has no subgroup arithmetic in compute shaders");
            use_sg = true;
            break;
        case Reduction::shared: use_sg = false; break;
    }
    uint32_t required = options.subgroup_size;
    if (required != 0 && (!d.subgroup_size_control || required < d.min_subgroup_size || required > d.max_subgroup_size))
        throw Error(ErrorKind::unsupported, "subgroup size " + std::to_string(required) + " is not in the range " +
                                                d.name + " can require");
    // The subgroup size the geometry is planned for. Shaders read the real
    // one and stay correct if the driver gives another.
    uint32_t sg = required ? required : std::max<uint32_t>(d.subgroup_size, 1);
    uint32_t max_wg = floor_pow2(std::min({1024u, d.max_workgroup_invocations, d.max_workgroup_size_x}));
    // A required subgroup size also bounds the workgroup: at most
    // maxComputeWorkgroupSubgroups subgroups of that size.
    auto cap_for = [&](uint32_t size) {
        return d.max_workgroup_subgroups ? std::min(max_wg, floor_pow2(size * d.max_workgroup_subgroups)) : max_wg;
    };
    if (required) max_wg = cap_for(required);
    const uint32_t min_wg = std::min(max_wg, std::max(required, 32u));
    // Elements per access: 16-byte vectors where every row starts and ends
    // on one (8 fp16 elements fill two slots, so VPT must be even).
    auto vec_for = [&](uint32_t vpt) -> uint32_t {
        if (s.inner != 1 || s.axis % 4 != 0) return 1;
        return problem.dtype == Dtype::f16 && s.axis % 8 == 0 && vpt % 2 == 0 ? 8 : 4;
    };
    // `want` slots per invocation (at most `most`), rounded up to even where
    // the row could take 16-byte fp16 accesses, which an odd count would halve
    // (f16 1280x12888: 256 x 14 slots 23.5 us, 256 x 13 26.4); a single slot
    // is left alone: rounding it up would idle half the lanes.
    auto slots_for = [&](uint64_t want, uint32_t most) -> uint32_t {
        uint32_t vpt = static_cast<uint32_t>(std::clamp<uint64_t>(want, 1, most));
        const bool wide_f16 = vec_for(2) == 8;
        return wide_f16 && vpt > 1 && vpt % 2 != 0 ? std::min(vpt + 1, most & ~1u) : vpt;
    };

    Path path;
    if (options.path) {
        path = *options.path;
        if (path == Path::subgroup_row && !use_sg)
            throw Error(ErrorKind::unsupported, "the subgroup-row path needs subgroup arithmetic");
    } else if (use_sg && s.axis <= 4ull * kSubgroupRowVpt * sg) {
        path = Path::subgroup_row;
    } else if (s.axis <= 4ull * kRowVptAtMaxWorkgroup * max_wg) {
        path = Path::workgroup_row;
    } else {
        path = Path::split;
    }
    plan.path = path;

    PipelineKey key;
    key.dtype = problem.dtype;
    key.subgroup = use_sg;
    key.log = problem.log;
    key.accurate = problem.precision == Precision::accurate;
    key.required_subgroup_size = required;

    const uint64_t rows = s.rows();
    uint64_t items = rows;
    uint32_t chunks = 1, chunk = 0;
    // Short 4-wide rows, one per slot (KIND 4): VPT counts rows, not slots of one.
    const bool slot_rows = path == Path::subgroup_row && s.axis <= 4ull * sg && vec_for(1) == 4;
    switch (path) {
        case Path::subgroup_row: {
            // Pin the planned size where the device lets us, so that a row
            // fits the registers of one subgroup.
            uint32_t wg_cap = max_wg;
            if (!required && d.subgroup_size_control && sg >= d.min_subgroup_size && sg <= d.max_subgroup_size) {
                key.required_subgroup_size = sg;
                wg_cap = cap_for(sg);
            }
            key.subgroup_rows = true;
            key.vpt = slot_rows ? kSlotRows : slots_for(div_up(s.axis, 4ull * sg), kSubgroupRowVpt);
            key.workgroup_size = std::min(wg_cap, std::max(sg, key.vpt == 1 ? kRowsWorkgroupShort : kRowsWorkgroup));
            plan.rows_per_workgroup = std::max(1u, key.workgroup_size / sg) * (slot_rows ? key.vpt : 1u);
            items = div_up(rows, plan.rows_per_workgroup);
            break;
        }
        case Path::workgroup_row: {
            if (problem.dtype == Dtype::f16 && s.axis > 4ull * kHalfRowVptAtMaxWorkgroup * max_wg) {
                key.workgroup_size = max_wg;
                key.vpt = kHalfRowVptAtMaxWorkgroup;  // tiles shorter than the row: KIND 3 below
                break;
            }
            uint32_t wg = std::max(min_wg, std::min(max_wg, kMinRowSubgroups * sg));
            while (wg < max_wg && 4ull * kMaxVpt * wg < s.axis) wg *= 2;
            key.workgroup_size = wg;
            key.vpt = slots_for(div_up(s.axis, 4ull * wg), kMaxVpt);
            break;
        }
        case Path::split: {
            key.workgroup_size = std::max(min_wg, std::min(max_wg, kSplitWorkgroup));
            key.vpt = kSplitVpt;
            const uint64_t tile = 4ull * key.vpt * key.workgroup_size;
            uint64_t want = options.chunk_elements
                                ? options.chunk_elements
                                : div_up(s.axis, std::clamp<uint64_t>(div_up(kSplitTargetItems, rows), 1, kSplitMaxChunks));
            uint64_t c = std::max<uint64_t>(tile, div_up(want, tile) * tile);
            chunk = static_cast<uint32_t>(std::min<uint64_t>(c, std::numeric_limits<uint32_t>::max() / 2));
            chunks = static_cast<uint32_t>(div_up(s.axis, chunk));
            items = rows * chunks;
            if (items > std::numeric_limits<uint32_t>::max())
                throw Error(ErrorKind::unsupported, "too many rows x chunks for one dispatch");
            plan.workspace_bytes = items * 16;
            break;
        }
    }
    if (options.workgroup_size || options.vpt) {
        // Tuning overrides: the shaders stay correct for any geometry (rows
        // longer than a tile are folded tile by tile).
        if (options.workgroup_size) {
            if (options.workgroup_size > max_wg || (options.workgroup_size & (options.workgroup_size - 1)))
                throw Error(ErrorKind::invalid_argument, "workgroup size override must be a power of two <= " +
                                                             std::to_string(max_wg));
            key.workgroup_size = options.workgroup_size;
        }
        if (options.vpt) key.vpt = options.vpt;
        if (key.subgroup_rows) {
            plan.rows_per_workgroup = std::max(1u, key.workgroup_size / sg) * (slot_rows ? key.vpt : 1u);
            items = div_up(rows, plan.rows_per_workgroup);
        }
        if (path == Path::split) {
            const uint64_t tile = 4ull * key.vpt * key.workgroup_size;
            chunk = static_cast<uint32_t>(std::max<uint64_t>(tile, (chunk + tile - 1) / tile * tile));
            chunks = static_cast<uint32_t>(div_up(s.axis, chunk));
            items = rows * chunks;
            plan.workspace_bytes = items * 16;
        }
    }
    // A slot row is one slot wide: 4-wide, never a 16-byte pair.
    key.vec = slot_rows ? 4u : vec_for(key.vpt);
    plan.groups = static_cast<uint32_t>(std::min<uint64_t>(items, d.max_workgroup_count[0]));
    plan.push = PushConstants{static_cast<uint32_t>(rows), static_cast<uint32_t>(s.axis), static_cast<uint32_t>(s.inner),
                              chunks, chunk, inv_t};

    plan.passes = path == Path::split ? 2 : 1;
    // A row path whose tile (possible through overrides) is shorter than the
    // row gets the variant made only of the tile-by-tile loops: on NVIDIA
    // 580.159.04 the variant holding both forms gave NaN rows for some slot
    // counts (bench/NOTES.md).
    const uint64_t planned_tile = 4ull * key.vpt * (key.subgroup_rows ? sg : key.workgroup_size);
    const bool long_rows = path != Path::split && !slot_rows && s.axis > planned_tile;
    for (uint32_t p = 0; p < plan.passes; ++p) {
        plan.key[p] = key;
        plan.key[p].kind = path == Path::split ? p + 1 : slot_rows ? 4 : long_rows ? 3 : 0;
        plan.pipeline[p] = &ctx.pipeline(plan.key[p]);
    }
    return plan;
}

void record(const Context& ctx, const Plan& plan, VkCommandBuffer cb, const BufferRange& in, const BufferRange& out,
            const BufferRange& workspace, const Timestamps& timestamps) {
    if (plan.passes == 0) return;
    const DeviceFunctions& vk = ctx.vk();
    if (plan.workspace_bytes > 0 && (workspace.buffer == VK_NULL_HANDLE || workspace.range < plan.workspace_bytes))
        throw Error(ErrorKind::invalid_argument, "the split path needs a workspace of " +
                                                     std::to_string(plan.workspace_bytes) + " bytes");
    const uint64_t align = ctx.info().min_storage_buffer_offset_alignment;
    for (const BufferRange* r : {&in, &out, &workspace})
        if (align && r->offset % align)
            throw Error(ErrorKind::invalid_argument, "buffer offset " + std::to_string(r->offset) +
                                                         " is not a multiple of minStorageBufferOffsetAlignment (" +
                                                         std::to_string(align) + ")");
    if (in.range < plan.tensor_bytes || out.range < plan.tensor_bytes)
        throw Error(ErrorKind::invalid_argument, "input or output range is smaller than the tensor (" +
                                                     std::to_string(plan.tensor_bytes) + " bytes)");

    // An unused workspace binding still needs a valid buffer: the input
    // stands in (the row path never touches binding 2).
    const bool has_ws = plan.workspace_bytes > 0;
    VkDescriptorBufferInfo infos[3] = {{in.buffer, in.offset, plan.tensor_bytes},
                                       {out.buffer, out.offset, plan.tensor_bytes},
                                       {has_ws ? workspace.buffer : in.buffer, has_ws ? workspace.offset : in.offset,
                                        has_ws ? plan.workspace_bytes : plan.tensor_bytes}};

    auto stamp = [&](uint32_t i) {
        if (timestamps.pool)
            vk.vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, timestamps.pool, timestamps.first + i);
    };
    stamp(0);
    for (uint32_t p = 0; p < plan.passes; ++p) {
        if (p > 0) {
            // Pass 2 reads the partials pass 1 wrote.
            VkBufferMemoryBarrier b{VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER};
            b.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
            b.dstAccessMask = VK_ACCESS_SHADER_READ_BIT;
            b.srcQueueFamilyIndex = b.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
            b.buffer = workspace.buffer;
            b.offset = workspace.offset;
            b.size = plan.workspace_bytes;
            vk.vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0,
                                    0, nullptr, 1, &b, 0, nullptr);
        }
        plan.pipeline[p]->dispatch(vk, cb, infos, plan.push, plan.groups);
        stamp(p + 1);
    }
}

}  // namespace vksoftmax
