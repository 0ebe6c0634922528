/* What fusing saves: fused.comp (logits and their softmax in one dispatch,
 * through vksoftmax/softmax.glsl) against the same work unfused, the way a
 * host without the include does it: fused.comp's LOGITS_ONLY variant writes
 * the logits to a buffer, a barrier, then vksm_record() applies softmax.
 * Two producers of logits: a linear layer (64 multiply-adds per logit) and
 * a scale and bias on scores the host holds (one read per logit). Both outputs are checked against each
 * other first (1e-5); then each is called back to back, with the barrier a
 * following call needs, ITERS times between two timestamps, after a warm-up
 * of about half a second: the median of REPEATS per call.
 * Usage: fused_timing [ROWS]   (default 4096). Exit 77 where the device has
 * no subgroup arithmetic, timestamps or VK_KHR_push_descriptor. */
#define _POSIX_C_SOURCE 199309L /* clock_gettime */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <vulkan/vulkan.h>

#include "example_context.h"
#include "fused_spv.h"

#define CLASSES 1000u
#define FEATURES 64u
#define ITERS 20u
#define REPEATS 15u

typedef struct {
    ExamplePipeline fused, logits;
    vksm_plan plan;
    vksm_buffer logits_buffer, unfused_out;
    VkQueryPool queries;
    uint32_t params[4]; /* rows, classes, features, log-softmax */
    uint32_t iters;
} Timing;

static void compute_to_compute(VkCommandBuffer cb) {
    VkMemoryBarrier b = {VK_STRUCTURE_TYPE_MEMORY_BARRIER, NULL, VK_ACCESS_SHADER_WRITE_BIT,
                         VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT};
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &b, 0,
                         NULL, 0, NULL);
}

/* `iters` fused calls between timestamps 0 and 1, `iters` unfused ones
 * between 1 and 2. */
static int record_both(VkCommandBuffer cb, void* user) {
    const Timing* t = user;
    vkCmdResetQueryPool(cb, t->queries, 0, 3);
    vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, t->queries, 0);
    for (uint32_t i = 0; i < t->iters; ++i) {
        example_bind(cb, &t->fused, t->params, sizeof t->params);
        vkCmdDispatch(cb, t->params[0], 1, 1);
        compute_to_compute(cb);
    }
    vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, t->queries, 1);
    for (uint32_t i = 0; i < t->iters; ++i) {
        example_bind(cb, &t->logits, t->params, sizeof t->params);
        vkCmdDispatch(cb, t->params[0], 1, 1);
        compute_to_compute(cb);
        const vksm_buffer none = {VK_NULL_HANDLE, 0, 0};
        if (vksm_record(t->plan, cb, t->logits_buffer, t->unfused_out, none, VK_NULL_HANDLE, 0) != VKSM_SUCCESS) return 0;
        compute_to_compute(cb);
    }
    vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, t->queries, 2);
    example_barrier_to_host(cb);
    return 1;
}

static int by_value(const void* a, const void* b) {
    const double x = *(const double*)a, y = *(const double*)b;
    return (x > y) - (x < y);
}

static double seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct {
    int recorded;
    double fused_us, unfused_us, worst;
} Measured;

/* Once each, compared; then a warm-up of half a second; then REPEATS timed
 * submissions of ITERS calls of each. */
