// The C API (vksoftmax.h) over Context, Plan and record().
#include "vksoftmax/vksoftmax.h"

#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "vksoftmax/context.hpp"
#include "vksoftmax/error.hpp"
#include "vksoftmax/plan.hpp"

struct vksm_context_T {
    std::unique_ptr<vksoftmax::Context> ctx;
    std::mutex error_mutex;
    std::string last_error;
};

struct vksm_plan_T {
    vksm_context_T* owner;
    vksoftmax::Plan plan;
};

namespace {

vksm_result to_result(const vksoftmax::Error& e) {
    switch (e.kind()) {
        case vksoftmax::ErrorKind::invalid_argument: return VKSM_ERROR_INVALID_ARGUMENT;
        case vksoftmax::ErrorKind::unsupported: return VKSM_ERROR_UNSUPPORTED;
        case vksoftmax::ErrorKind::out_of_memory: return VKSM_ERROR_OUT_OF_MEMORY;
        case vksoftmax::ErrorKind::device_lost: return VKSM_ERROR_DEVICE_LOST;
        default: return VKSM_ERROR_VULKAN;
    }
}

// Runs `body`; exceptions never cross the C boundary.
template <typename Body>
vksm_result guarded(vksm_context_T* c, Body body) {
    auto fail = [&](vksm_result r, const char* what) {
        if (c) {
            std::lock_guard<std::mutex> lock(c->error_mutex);
            c->last_error = what;
        }
        return r;
    };
    try {
        body();
        return VKSM_SUCCESS;
    } catch (const vksoftmax::Error& e) {
        return fail(to_result(e), e.what());
    } catch (const std::bad_alloc&) {
        return fail(VKSM_ERROR_OUT_OF_MEMORY, "out of host memory");
    } catch (const std::exception& e) {
        return fail(VKSM_ERROR_VULKAN, e.what());
    }
}

// The value a C host stored in an enum field, which may be any int: read
// as an int, since loading an out-of-range value as the C++ enum is
// undefined.
template <typename Enum>
int raw_value(const Enum& field) {
    static_assert(sizeof(Enum) == sizeof(int), "C enums are int-sized");
    int value = 0;
    std::memcpy(&value, &field, sizeof value);
    return value;
}

// A C storage type's engine Dtype; Error(invalid_argument) naming `field`
// for a value outside vksm_dtype.
vksoftmax::Dtype dtype_of(int value, const char* field) {
    switch (value) {
    case VKSM_F32: return vksoftmax::Dtype::f32;
    case VKSM_F16: return vksoftmax::Dtype::f16;
    case VKSM_BF16: return vksoftmax::Dtype::bf16;
    }
    throw vksoftmax::Error(vksoftmax::ErrorKind::invalid_argument, std::string("unknown ") + field + " " + std::to_string(value));
}

// The attention options of a C problem (zeros: the defaults).
vksoftmax::Attention attention_of(const vksm_problem& problem) {
    vksoftmax::Attention a;
    a.heads = problem.heads ? problem.heads : 1;
    a.query_rows = problem.query_rows;
    a.mask = problem.mask != 0;
    if (a.mask) a.mask_dtype = dtype_of(raw_value(problem.mask_dtype), "mask_dtype");
    a.mask_batch = problem.mask_batch ? problem.mask_batch : 1;
    a.mask_heads = problem.mask_heads ? problem.mask_heads : 1;
    a.mask_rows = problem.mask_rows;
    a.causal = problem.causal != 0;
    a.causal_offset = problem.causal_offset;
    a.alibi_max_bias = problem.alibi_max_bias;
    a.sinks = problem.sinks != 0;
    a.lse = problem.lse != 0;
    return a;
}

vksoftmax::BufferRange range_of(const vksm_buffer& b) { return {b.buffer, b.offset, b.range}; }

}  // namespace

