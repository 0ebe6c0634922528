/* A host that owns its Vulkan objects and records vksoftmax into its own
 * command buffer: its instance and device (made here, without vksoftmax),
 * its compute shader filling the input, softmax at a non-zero offset, the
 * result read back and checked against a float64 softmax on the CPU.
 * Exit 0 when every row matches to 1e-5. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vulkan/vulkan.h>

#include "fill_spv.h" /* fill.comp, compiled by glslangValidator --vn fill_spv */
#include "vksoftmax/vksoftmax.h"

#define ROWS 64u
#define COLS 3000u
#define CHECK(call)                                                              \
    do {                                                                         \
        VkResult r_ = (call);                                                    \
        if (r_ != VK_SUCCESS) {                                                  \
            fprintf(stderr, "embed: %s failed: %d (line %d)\n", #call, r_, __LINE__); \
            exit(1);                                                             \
        }                                                                        \
    } while (0)

static uint32_t host_memory_type(VkPhysicalDevice pd, uint32_t bits) {
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(pd, &mp);
    const VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    for (uint32_t i = 0; i < mp.memoryTypeCount; ++i)
        if ((bits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & want) == want) return i;
    fprintf(stderr, "embed: no host-visible coherent memory\n");
    exit(1);
}

static VkBuffer make_buffer(VkPhysicalDevice pd, VkDevice dev, VkDeviceSize size, VkDeviceMemory* mem, void** map) {
    VkBufferCreateInfo bi = {VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bi.size = size;
    bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
    VkBuffer b;
    CHECK(vkCreateBuffer(dev, &bi, NULL, &b));
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(dev, b, &req);
    VkMemoryAllocateInfo ai = {VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    ai.allocationSize = req.size;
    ai.memoryTypeIndex = host_memory_type(pd, req.memoryTypeBits);
    CHECK(vkAllocateMemory(dev, &ai, NULL, mem));
    CHECK(vkBindBufferMemory(dev, b, *mem, 0));
    CHECK(vkMapMemory(dev, *mem, 0, VK_WHOLE_SIZE, 0, map));
    return b;
}

int main(void) {
    /* The host's instance and device. */
    VkApplicationInfo app = {VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "embed";
    app.apiVersion = VK_API_VERSION_1_1;
    VkInstanceCreateInfo ici = {VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    ici.pApplicationInfo = &app;
    VkInstance instance;
    CHECK(vkCreateInstance(&ici, NULL, &instance));
    uint32_t n = 1;
    VkPhysicalDevice pd;
    VkResult er = vkEnumeratePhysicalDevices(instance, &n, &pd);
    if ((er != VK_SUCCESS && er != VK_INCOMPLETE) || n == 0) {
        fprintf(stderr, "embed: no Vulkan device\n");
        return 1;
    }
    uint32_t nq = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, NULL);
    VkQueueFamilyProperties fams[16];
    nq = nq > 16 ? 16 : nq;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, fams);
    uint32_t family = 0;
    while (family < nq && !(fams[family].queueFlags & VK_QUEUE_COMPUTE_BIT)) ++family;
    float prio = 1.f;
    VkDeviceQueueCreateInfo qci = {VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    qci.queueFamilyIndex = family;
    qci.queueCount = 1;
    qci.pQueuePriorities = &prio;
    /* What vksoftmax needs, and what it uses where the device offers it:
     * subgroup uniform control flow (subgroups whole again after a branch). */
    const char* exts[2] = {VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME, VK_KHR_SHADER_SUBGROUP_UNIFORM_CONTROL_FLOW_EXTENSION_NAME};
    VkPhysicalDeviceShaderSubgroupUniformControlFlowFeaturesKHR ucf = {
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SUBGROUP_UNIFORM_CONTROL_FLOW_FEATURES_KHR};
    VkPhysicalDeviceFeatures2 feats = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &ucf};
    int ucf_offered = 0;
    uint32_t next = 0;
    CHECK(vkEnumerateDeviceExtensionProperties(pd, NULL, &next, NULL));
    VkExtensionProperties* offered = calloc(next ? next : 1, sizeof *offered);
    if (!offered) return 1;
    CHECK(vkEnumerateDeviceExtensionProperties(pd, NULL, &next, offered));
    for (uint32_t i = 0; i < next; ++i)
        if (strcmp(offered[i].extensionName, VK_KHR_SHADER_SUBGROUP_UNIFORM_CONTROL_FLOW_EXTENSION_NAME) == 0)
            ucf_offered = 1;
    free(offered);
    if (ucf_offered) vkGetPhysicalDeviceFeatures2(pd, &feats);
    ucf_offered = ucf_offered && ucf.shaderSubgroupUniformControlFlow;
    VkDeviceCreateInfo dci = {VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    dci.pNext = ucf_offered ? &feats : NULL;
    dci.queueCreateInfoCount = 1;
    dci.pQueueCreateInfos = &qci;
    dci.enabledExtensionCount = ucf_offered ? 2 : 1;
    dci.ppEnabledExtensionNames = exts;
    VkDevice dev;
    CHECK(vkCreateDevice(pd, &dci, NULL, &dev));
    VkQueue queue;
    vkGetDeviceQueue(dev, family, 0, &queue);

    /* vksoftmax on the host's device. */
    vksm_context_desc desc = {0};
    desc.instance = instance;
    desc.physical_device = pd;
    desc.device = dev;
    desc.queue_family = family;
    desc.get_instance_proc_addr = vkGetInstanceProcAddr;
    desc.push_descriptor = 1;
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
    vkGetPhysicalDeviceProperties(pd, &props);
    const VkDeviceSize offset = 4 * props.limits.minStorageBufferOffsetAlignment; /* not at the start */
    const VkDeviceSize bytes = vksm_plan_tensor_bytes(plan);
    VkDeviceSize ws_size, ws_align;
    vksm_plan_workspace(plan, &ws_size, &ws_align);

    /* One buffer holds input and output, after some bytes the host uses for other things. */
    VkDeviceMemory mem, ws_mem;
    void* map;
    void* ws_map;
    const VkDeviceSize out_offset = offset + (bytes + 255) / 256 * 256;
    VkBuffer buf = make_buffer(pd, dev, out_offset + bytes, &mem, &map);
    VkBuffer ws = make_buffer(pd, dev, ws_size ? ws_size : 16, &ws_mem, &ws_map);

    /* The host's fill pipeline. */
    VkShaderModuleCreateInfo smi = {VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    smi.codeSize = sizeof(fill_spv);
    smi.pCode = fill_spv;
    VkShaderModule sm;
    CHECK(vkCreateShaderModule(dev, &smi, NULL, &sm));
    VkDescriptorSetLayoutBinding bind = {0, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL};
    VkDescriptorSetLayoutCreateInfo dli = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    dli.bindingCount = 1;
    dli.pBindings = &bind;
    VkDescriptorSetLayout dsl;
    CHECK(vkCreateDescriptorSetLayout(dev, &dli, NULL, &dsl));
    VkPushConstantRange pcr = {VK_SHADER_STAGE_COMPUTE_BIT, 0, 4};
    VkPipelineLayoutCreateInfo pli = {VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    pli.setLayoutCount = 1;
    pli.pSetLayouts = &dsl;
    pli.pushConstantRangeCount = 1;
    pli.pPushConstantRanges = &pcr;
    VkPipelineLayout pl;
    CHECK(vkCreatePipelineLayout(dev, &pli, NULL, &pl));
    VkComputePipelineCreateInfo cpi = {VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    cpi.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    cpi.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    cpi.stage.module = sm;
    cpi.stage.pName = "main";
    cpi.layout = pl;
    VkPipeline fill;
    CHECK(vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &cpi, NULL, &fill));
    VkDescriptorPoolSize ps = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1};
    VkDescriptorPoolCreateInfo dpi = {VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    dpi.maxSets = 1;
    dpi.poolSizeCount = 1;
    dpi.pPoolSizes = &ps;
    VkDescriptorPool dp;
    CHECK(vkCreateDescriptorPool(dev, &dpi, NULL, &dp));
    VkDescriptorSetAllocateInfo dsai = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    dsai.descriptorPool = dp;
    dsai.descriptorSetCount = 1;
    dsai.pSetLayouts = &dsl;
    VkDescriptorSet set;
    CHECK(vkAllocateDescriptorSets(dev, &dsai, &set));
    VkDescriptorBufferInfo dbi = {buf, offset, bytes};
    VkWriteDescriptorSet w = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    w.dstSet = set;
    w.descriptorCount = 1;
    w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    w.pBufferInfo = &dbi;
    vkUpdateDescriptorSets(dev, 1, &w, 0, NULL);

    /* One command buffer: fill, barrier, softmax, barrier to the host. */
    VkCommandPoolCreateInfo cpci = {VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    cpci.queueFamilyIndex = family;
    VkCommandPool pool;
    CHECK(vkCreateCommandPool(dev, &cpci, NULL, &pool));
    VkCommandBufferAllocateInfo cbai = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    cbai.commandPool = pool;
    cbai.commandBufferCount = 1;
    VkCommandBuffer cb;
    CHECK(vkAllocateCommandBuffers(dev, &cbai, &cb));
    VkCommandBufferBeginInfo cbbi = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    CHECK(vkBeginCommandBuffer(cb, &cbbi));
    const uint32_t count = ROWS * COLS;
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, fill);
    vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pl, 0, 1, &set, 0, NULL);
    vkCmdPushConstants(cb, pl, VK_SHADER_STAGE_COMPUTE_BIT, 0, 4, &count);
    vkCmdDispatch(cb, (count + 63) / 64, 1, 1);
    /* The contract before vksm_record: input writes visible to compute-shader reads. */
    VkMemoryBarrier before = {VK_STRUCTURE_TYPE_MEMORY_BARRIER, NULL, VK_ACCESS_SHADER_WRITE_BIT,
                              VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT};
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &before,
                         0, NULL, 0, NULL);
    vksm_buffer in = {buf, offset, bytes}, out = {buf, out_offset, bytes}, work = {ws, 0, ws_size ? ws_size : 16};
    if (vksm_record(plan, cb, in, out, work, VK_NULL_HANDLE, 0) != VKSM_SUCCESS) {
        fprintf(stderr, "embed: vksm_record: %s\n", vksm_context_last_error(ctx));
        return 1;
    }
    /* ... and after: the output's shader writes visible to the host. */
    VkMemoryBarrier after = {VK_STRUCTURE_TYPE_MEMORY_BARRIER, NULL, VK_ACCESS_SHADER_WRITE_BIT, VK_ACCESS_HOST_READ_BIT};
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &after, 0, NULL, 0,
                         NULL);
    CHECK(vkEndCommandBuffer(cb));
    VkFenceCreateInfo fci = {VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkFence fence;
    CHECK(vkCreateFence(dev, &fci, NULL, &fence));
    VkSubmitInfo si = {VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cb;
    CHECK(vkQueueSubmit(queue, 1, &si, fence));
    CHECK(vkWaitForFences(dev, 1, &fence, VK_TRUE, UINT64_MAX));

    /* Check every row against float64 on the CPU. */
    const float* x = (const float*)((const char*)map + offset);
    const float* y = (const float*)((const char*)map + out_offset);
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

    vkDestroyFence(dev, fence, NULL);
    vkDestroyCommandPool(dev, pool, NULL);
    vkDestroyDescriptorPool(dev, dp, NULL);
    vkDestroyPipeline(dev, fill, NULL);
    vkDestroyPipelineLayout(dev, pl, NULL);
    vkDestroyDescriptorSetLayout(dev, dsl, NULL);
    vkDestroyShaderModule(dev, sm, NULL);
    vksm_plan_destroy(plan);
    vksm_context_destroy(ctx);
    vkDestroyBuffer(dev, buf, NULL);
    vkDestroyBuffer(dev, ws, NULL);
    vkFreeMemory(dev, mem, NULL);
    vkFreeMemory(dev, ws_mem, NULL);
    vkDestroyDevice(dev, NULL);
    vkDestroyInstance(instance, NULL);
    return worst <= 1e-5 ? 0 : 1;
}
