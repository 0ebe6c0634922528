/* vksoftmax: softmax and log-softmax recorded into a host application's own
 * Vulkan command buffers, on its own device and buffers (C99).
 *
 * The host creates its instance and device, enables what vksoftmax needs
 * (VK_KHR_push_descriptor; storageBuffer16BitAccess for fp16; optionally
 * subgroupSizeControl + computeFullSubgroups), and hands them over with its
 * vkGetInstanceProcAddr. vksoftmax creates pipelines (at plan creation,
 * never while recording) and a pipeline cache; it allocates no memory,
 * command pool, descriptor pool or synchronization object, and submits
 * nothing.
 *
 * Barrier contract of vksm_record():
 *   before: the host's writes to the input, and any earlier access to the
 *     output and workspace, must be made available to
 *     VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT with VK_ACCESS_SHADER_READ_BIT
 *     (input, workspace) and VK_ACCESS_SHADER_WRITE_BIT (output, workspace);
 *   inside: the split path records one buffer barrier on the workspace
 *     (compute shader write -> compute shader read) between its passes;
 *     nothing else;
 *   after: the output is written by VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
 *     with VK_ACCESS_SHADER_WRITE_BIT; readers need a barrier from there.
 * A single-pass plan (one dispatch for long rows, possible where
 * vulkan_memory_model is set) records no barrier; its workspace must be
 * zero-filled before the plan's first record with it, and each call leaves
 * it ready for the next call of the same plan.
 *
 * Threads: each context calls Vulkan through function tables of its own,
 * loaded from the get_instance_proc_addr it was given; vksoftmax keeps no
 * process-wide Vulkan state. Contexts may be created, used and destroyed
 * from any threads at once, on the same instance or on different ones, as
 * far as vksoftmax goes (a driver may hang on devices created and destroyed
 * on several threads at once: NVIDIA 580.159.04 did, see README). A
 * context and its plans may be used from several threads at once: creating
 * plans concurrently is safe, and so is recording one plan from several
 * threads into different command buffers. Destroying a plan or context
 * while another thread uses it is not. Destroy a plan or context only once
 * the GPU has finished the work recorded with it.
 */
#ifndef VKSOFTMAX_H
#define VKSOFTMAX_H

#include <stddef.h>
#include <stdint.h>
#include <vulkan/vulkan_core.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vksm_context_T* vksm_context;
typedef struct vksm_plan_T* vksm_plan;

typedef enum vksm_result {
    VKSM_SUCCESS = 0,
    VKSM_ERROR_INVALID_ARGUMENT = -1, /* a shape, option, offset or range it cannot take */
    VKSM_ERROR_UNSUPPORTED = -2,      /* the device lacks (or the host did not enable) a feature */
    VKSM_ERROR_OUT_OF_MEMORY = -3,
    VKSM_ERROR_DEVICE_LOST = -4,
    VKSM_ERROR_VULKAN = -5            /* another failed Vulkan call */
} vksm_result;

/* Storage types; arithmetic is fp32 in each. VKSM_BF16: bfloat16, the top
 * half of an fp32 (needs 16-bit storage, as VKSM_F16 does). */
typedef enum vksm_dtype { VKSM_F32 = 0, VKSM_F16 = 1, VKSM_BF16 = 2 } vksm_dtype;
typedef enum vksm_precision { VKSM_PRECISION_FAST = 0, VKSM_PRECISION_ACCURATE = 1 } vksm_precision;

