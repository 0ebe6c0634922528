#include "vksoftmax/pipeline.hpp"

#include <array>
#include <cstddef>
#include <vector>

#include "specialization_ids.h"
#include "spirv.hpp"
#include "vksoftmax/context.hpp"
#include "vksoftmax/error.hpp"

namespace vksoftmax {

const char* kind_name(ShaderKind kind) {
    switch (kind) {
        case ShaderKind::row_in_registers: return "row in registers";
        case ShaderKind::split_statistics: return "split statistics";
        case ShaderKind::split_normalize: return "split normalize";
        case ShaderKind::row_in_tiles: return "row in tiles";
        case ShaderKind::rows_per_slot: return "rows per slot";
        case ShaderKind::single_pass: return "single pass";
    }
    return "?";
}

const char* ceiling_name(Ceiling c) {
    switch (c) {
        case Ceiling::copy: return "copy";
        case Ceiling::read_only: return "read-only";
        case Ceiling::write_only: return "write-only";
    }
    return "?";
}

std::string PipelineKey::id() const {
    if (copy) return std::string(ceiling_name(ceiling)) + "/wg" + std::to_string(workgroup_size);
    return std::string(dtype_name(dtype)) + (subgroup ? "/sg" : "/shared") + "/wg" + std::to_string(workgroup_size) +
           "/slots" + std::to_string(slots) + "/vec" + std::to_string(vec) + (odd_rows ? "/odd" : "") + (log ? "/log" : "") + (log_overflow_guard ? "/guard" : "") +
           (subgroup_rows ? "/sgrows" : "") + (accurate ? "/accurate" : "") + "/" + kind_name(kind) +
           (row_lanes ? "/lanes" + std::to_string(row_lanes) : "") +
           (kind == ShaderKind::single_pass ? "/patience" + std::to_string(patience) + (held_chunks ? "/held" : "") +
                                                 "/ahead" + std::to_string(gather_ahead)
                                           : "") + "/req" + std::to_string(required_subgroup_size) +
           (attention ? "/attention/mask" + std::to_string(mask) + (causal ? "/causal" : "") + (sinks ? "/sinks" : "") +
                            (lse ? "/lse" : "") + (alibi ? "/alibi" : "") + (mask_per_head ? "/per-head" : "") +
                            (scale_in_exp ? "/scale-in-exp" : "") + (query_major ? "/query-major" : "") +
                            (query_block_shift ? "/block" + std::to_string(1u << query_block_shift) : "") +
                            (tile_loads_together ? "/loads-together" : "") + (next_row_first ? "/next-row-first" : "")
                      : "") +
           (backward ? std::string("/backward") + (sinks ? "/sinks" : "") + (reread_gradient ? "/reread-dy" : "") : "") +
           (nonfinite_by_sum ? "/by-sum" : "") +
           (subgroup_max_by_key ? "/max-by-key" : "") +
           (write_shares > 1 ? "/shares" + std::to_string(write_shares) : "");
}

// The backward modules declare the whole block: their sink gradient is
// indexed from first_row.
uint32_t push_bytes(const PipelineKey& key) {
    return key.attention || key.backward ? sizeof(PushConstants) : plain_push_bytes;
}
// The backward modules declare binding 4 (the sink gradient) whether or
// not SINKS is on: a stand-in buffer fills it where it is off.
uint32_t binding_count(const PipelineKey& key) { return key.attention ? max_bindings : key.backward ? 5u : 3u; }

namespace {

// A pipeline's specialization constants: value k is constant_id k
// (shaders/specialization_ids.h). Booleans are 32-bit.
struct SpecializationValues {
    std::vector<uint32_t> values;
    std::vector<VkSpecializationMapEntry> entries;
};

SpecializationValues copy_specialization(const PipelineKey& key) {
    std::vector<uint32_t> values(SPEC_ID_COPY_MODE + 1);
    values[SPEC_ID_WORKGROUP_SIZE] = key.workgroup_size;
    values[SPEC_ID_COPY_MODE] = static_cast<uint32_t>(key.ceiling);
    return {values, {}};
}

// The last id below fills the list (ctest spirv_val checks that no module
// declares an id past it).
static_assert(SPEC_ID_WRITE_SHARES + 1 == SPEC_ID_COUNT, "a specialization id the engine does not fill");

SpecializationValues softmax_specialization(const PipelineKey& key) {
    std::vector<uint32_t> values(SPEC_ID_COUNT);
    values[SPEC_ID_WORKGROUP_SIZE] = key.workgroup_size;
    values[SPEC_ID_SLOTS] = key.slots;
    values[SPEC_ID_VEC] = key.vec;
    values[SPEC_ID_LOG] = key.log;
    values[SPEC_ID_SUBGROUP_ROWS] = key.subgroup_rows;
    values[SPEC_ID_ACCURATE] = key.accurate;
    values[SPEC_ID_KIND] = static_cast<uint32_t>(key.kind);
    values[SPEC_ID_ROW_LANES] = key.row_lanes;
    values[SPEC_ID_ODD_ROWS] = key.odd_rows;
    values[SPEC_ID_PATIENCE] = key.patience;
    values[SPEC_ID_MASK] = key.mask;
    values[SPEC_ID_CAUSAL] = key.causal;
    values[SPEC_ID_SINKS] = key.sinks;
    values[SPEC_ID_LSE] = key.lse;
    values[SPEC_ID_ALIBI] = key.alibi;
    values[SPEC_ID_MASK_PER_HEAD] = key.mask_per_head;
    values[SPEC_ID_LOG_OVERFLOW_GUARD] = key.log_overflow_guard;
    values[SPEC_ID_SCALE_IN_EXP] = key.scale_in_exp;
    values[SPEC_ID_QUERY_MAJOR] = key.query_major;
    values[SPEC_ID_QUERY_BLOCK_SHIFT] = key.query_block_shift;
    values[SPEC_ID_HELD_CHUNKS] = key.held_chunks;
    values[SPEC_ID_GATHER_AHEAD] = key.gather_ahead;
    values[SPEC_ID_NONFINITE_BY_SUM] = key.nonfinite_by_sum;
    values[SPEC_ID_TILE_LOADS_TOGETHER] = key.tile_loads_together;
    values[SPEC_ID_REREAD_GRADIENT] = key.reread_gradient;
    values[SPEC_ID_NEXT_ROW_FIRST] = key.next_row_first;
    values[SPEC_ID_WRITE_SHARES] = key.write_shares;
    return {values, {}};
}

// Every module takes the whole list of its kind: an entry for an id a
// module does not declare is ignored (VkSpecializationInfo), so ROW_LANES
// reaches only the shuffle modules, PATIENCE and the held-chunk ids only
// the single-pass ones, the attention ids only the attention ones.
SpecializationValues specialization_values(const PipelineKey& key) {
    SpecializationValues spec = key.copy ? copy_specialization(key) : softmax_specialization(key);
    for (uint32_t id = 0; id < spec.values.size(); ++id)
        spec.entries.push_back({id, id * static_cast<uint32_t>(sizeof(uint32_t)), sizeof(uint32_t)});
    return spec;
}

}  // namespace

std::array<VkWriteDescriptorSet, max_bindings> buffer_writes(const DescriptorBuffers& buffers, VkDescriptorSet set) {
    std::array<VkWriteDescriptorSet, max_bindings> writes{};
    for (uint32_t i = 0; i < buffers.count; ++i) {
        writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
        writes[i].dstSet = set;
        writes[i].dstBinding = i;
        writes[i].descriptorCount = 1;
        writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        writes[i].pBufferInfo = &buffers.info[i];
    }
    return writes;
}

Pipeline::Pipeline(Context& ctx, const PipelineKey& key) : key_(key) {
    const std::string what = "softmax pipeline " + key.id();
    create_layouts(ctx, what);
    const Handle<VkShaderModule> module = create_module(ctx, what);
    create_pipeline(ctx, module.get(), what);
    if (ctx.capturing_statistics()) read_statistics(ctx, what);
}

// The storage buffers (set by push descriptors, or in a descriptor set
// from the host's pool: Context::push_descriptors()), and the push constants.
void Pipeline::create_layouts(Context& ctx, const std::string& what) {
    const DeviceFunctions& vk = ctx.vk();
    VkDevice dev = ctx.device();
    std::array<VkDescriptorSetLayoutBinding, max_bindings> bindings{};
    const uint32_t count = binding_count(key_);
    for (uint32_t i = 0; i < count; ++i) {
        bindings[i].binding = i;
        bindings[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        bindings[i].descriptorCount = 1;
        bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    }
    VkDescriptorSetLayoutCreateInfo dl{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    dl.flags = ctx.push_descriptors() ? VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR : 0;
    dl.bindingCount = count;
    dl.pBindings = bindings.data();
    VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
    check(vk.vkCreateDescriptorSetLayout(dev, &dl, nullptr, &set_layout), "vkCreateDescriptorSetLayout", what);
    auto destroy_dsl = vk.vkDestroyDescriptorSetLayout;
    set_layout_ = Handle<VkDescriptorSetLayout>(
        set_layout, [dev, destroy_dsl](VkDescriptorSetLayout h) { destroy_dsl(dev, h, nullptr); });

    VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes(key_)};
    VkPipelineLayoutCreateInfo pl{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    pl.setLayoutCount = 1;
    pl.pSetLayouts = &set_layout;
    pl.pushConstantRangeCount = 1;
    pl.pPushConstantRanges = &range;
    VkPipelineLayout layout = VK_NULL_HANDLE;
    check(vk.vkCreatePipelineLayout(dev, &pl, nullptr, &layout), "vkCreatePipelineLayout", what);
    auto destroy_pl = vk.vkDestroyPipelineLayout;
    layout_ = Handle<VkPipelineLayout>(layout, [dev, destroy_pl](VkPipelineLayout h) { destroy_pl(dev, h, nullptr); });
}

// The embedded module of the key's storage type and reduction.
Handle<VkShaderModule> Pipeline::create_module(Context& ctx, const std::string& what) const {
    const DeviceFunctions& vk = ctx.vk();
    VkDevice dev = ctx.device();
    const SpirvReduction reduction = !key_.subgroup ? SpirvReduction::shared
                                     : ctx.info().subgroup_uniform_control_flow ? SpirvReduction::subgroup_uniform_control_flow
                                                                                : SpirvReduction::subgroup;
    const SpirvBlob blob = key_.copy                             ? copy_spirv()
                           : key_.kind == ShaderKind::single_pass ? single_pass_spirv(key_.dtype, reduction, key_.attention, key_.backward, key_.subgroup_max_by_key)
                           : key_.backward ? backward_spirv(key_.dtype, reduction, key_.row_lanes != 0)
                                                                  : softmax_spirv(key_.dtype, reduction, key_.row_lanes != 0, key_.attention,
                                                                                  key_.subgroup_max_by_key);
    VkShaderModuleCreateInfo mi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    mi.codeSize = blob.count * sizeof(uint32_t);
    mi.pCode = blob.words;
    VkShaderModule module = VK_NULL_HANDLE;
    check(vk.vkCreateShaderModule(dev, &mi, nullptr, &module), "vkCreateShaderModule", what);
    auto destroy_sm = vk.vkDestroyShaderModule;
    return Handle<VkShaderModule>(module, [dev, destroy_sm](VkShaderModule h) { destroy_sm(dev, h, nullptr); });
}

// The compute pipeline with the key's specialization constants and, where
// asked, its required subgroup size.
void Pipeline::create_pipeline(Context& ctx, VkShaderModule module, const std::string& what) {
    const DeviceFunctions& vk = ctx.vk();
    VkDevice dev = ctx.device();
    const SpecializationValues spec_values = specialization_values(key_);
    VkSpecializationInfo spec{static_cast<uint32_t>(spec_values.entries.size()), spec_values.entries.data(),
                              spec_values.values.size() * sizeof(uint32_t), spec_values.values.data()};

    VkPipelineShaderStageRequiredSubgroupSizeCreateInfo required{
        VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO};
    VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    ci.stage.module = module;
    ci.stage.pName = "main";
    ci.stage.pSpecializationInfo = &spec;
    if (key_.required_subgroup_size != 0) {
        const DeviceInfo& d = ctx.info();
        if (!d.subgroup_size_control || key_.required_subgroup_size < d.min_subgroup_size ||
            key_.required_subgroup_size > d.max_subgroup_size)
            throw Error(ErrorKind::unsupported, "subgroup size " + std::to_string(key_.required_subgroup_size) +
                                                    " cannot be required on " + d.name);
        required.requiredSubgroupSize = key_.required_subgroup_size;
        ci.stage.pNext = &required;
        // Full subgroups make gl_NumSubgroups * gl_SubgroupSize the workgroup size.
        if (d.compute_full_subgroups && key_.workgroup_size % key_.required_subgroup_size == 0)
            ci.stage.flags |= VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT;
    }
    ci.layout = layout_.get();
    if (ctx.capturing_statistics()) ci.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
    VkPipeline pipeline = VK_NULL_HANDLE;
    check(vk.vkCreateComputePipelines(dev, ctx.pipeline_cache(), 1, &ci, nullptr, &pipeline), "vkCreateComputePipelines",
          what);
    auto destroy_p = vk.vkDestroyPipeline;
    pipeline_ = Handle<VkPipeline>(pipeline, [dev, destroy_p](VkPipeline h) { destroy_p(dev, h, nullptr); });
    ctx.name_object(VK_OBJECT_TYPE_PIPELINE, reinterpret_cast<uint64_t>(pipeline), "vksoftmax " + what);
}

void Pipeline::dispatch(const DeviceFunctions& vk, VkCommandBuffer cb, const DescriptorBuffers& buffers,
                        VkDescriptorSet set, const PushConstants& push, uint32_t groups) const {
    vk.vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline_.get());
    if (set != VK_NULL_HANDLE) {
        vk.vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, layout_.get(), 0, 1, &set, 0, nullptr);
    } else {
        const auto writes = buffer_writes(buffers, VK_NULL_HANDLE);
        vk.vkCmdPushDescriptorSetKHR(cb, VK_PIPELINE_BIND_POINT_COMPUTE, layout_.get(), 0, buffers.count, writes.data());
    }
    vk.vkCmdPushConstants(cb, layout_.get(), VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes(key_), &push);
    vk.vkCmdDispatch(cb, groups, 1, 1);
}

void Pipeline::read_statistics(Context& ctx, const std::string& what) {
    const DeviceFunctions& vk = ctx.vk();
    VkPipelineExecutableInfoKHR exe{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR};
    exe.pipeline = pipeline_.get();
    exe.executableIndex = 0;
    uint32_t n = 0;
    check(vk.vkGetPipelineExecutableStatisticsKHR(ctx.device(), &exe, &n, nullptr),
          "vkGetPipelineExecutableStatisticsKHR", what);
    std::vector<VkPipelineExecutableStatisticKHR> stats(n, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR});
    check(vk.vkGetPipelineExecutableStatisticsKHR(ctx.device(), &exe, &n, stats.data()),
          "vkGetPipelineExecutableStatisticsKHR", what);
    for (const auto& st : stats) {
        std::string v;
        switch (st.format) {
            case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: v = st.value.b32 ? "true" : "false"; break;
            case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: v = std::to_string(st.value.i64); break;
            case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: v = std::to_string(st.value.u64); break;
            case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR: v = std::to_string(st.value.f64); break;
            default: v = "?";
        }
        statistics_.push_back(std::string(st.name) + ": " + v);
    }
}

}  // namespace vksoftmax
