/* A host that owns its Vulkan objects and records vksoftmax into its own
 * command buffer: its instance and device (made here, without vksoftmax),
 * its compute shader filling the input, softmax at a non-zero offset, the
 * result read back and checked against a float64 softmax on the CPU.
 * Exit 0 when every row matches to 1e-5. */
#include <math.h>
#include <stdio.h>
#include <vulkan/vulkan.h>

#include "example_context.h"
#include "fill_spv.h" /* fill.comp, compiled by glslangValidator --vn fill_spv */
#include "vksoftmax/vksoftmax.h"

#define ROWS 64u
#define COLS 3000u
typedef struct {
    const ExamplePipeline* fill;
    vksm_plan plan;
    vksm_buffer in, out, work;
    uint32_t count;
} Recording;

/* The host's fill, the barrier vksm_record's contract asks for before it,
 * softmax, and the barrier to the host after it. */
static int record_fill_and_softmax(VkCommandBuffer cb, void* user) {
    const Recording* r = user;
    example_bind(cb, r->fill, &r->count, sizeof r->count);
    vkCmdDispatch(cb, (r->count + 63) / 64, 1, 1);
    /* The contract before vksm_record: input writes visible to compute-shader reads. */
    VkMemoryBarrier before = {VK_STRUCTURE_TYPE_MEMORY_BARRIER, NULL, VK_ACCESS_SHADER_WRITE_BIT,
                              VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT};
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &before,
                         0, NULL, 0, NULL);
    if (vksm_record(r->plan, cb, r->in, r->out, r->work, VK_NULL_HANDLE, 0) != VKSM_SUCCESS) return 0;
    /* ... and after: the output's shader writes visible to the host. */
    example_barrier_to_host(cb);
    return 1;
}

int main(void) {
    /* The host's instance and device, with what vksoftmax needs, and what it
     * uses where the device offers it: subgroup uniform control flow
     * (subgroups whole again after a branch). */
    ExampleGpu g;
    example_pick_device(&g, "embed");
    const char* exts[2] = {VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME, VK_KHR_SHADER_SUBGROUP_UNIFORM_CONTROL_FLOW_EXTENSION_NAME};
    VkPhysicalDeviceShaderSubgroupUniformControlFlowFeaturesKHR ucf = {
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SUBGROUP_UNIFORM_CONTROL_FLOW_FEATURES_KHR};
    VkPhysicalDeviceFeatures2 feats = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &ucf};
    int ucf_offered = example_device_has_extension(&g, VK_KHR_SHADER_SUBGROUP_UNIFORM_CONTROL_FLOW_EXTENSION_NAME);
    if (ucf_offered) vkGetPhysicalDeviceFeatures2(g.physical, &feats);
    ucf_offered = ucf_offered && ucf.shaderSubgroupUniformControlFlow;
    example_create_device(&g, exts, ucf_offered ? 2 : 1, ucf_offered ? &feats : NULL);

    /* vksoftmax on the host's device. */
    vksm_context_desc desc = example_context_desc(&g);
    desc.subgroup_uniform_control_flow = ucf_offered;
    vksm_context ctx;
    char why[512];
    if (vksm_context_create(&desc, &ctx, why, sizeof why) != VKSM_SUCCESS) {
        fprintf(stderr, "embed: vksm_context_create: %s\n", why);
        return 1;
    }
    vksm_problem problem = {ROWS, COLS, 1, VKSM_F32, 0, 1.0, VKSM_PRECISION_FAST};
    vksm_plan plan;
    if (vksm_plan_create(ctx, &problem, &plan) != VKSM_SUCCESS) {
        fprintf(stderr, "embed: vksm_plan_create: %s\n", vksm_context_last_error(ctx));
        return 1;
    }
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(g.physical, &props);
    const VkDeviceSize offset = 4 * props.limits.minStorageBufferOffsetAlignment; /* not at the start */
    const VkDeviceSize bytes = vksm_plan_tensor_bytes(plan);
    VkDeviceSize ws_size, ws_align;
    vksm_plan_workspace(plan, &ws_size, &ws_align);

    /* One buffer holds input and output, after some bytes the host uses for other things. */
    const VkDeviceSize out_offset = offset + (bytes + 255) / 256 * 256;
    ExampleBuffer buf = example_buffer(&g, out_offset + bytes);
    ExampleBuffer ws = example_buffer(&g, ws_size ? ws_size : 16);

    /* The host's fill pipeline, and one command buffer: fill, softmax. */
    VkDescriptorBufferInfo dbi = {buf.buffer, offset, bytes};
    ExamplePipeline fill = example_pipeline(&g, fill_spv, sizeof fill_spv, 1, &dbi, 4, NULL);
    Recording rec = {&fill, plan, {buf.buffer, offset, bytes}, {buf.buffer, out_offset, bytes},
                     {ws.buffer, 0, ws_size ? ws_size : 16}, ROWS * COLS};
    if (!example_submit(&g, record_fill_and_softmax, &rec)) {
        fprintf(stderr, "embed: vksm_record: %s\n", vksm_context_last_error(ctx));
        return 1;
    }

    /* Check every row against float64 on the CPU. */
    const float* x = (const float*)((const char*)buf.data + offset);
    const float* y = (const float*)((const char*)buf.data + out_offset);
    double worst = 0;
    for (uint32_t r = 0; r < ROWS; ++r) {
        double m = -INFINITY, d = 0;
        for (uint32_t c = 0; c < COLS; ++c) m = fmax(m, x[r * COLS + c]);
        for (uint32_t c = 0; c < COLS; ++c) d += exp((double)x[r * COLS + c] - m);
        for (uint32_t c = 0; c < COLS; ++c) {
            const double ref = exp((double)x[r * COLS + c] - m) / d;
            const double rel = fabs(y[r * COLS + c] - ref) / ref;
            if (!(rel <= worst)) worst = rel; /* NaN propagates */
        }
    }
    printf("embed: %s: softmax of %ux%u recorded at buffer offset %llu in %u pass(es), max rel error %.2e vs CPU %s\n",
           props.deviceName, ROWS, COLS, (unsigned long long)offset, vksm_plan_passes(plan), worst,
           worst <= 1e-5 ? "(ok)" : "(FAILED)");

    example_free_pipeline(&g, &fill);
    vksm_plan_destroy(plan);
    vksm_context_destroy(ctx);
    example_free_buffer(&g, &buf);
    example_free_buffer(&g, &ws);
    example_close(&g);
    return worst <= 1e-5 ? 0 : 1;
}