typedef struct vksm_context_desc {
    VkInstance instance;
    VkPhysicalDevice physical_device;
    VkDevice device;
    uint32_t queue_family;                        /* the family the host submits the work to */
    PFN_vkGetInstanceProcAddr get_instance_proc_addr;
    /* What the host enabled on `device` (nonzero = enabled). */
    int push_descriptor;                          /* VK_KHR_push_descriptor; else descriptor_pool */
    int storage_buffer_16bit_access;              /* for VKSM_F16 and VKSM_BF16 */
    int subgroup_size_control;                    /* subgroupSizeControl and computeFullSubgroups */
    int subgroup_uniform_control_flow;            /* VK_KHR_shader_subgroup_uniform_control_flow:
                                                     recommended where offered (subgroups whole
                                                     again after divergence) */
    /* An earlier vksm_pipeline_cache_data() blob, or NULL / 0. */
    const void* pipeline_cache_data;
    size_t pipeline_cache_size;
    /* Nonzero where the host enabled VK_EXT_debug_utils on `instance`: each
     * pipeline gets a name ("vksoftmax softmax pipeline f32/sg/...") and each
     * vksm_record() one label around its work ("vksoftmax softmax f32
     * (outer 64, axis 3000, inner 1) (subgroup-row)"), for RenderDoc,
     * Nsight Graphics and the validation layer's messages. */
    int debug_utils;
    /* Where push_descriptor is 0 (a device without VK_KHR_push_descriptor, or
     * a host that did not enable it): a descriptor pool of the host's.
     * Each vksm_record() allocates one descriptor set of 3 storage-buffer
     * descriptors (6 for a problem with attention options) from it, one
     * per range for a tensor larger than one binding (README, "Tensors
     * larger than one binding") (vksm_record_batch() one per problem), which the
     * command buffer then uses: reset the pool (or destroy it) only once
     * that work is complete, and keep it free for one set per record until
     * then (an allocation the driver refuses, such as
     * VK_ERROR_OUT_OF_POOL_MEMORY, is reported as VKSM_ERROR_VULKAN).
     * vksoftmax serializes its own use of the pool, but the host must not
     * use it while a vksm_record() on this context runs. Give each context
     * its own pool. Ignored where push_descriptor is set. */
    VkDescriptorPool descriptor_pool;
    /* Nonzero where the host enabled vulkanMemoryModel and
     * vulkanMemoryModelDeviceScope (Vulkan 1.2 features): long rows then
     * take one dispatch (the single-pass path), where the plan's rule
     * chooses it; otherwise two. */
    int vulkan_memory_model;
} vksm_context_desc;

/* Softmax along `axis` of a dense row-major tensor seen as (outer, axis, inner). */
typedef struct vksm_problem {
    uint64_t outer, axis, inner;
    vksm_dtype dtype;
    int log;             /* nonzero: log-softmax */
    double temperature;  /* softmax(x / T); T > 0 and finite (0 is taken as 1) */
    vksm_precision precision;
    /* softmax(scale * x), e.g. attention's 1/sqrt(d); > 0 and finite (0 is
     * taken as 1). scale is 1 / temperature: set one of them (both set must
     * agree, else VKSM_ERROR_INVALID_ARGUMENT). */
    double scale;
    /* The attention options, all off when zero (README, "Attention"): the
     * tensor seen as (batch, heads, query_rows, axis), softmax along the
     * last axis (inner 1), logits z = scale * x + slope_h * mask. */
    uint64_t heads;      /* 0 is taken as 1 */
    uint64_t query_rows; /* rows per head; 0: every row of each head (batch 1) */
    /* Nonzero: an additive mask (mask_batch, mask_heads, mask_rows, axis) of
     * mask_dtype, each dimension dividing the tensor's (0 is taken as 1,
     * 1 and query_rows); -inf hides an element. */
    int mask;
    vksm_dtype mask_dtype;
    uint64_t mask_batch, mask_heads, mask_rows;
    /* Nonzero: column j of query row q is hidden where j > q + causal_offset. */
    int causal;
    int64_t causal_offset;
    /* ALiBi: the mask scaled by each head's slope, as ggml's soft_max_ext
     * (0: slope 1). Needs a mask. */
    double alibi_max_bias;
    int sinks; /* nonzero: one fp32 logit per head joins the normaliser */
    int lse;   /* nonzero: each row's log-sum-exp written (fp32, one per row) */
    /* Nonzero: the backward pass of this softmax (log: log-softmax), from
     * the forward output y and its gradient dy, recorded with
     * vksm_record_backward(): dx = k y (dy - sum y dy), log-softmax
     * dx = k (dy - exp(y) sum dy), k = scale (1/temperature). Takes no
     * mask, causal mask, ALiBi or lse (they act through y). With `sinks`
     * (and heads, query_rows as the forward's) the forward had sinks: each
     * row's share of the sink's gradient, -p sum y dy (log-softmax:
     * -p sum dy), p = 1 - sum y (1 - sum exp(y)), is written too, fp32 per
     * row (vksm_record_backward_sinks()); a head's gradient is the sum over
     * its rows. */
    int backward;
} vksm_problem;

typedef struct vksm_buffer {
    VkBuffer buffer;
    VkDeviceSize offset; /* a multiple of minStorageBufferOffsetAlignment */
    VkDeviceSize range;  /* at least the tensor's (or workspace's) bytes */
} vksm_buffer;

/* On failure *out is NULL and, if `message` is not NULL, up to message_size
 * bytes of the reason are written there (e.g. which features are missing). */
vksm_result vksm_context_create(const vksm_context_desc* desc, vksm_context* out, char* message, size_t message_size);
void vksm_context_destroy(vksm_context context);
/* The reason for the last failure of a call on this context (or its plans). */
const char* vksm_context_last_error(vksm_context context);