static Measured measure(const ExampleGpu* g, Timing* t, const float* fused, const float* unfused, size_t count,
                        double ns_per_tick) {
    Measured m = {0, 0, 0, 0};
    t->iters = 1;
    if (!example_submit(g, record_both, t)) return m;
    m.recorded = 1;
    for (size_t i = 0; i < count; ++i) {
        const double rel = fabs((double)fused[i] - unfused[i]) / fmax(fabs((double)unfused[i]), 1e-30);
        if (!(rel <= m.worst)) m.worst = rel;
    }
    t->iters = ITERS;
    for (const double until = seconds() + 0.5; seconds() < until;) example_submit(g, record_both, t);
    double fused_us[REPEATS], unfused_us[REPEATS];
    for (uint32_t r = 0; r < REPEATS; ++r) {
        example_submit(g, record_both, t);
        uint64_t ticks[3];
        EXAMPLE_CHECK(vkGetQueryPoolResults(g->device, t->queries, 0, 3, sizeof ticks, ticks, sizeof ticks[0],
                                            VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
        fused_us[r] = (double)(ticks[1] - ticks[0]) * ns_per_tick / 1e3 / ITERS;
        unfused_us[r] = (double)(ticks[2] - ticks[1]) * ns_per_tick / 1e3 / ITERS;
    }
    qsort(fused_us, REPEATS, sizeof(double), by_value);
    qsort(unfused_us, REPEATS, sizeof(double), by_value);
    m.fused_us = fused_us[REPEATS / 2];
    m.unfused_us = unfused_us[REPEATS / 2];
    return m;
}

static ExamplePipeline variant(const ExampleGpu* g, const ExampleBuffer* bufs, const ExampleBuffer* out, VkBool32 logits_only,
                               VkBool32 linear_layer) {
    VkDescriptorBufferInfo infos[3] = {{bufs[0].buffer, 0, VK_WHOLE_SIZE}, {bufs[1].buffer, 0, VK_WHOLE_SIZE},
                                       {out->buffer, 0, VK_WHOLE_SIZE}};
    VkBool32 values[3] = {VK_FALSE, logits_only, linear_layer};
    VkSpecializationMapEntry entries[3] = {
        {0, 0, sizeof(VkBool32)}, {1, sizeof(VkBool32), sizeof(VkBool32)}, {2, 2 * sizeof(VkBool32), sizeof(VkBool32)}};
    VkSpecializationInfo spec = {3, entries, sizeof values, values};
    return example_pipeline(g, fused_spv, sizeof fused_spv, 3, infos, 16, &spec);
}

int main(int argc, char** argv) {
    const uint32_t rows = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 4096u;
    if (rows == 0) {
        fprintf(stderr, "usage: fused_timing [ROWS]\n");
        return 2;
    }
    ExampleGpu g;
    example_pick_device(&g, "fused_timing");
    VkPhysicalDeviceSubgroupProperties sg = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceProperties2 props = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &sg};
    vkGetPhysicalDeviceProperties2(g.physical, &props);
    if (!(sg.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) || props.properties.limits.timestampPeriod <= 0) {
        printf("fused_timing: %s lacks subgroup arithmetic or timestamps (skipped)\n", props.properties.deviceName);
        return 77;
    }
    const char* ext = VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME;
    if (!example_device_has_extension(&g, ext)) {
        printf("fused_timing: %s lacks VK_KHR_push_descriptor (skipped)\n", props.properties.deviceName);
        return 77;
    }
    example_create_device(&g, &ext, 1, NULL);
    const vksm_context_desc desc = example_context_desc(&g);
    vksm_context ctx;
    char why[512];
    if (vksm_context_create(&desc, &ctx, why, sizeof why) != VKSM_SUCCESS) {
        fprintf(stderr, "fused_timing: vksm_context_create: %s\n", why);
        return 1;
    }
    const vksm_problem problem = {rows, CLASSES, 1, VKSM_F32, 0, 1.0, VKSM_PRECISION_FAST};
    Timing t;
    if (vksm_plan_create(ctx, &problem, &t.plan) != VKSM_SUCCESS) {
        fprintf(stderr, "fused_timing: vksm_plan_create: %s\n", vksm_context_last_error(ctx));
        return 1;
    }
    const VkDeviceSize out_bytes = (VkDeviceSize)rows * CLASSES * sizeof(float);
    ExampleBuffer bufs[5] = {example_buffer(&g, CLASSES * FEATURES * sizeof(float)),
                             example_buffer(&g, out_bytes), example_buffer(&g, out_bytes),
                             example_buffer(&g, out_bytes), example_buffer(&g, out_bytes)};
    float* w = bufs[0].data;
    float* x = bufs[1].data;
    for (uint32_t i = 0; i < CLASSES * FEATURES; ++i) w[i] = (float)((int)(i * 37u % 17u) - 8) / 64.f;
    for (uint32_t i = 0; i < rows * CLASSES; ++i) x[i] = (float)((int)(i * 5u % 11u) - 5) / 8.f; /* rows x features, or scores */
    t.logits_buffer = (vksm_buffer){bufs[3].buffer, 0, out_bytes};
    t.unfused_out = (vksm_buffer){bufs[4].buffer, 0, out_bytes};
    t.params[0] = rows;
    t.params[1] = CLASSES;
    t.params[2] = FEATURES;
    t.params[3] = 0;
    VkQueryPoolCreateInfo qi = {VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qi.queryCount = 3;
    EXAMPLE_CHECK(vkCreateQueryPool(g.device, &qi, NULL, &t.queries));
    int ok = 1;
    for (int linear_layer = 1; linear_layer >= 0; --linear_layer) {
        t.fused = variant(&g, bufs, &bufs[2], VK_FALSE, (VkBool32)linear_layer);
        t.logits = variant(&g, bufs, &bufs[3], VK_TRUE, (VkBool32)linear_layer);
        const Measured m = measure(&g, &t, bufs[2].data, bufs[4].data, (size_t)rows * CLASSES,
                                   props.properties.limits.timestampPeriod);
        if (!m.recorded) {
            fprintf(stderr, "fused_timing: vksm_record: %s\n", vksm_context_last_error(ctx));
            return 1;
        }
        printf("fused_timing: %s: %s, %u rows x %u classes, us per call, median of %u x %u: fused %.2f; "
               "logits then vksm_record (%u pass(es)) %.2f; outputs agree to %.1e %s\n",
               props.properties.deviceName,
               linear_layer ? "a 64-feature linear layer" : "scale and bias on stored scores", rows, CLASSES,
               REPEATS, ITERS, m.fused_us, vksm_plan_passes(t.plan), m.unfused_us, m.worst,
               m.worst <= 1e-5 ? "(ok)" : "(FAILED)");
        ok = ok && m.worst <= 1e-5;
        example_free_pipeline(&g, &t.fused);
        example_free_pipeline(&g, &t.logits);
    }

    vkDestroyQueryPool(g.device, t.queries, NULL);
    vksm_plan_destroy(t.plan);
    vksm_context_destroy(ctx);
    for (int i = 0; i < 5; ++i) example_free_buffer(&g, &bufs[i]);
    example_close(&g);
    return ok ? 0 : 1;
}
