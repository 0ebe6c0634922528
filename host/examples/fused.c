/* A host that fuses softmax into its own shader: fused.comp computes the
 * logits of a small linear layer and applies softmax to them in the same
 * dispatch through the GLSL include vksoftmax/softmax.glsl, with no
 * vksoftmax library call and no buffer of logits. Run once with each of
 * the include's row functions (a workgroup or a subgroup per row, the row
 * kept in registers or read twice; softmax or log-softmax); each output
 * checked against a float64 softmax of the same logits on the CPU (masked
 * classes exactly 0, or -inf). Exit 0 when all match to 1e-5, 77 when the
 * device has no subgroup arithmetic in compute shaders. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <vulkan/vulkan.h>

#include "example_vulkan.h"
#include "fused_spv.h" /* fused.comp, compiled by glslangValidator --vn fused_spv */

#define ROWS 96u
#define CLASSES 1000u
#define FEATURES 64u

typedef struct {
    const ExamplePipeline* pipeline;
    uint32_t params[4]; /* rows, classes, features, log-softmax */
    uint32_t groups;
} FusedRun;

static int record_fused(VkCommandBuffer cb, void* user) {
    const FusedRun* run = user;
    example_bind(cb, run->pipeline, run->params, sizeof run->params);
    vkCmdDispatch(cb, run->groups, 1, 1);
    example_barrier_to_host(cb);
    return 1;
}

/* Runs fused.comp once over the three buffers: a workgroup or a subgroup
 * per row (subgroup rows grid-stride over fewer workgroups than rows), the
 * row kept in registers or read twice, softmax or log-softmax. */
static void run_fused(const ExampleGpu* g, const ExampleBuffer* bufs, int subgroup_rows, int cached, int log_softmax) {
    VkDescriptorBufferInfo infos[3];
    for (uint32_t i = 0; i < 3; ++i) {
        VkDescriptorBufferInfo info = {bufs[i].buffer, 0, VK_WHOLE_SIZE};
        infos[i] = info;
    }
    /* SUBGROUP_ROWS (0) and ROW_CACHED (3); the others keep their defaults. */
    VkBool32 values[2] = {subgroup_rows ? VK_TRUE : VK_FALSE, cached ? VK_TRUE : VK_FALSE};
    VkSpecializationMapEntry entries[2] = {{0, 0, sizeof(VkBool32)}, {3, sizeof(VkBool32), sizeof(VkBool32)}};
    VkSpecializationInfo spec = {2, entries, sizeof values, values};
    ExamplePipeline pipeline = example_pipeline(g, fused_spv, sizeof fused_spv, 3, infos, 16, &spec);
    FusedRun run = {&pipeline, {ROWS, CLASSES, FEATURES, (uint32_t)log_softmax}, subgroup_rows ? 8 : ROWS};
    example_submit(g, record_fused, &run);
    example_free_pipeline(g, &pipeline);
}

/* The worst relative error of the outputs against a float64 (log-)softmax
 * of the same logits; a masked class must be exactly 0 (-inf), and a NaN
 * anywhere makes the result NaN. */
static double worst_error(const float* w, const float* x, const float* y, int log_softmax) {
    double worst = 0;
    double z[CLASSES];
    for (uint32_t r = 0; r < ROWS; ++r) {
        double m = -INFINITY, d = 0;
        for (uint32_t j = 0; j < CLASSES; ++j) {
            z[j] = -INFINITY;
            if (j % 7 == r % 7) continue;
            z[j] = 0;
            for (uint32_t k = 0; k < FEATURES; ++k) z[j] += (double)w[j * FEATURES + k] * x[r * FEATURES + k];
            m = fmax(m, z[j]);
        }
        for (uint32_t j = 0; j < CLASSES; ++j) d += exp(z[j] - m);
        for (uint32_t j = 0; j < CLASSES; ++j) {
            const double got = y[r * CLASSES + j];
            if (j % 7 == r % 7) {
                if (got != (log_softmax ? -INFINITY : 0.0)) return NAN;
                continue;
            }
            const double want = log_softmax ? z[j] - m - log(d) : exp(z[j] - m) / d;
            const double rel = fabs(got - want) / fmax(fabs(want), log_softmax ? 1.0 : 0.0);
            if (!(rel <= worst)) worst = rel; /* NaN propagates */
        }
    }
    return worst;
}

int main(void) {
    ExampleGpu g;
    example_pick_device(&g, "fused");
    VkPhysicalDeviceSubgroupProperties sg = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceProperties2 props = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &sg};
    vkGetPhysicalDeviceProperties2(g.physical, &props);
    if (!(sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) || !(sg.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT)) {
        printf("fused: %s has no subgroup arithmetic in compute shaders (skipped)\n", props.properties.deviceName);
        return 77;
    }
    example_create_device(&g, NULL, 0, NULL);
    ExampleBuffer bufs[3] = {example_buffer(&g, CLASSES * FEATURES * sizeof(float)),
                             example_buffer(&g, ROWS * FEATURES * sizeof(float)),
                             example_buffer(&g, ROWS * CLASSES * sizeof(float))};
    float* w = bufs[0].data;
    float* x = bufs[1].data;
    float* y = bufs[2].data;
    /* Multiples of 1/64 and 1/8, small: every product and partial sum of a
     * logit is exact in fp32, so GPU and CPU see the same logits and the
     * check measures the softmax alone. Logits span about -13 to 13. */
    for (uint32_t i = 0; i < CLASSES * FEATURES; ++i) w[i] = (float)((int)(i * 37u % 17u) - 8) / 64.f;
    for (uint32_t i = 0; i < ROWS * FEATURES; ++i) x[i] = (float)((int)(i * 5u % 11u) - 5) / 8.f;
    int ok = 1;
    /* Each row function of the include: workgroup and subgroup rows, kept
     * in registers or read twice, softmax and log-softmax between them. */
    for (int variant = 0; variant < 4; ++variant) {
        const int subgroup_rows = variant & 1, cached = variant < 2, log_softmax = variant == 1 || variant == 2;
        for (uint32_t i = 0; i < ROWS * CLASSES; ++i) y[i] = NAN; /* every output must be written */
        run_fused(&g, bufs, subgroup_rows, cached, log_softmax);
        const double worst = worst_error(w, x, y, log_softmax);
        printf("fused: %s: %u rows x %u classes (a %u-feature linear layer, every 7th class masked) and %s in one "
               "dispatch, a %s per row%s: max rel error %.2e vs CPU float64 %s\n",
               props.properties.deviceName, ROWS, CLASSES, FEATURES, log_softmax ? "log-softmax" : "softmax",
               subgroup_rows ? "subgroup" : "workgroup", cached ? " held in registers" : " read twice", worst,
               worst <= 1e-5 ? "(ok)" : "(FAILED)");
        ok = ok && worst <= 1e-5;
    }
    for (int i = 0; i < 3; ++i) example_free_buffer(&g, &bufs[i]);
    example_close(&g);
    return ok ? 0 : 1;
}