/* The pipeline cache's contents: call with data NULL for the size. */
vksm_result vksm_pipeline_cache_data(vksm_context context, void* data, size_t* size);

/* Validates the problem and creates every pipeline it needs. */
vksm_result vksm_plan_create(vksm_context context, const vksm_problem* problem, vksm_plan* out);
void vksm_plan_destroy(vksm_plan plan);
/* Bytes of the input/output tensor, and of the workspace the host provides
 * (0: none needed), with the workspace's offset alignment. */
VkDeviceSize vksm_plan_tensor_bytes(vksm_plan plan);
void vksm_plan_workspace(vksm_plan plan, VkDeviceSize* size, VkDeviceSize* alignment);
/* Dispatches recorded: 1, or 2 for rows split across workgroups in two
 * passes (0: empty tensor). */
uint32_t vksm_plan_passes(vksm_plan plan);
/* Bytes of the attention options' buffers (0 where the option is off):
 * the mask, the sinks (fp32 per head) and the log-sum-exp (fp32 per row).
 * A 16-bit mask of an odd element count needs 2 bytes past its elements
 * (read two elements to a 32-bit word; their value is never used). */
void vksm_plan_attention_bytes(vksm_plan plan, VkDeviceSize* mask, VkDeviceSize* sinks, VkDeviceSize* lse);
/* Bytes of a backward plan's sink gradient (fp32 per row; 0 without sinks). */
VkDeviceSize vksm_plan_sink_gradient_bytes(vksm_plan plan);

/* Records the plan into the host's command buffer (in the recording state,
 * outside a render pass). With a query pool, writes passes + 1 timestamps
 * at first_query .. (reset by the host). */
vksm_result vksm_record(vksm_plan plan, VkCommandBuffer command_buffer, vksm_buffer input, vksm_buffer output,
                        vksm_buffer workspace, VkQueryPool timestamps, uint32_t first_query);

/* vksm_record() with the attention options' buffers (each ignored where
 * its option is off): the mask and sinks are read as the input is, the
 * log-sum-exp written as the output is (the same barrier contract). */
vksm_result vksm_record_attention(vksm_plan plan, VkCommandBuffer command_buffer, vksm_buffer input,
                                  vksm_buffer output, vksm_buffer workspace, vksm_buffer mask, vksm_buffer sinks,
                                  vksm_buffer lse, VkQueryPool timestamps, uint32_t first_query);

/* Records a backward plan: reads y and dy (each the tensor's bytes),
 * writes dx; the barrier contract is vksm_record()'s, y and dy read as its
 * input is. */
vksm_result vksm_record_backward(vksm_plan plan, VkCommandBuffer command_buffer, vksm_buffer y, vksm_buffer dy,
                                 vksm_buffer dx, vksm_buffer workspace, VkQueryPool timestamps, uint32_t first_query);
/* vksm_record_backward() for a forward with sinks: also writes each row's
 * sink gradient (vksm_plan_sink_gradient_bytes()), as dx is written. */
vksm_result vksm_record_backward_sinks(vksm_plan plan, VkCommandBuffer command_buffer, vksm_buffer y,
                                       vksm_buffer dy, vksm_buffer dx, vksm_buffer workspace,
                                       vksm_buffer sink_gradient, VkQueryPool timestamps, uint32_t first_query);

/* One problem of a batch (mask, sinks, lse: as vksm_record_attention(); a
 * backward plan: input y, gradient dy, output dx, and for a forward with
 * sinks the sink gradient). */
typedef struct vksm_batch_item {
    vksm_plan plan;
    vksm_buffer input, output, workspace;
    vksm_buffer mask, sinks, lse;
    vksm_buffer gradient;
    vksm_buffer sink_gradient;
} vksm_batch_item;

/* Records `count` independent problems (plans of one context) with no
 * barrier between them: every problem's first pass, then, where any plan
 * is split, one barrier on all their workspaces and the second passes. N
 * small softmaxes then need one barrier after them instead of one each.
 * The problems must not alias: no problem's output or workspace may
 * overlap another's input, output or workspace (inputs may be shared);
 * overlaps within one VkBuffer are refused with
 * VKSM_ERROR_INVALID_ARGUMENT, buffers bound to the same memory cannot be
 * seen and are the host's to avoid. The barrier contract is vksm_record()'s,
 * for all the problems at once. With a query pool, writes 2 timestamps at
 * first_query (before and after the batch). */
vksm_result vksm_record_batch(const vksm_batch_item* items, uint32_t count, VkCommandBuffer command_buffer,
                              VkQueryPool timestamps, uint32_t first_query);

#ifdef __cplusplus
}
#endif

#endif /* VKSOFTMAX_H */