extern "C" {

vksm_result vksm_context_create(const vksm_context_desc* desc, vksm_context* out, char* message, size_t message_size) {
    if (out) *out = nullptr;
    if (!desc || !out) return VKSM_ERROR_INVALID_ARGUMENT;
    auto c = std::make_unique<vksm_context_T>();
    const vksm_result r = guarded(c.get(), [&] {
        vksoftmax::HostDevice h;
        h.instance = desc->instance;
        h.physical_device = desc->physical_device;
        h.device = desc->device;
        h.queue_family = desc->queue_family;
        h.get_instance_proc_addr = desc->get_instance_proc_addr;
        h.push_descriptor = desc->push_descriptor != 0;
        h.storage_buffer_16bit = desc->storage_buffer_16bit_access != 0;
        h.subgroup_size_control = desc->subgroup_size_control != 0;
        h.subgroup_uniform_control_flow = desc->subgroup_uniform_control_flow != 0;
        h.debug_utils = desc->debug_utils != 0;
        h.vulkan_memory_model = desc->vulkan_memory_model != 0;
        h.descriptor_pool = desc->descriptor_pool;
        if (desc->pipeline_cache_data && desc->pipeline_cache_size) {
            const auto* p = static_cast<const uint8_t*>(desc->pipeline_cache_data);
            h.pipeline_cache.assign(p, p + desc->pipeline_cache_size);
        }
        c->ctx = std::make_unique<vksoftmax::Context>(h);
    });
    if (r != VKSM_SUCCESS) {
        if (message && message_size) {
            std::strncpy(message, c->last_error.c_str(), message_size - 1);
            message[message_size - 1] = '\0';
        }
        return r;
    }
    *out = c.release();
    return VKSM_SUCCESS;
}

void vksm_context_destroy(vksm_context context) { delete context; }

const char* vksm_context_last_error(vksm_context context) {
    if (!context) return "no context";
    std::lock_guard<std::mutex> lock(context->error_mutex);
    return context->last_error.c_str();
}

vksm_result vksm_pipeline_cache_data(vksm_context context, void* data, size_t* size) {
    if (!context || !size) return VKSM_ERROR_INVALID_ARGUMENT;
    return guarded(context, [&] {
        const std::vector<uint8_t> blob = context->ctx->pipeline_cache_data();
        if (data) {
            if (*size < blob.size())
                throw vksoftmax::Error(vksoftmax::ErrorKind::invalid_argument, "pipeline cache buffer too small");
            std::memcpy(data, blob.data(), blob.size());
        }
        *size = blob.size();
    });
}

vksm_result vksm_plan_create(vksm_context context, const vksm_problem* problem, vksm_plan* out) {
    if (out) *out = nullptr;
    if (!context || !problem || !out) return VKSM_ERROR_INVALID_ARGUMENT;
    return guarded(context, [&] {
        vksoftmax::Problem p;
        p.shape = {problem->outer, problem->axis, problem->inner};
        const int precision = raw_value(problem->precision);
        p.dtype = dtype_of(raw_value(problem->dtype), "dtype");
        if (precision != VKSM_PRECISION_FAST && precision != VKSM_PRECISION_ACCURATE)
            throw vksoftmax::Error(vksoftmax::ErrorKind::invalid_argument, "unknown precision " + std::to_string(precision));
        p.log = problem->log != 0;
        p.temperature = problem->temperature == 0.0 ? 1.0 : problem->temperature;
        p.scale = problem->scale == 0.0 ? 1.0 : problem->scale;
        p.precision = precision == VKSM_PRECISION_ACCURATE ? vksoftmax::Precision::accurate : vksoftmax::Precision::fast;
        p.attention = attention_of(*problem);
        p.backward = problem->backward != 0;
        auto plan = std::make_unique<vksm_plan_T>();
        plan->owner = context;
        plan->plan = vksoftmax::make_plan(*context->ctx, p);
        *out = plan.release();
    });
}

void vksm_plan_destroy(vksm_plan plan) { delete plan; }

VkDeviceSize vksm_plan_tensor_bytes(vksm_plan plan) { return plan ? plan->plan.tensor_bytes : 0; }

void vksm_plan_workspace(vksm_plan plan, VkDeviceSize* size, VkDeviceSize* alignment) {
    if (size) *size = plan ? plan->plan.workspace_bytes : 0;
    if (alignment)
        *alignment = plan ? std::max<VkDeviceSize>(16, plan->owner->ctx->info().min_storage_buffer_offset_alignment) : 16;
}

uint32_t vksm_plan_passes(vksm_plan plan) { return plan ? plan->plan.passes : 0; }

void vksm_plan_attention_bytes(vksm_plan plan, VkDeviceSize* mask, VkDeviceSize* sinks, VkDeviceSize* lse) {
    if (mask) *mask = plan ? plan->plan.mask_bytes : 0;
    if (sinks) *sinks = plan ? plan->plan.sinks_bytes : 0;
    if (lse) *lse = plan ? plan->plan.lse_bytes : 0;
}

VkDeviceSize vksm_plan_sink_gradient_bytes(vksm_plan plan) { return plan ? plan->plan.sink_gradient_bytes : 0; }

vksm_result vksm_record(vksm_plan plan, VkCommandBuffer command_buffer, vksm_buffer input, vksm_buffer output,
                        vksm_buffer workspace, VkQueryPool timestamps, uint32_t first_query) {
    if (!plan || !command_buffer) return VKSM_ERROR_INVALID_ARGUMENT;
    return guarded(plan->owner, [&] {
        vksoftmax::record(*plan->owner->ctx, plan->plan, command_buffer, range_of(input), range_of(output),
                          range_of(workspace), {timestamps, first_query});
    });
}

vksm_result vksm_record_attention(vksm_plan plan, VkCommandBuffer command_buffer, vksm_buffer input,
                                  vksm_buffer output, vksm_buffer workspace, vksm_buffer mask, vksm_buffer sinks,
                                  vksm_buffer lse, VkQueryPool timestamps, uint32_t first_query) {
    if (!plan || !command_buffer) return VKSM_ERROR_INVALID_ARGUMENT;
    return guarded(plan->owner, [&] {
        vksoftmax::record(*plan->owner->ctx, plan->plan, command_buffer, range_of(input), range_of(output),
                          range_of(workspace), {range_of(mask), range_of(sinks), range_of(lse)},
                          {timestamps, first_query});
    });
}

vksm_result vksm_record_backward(vksm_plan plan, VkCommandBuffer command_buffer, vksm_buffer y, vksm_buffer dy,
                                 vksm_buffer dx, vksm_buffer workspace, VkQueryPool timestamps, uint32_t first_query) {
    return vksm_record_backward_sinks(plan, command_buffer, y, dy, dx, workspace, {VK_NULL_HANDLE, 0, 0}, timestamps,
                                      first_query);
}

vksm_result vksm_record_backward_sinks(vksm_plan plan, VkCommandBuffer command_buffer, vksm_buffer y,
                                       vksm_buffer dy, vksm_buffer dx, vksm_buffer workspace,
                                       vksm_buffer sink_gradient, VkQueryPool timestamps, uint32_t first_query) {
    if (!plan || !command_buffer) return VKSM_ERROR_INVALID_ARGUMENT;
    return guarded(plan->owner, [&] {
        vksoftmax::record_backward(*plan->owner->ctx, plan->plan, command_buffer, range_of(y), range_of(dy),
                                   range_of(dx), range_of(workspace), range_of(sink_gradient),
                                   vksoftmax::Timestamps{timestamps, first_query});
    });
}

vksm_result vksm_record_batch(const vksm_batch_item* items, uint32_t count, VkCommandBuffer command_buffer,
                              VkQueryPool timestamps, uint32_t first_query) {
    if (!command_buffer || (count > 0 && !items)) return VKSM_ERROR_INVALID_ARGUMENT;
    if (count == 0) return VKSM_SUCCESS;
    for (uint32_t i = 0; i < count; ++i)
        if (!items[i].plan || items[i].plan->owner != items[0].plan->owner) return VKSM_ERROR_INVALID_ARGUMENT;
    vksm_context owner = items[0].plan->owner;
    return guarded(owner, [&] {
        std::vector<vksoftmax::BatchItem> batch(count);
        for (uint32_t i = 0; i < count; ++i) {
            const vksm_batch_item& it = items[i];
            batch[i] = {&it.plan->plan, range_of(it.input), range_of(it.output), range_of(it.workspace),
                        {range_of(it.mask), range_of(it.sinks), range_of(it.lse)}, range_of(it.gradient),
                        range_of(it.sink_gradient)};
        }
        vksoftmax::record_batch(*owner->ctx, batch.data(), batch.size(), command_buffer, {timestamps, first_query});
    });
}

}  // extern "C"
