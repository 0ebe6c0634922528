#include "example_vulkan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void example_check(VkResult result, const char* call, int line) {
    if (result == VK_SUCCESS) return;
    fprintf(stderr, "example: %s failed: %d (line %d)\n", call, result, line);
    exit(1);
}

void example_pick_device(ExampleGpu* g, const char* name) {
    VkApplicationInfo app = {VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = name;
    app.apiVersion = VK_API_VERSION_1_1;
    VkInstanceCreateInfo ici = {VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    ici.pApplicationInfo = &app;
    EXAMPLE_CHECK(vkCreateInstance(&ici, NULL, &g->instance));
    uint32_t n = 1;
    VkResult er = vkEnumeratePhysicalDevices(g->instance, &n, &g->physical);
    if ((er != VK_SUCCESS && er != VK_INCOMPLETE) || n == 0) {
        fprintf(stderr, "%s: no Vulkan device\n", name);
        exit(1);
    }
    uint32_t nq = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(g->physical, &nq, NULL);
    VkQueueFamilyProperties fams[16];
    nq = nq > 16 ? 16 : nq;
    vkGetPhysicalDeviceQueueFamilyProperties(g->physical, &nq, fams);
    g->family = 0;
    while (g->family < nq && !(fams[g->family].queueFlags & VK_QUEUE_COMPUTE_BIT)) ++g->family;
    g->device = VK_NULL_HANDLE;
    g->queue = VK_NULL_HANDLE;
}

int example_device_has_extension(const ExampleGpu* g, const char* extension) {
    uint32_t count = 0;
    EXAMPLE_CHECK(vkEnumerateDeviceExtensionProperties(g->physical, NULL, &count, NULL));
    VkExtensionProperties* offered = calloc(count ? count : 1, sizeof *offered);
    if (!offered) exit(1);
    EXAMPLE_CHECK(vkEnumerateDeviceExtensionProperties(g->physical, NULL, &count, offered));
    int found = 0;
    for (uint32_t i = 0; i < count; ++i) found = found || strcmp(offered[i].extensionName, extension) == 0;
    free(offered);
    return found;
}

void example_create_device(ExampleGpu* g, const char* const* extensions, uint32_t extension_count, const void* features) {
    float prio = 1.f;
    VkDeviceQueueCreateInfo qci = {VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    qci.queueFamilyIndex = g->family;
    qci.queueCount = 1;
    qci.pQueuePriorities = &prio;
    VkDeviceCreateInfo dci = {VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    dci.pNext = features;
    dci.queueCreateInfoCount = 1;
    dci.pQueueCreateInfos = &qci;
    dci.enabledExtensionCount = extension_count;
    dci.ppEnabledExtensionNames = extensions;
    EXAMPLE_CHECK(vkCreateDevice(g->physical, &dci, NULL, &g->device));
    vkGetDeviceQueue(g->device, g->family, 0, &g->queue);
}

void example_close(ExampleGpu* g) {
    vkDestroyDevice(g->device, NULL);
    vkDestroyInstance(g->instance, NULL);
}

ExampleBuffer example_buffer(const ExampleGpu* g, VkDeviceSize bytes) {
    ExampleBuffer b;
    VkBufferCreateInfo bi = {VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bi.size = bytes;
    bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
    EXAMPLE_CHECK(vkCreateBuffer(g->device, &bi, NULL, &b.buffer));
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(g->device, b.buffer, &req);
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(g->physical, &mp);
    const VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    VkMemoryAllocateInfo ai = {VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    ai.allocationSize = req.size;
    ai.memoryTypeIndex = UINT32_MAX;
    /* Device-local first where the device maps such memory (resizable BAR):
     * shaders then read it at the device's speed. */
    for (int pass = 0; pass < 2; ++pass)
        for (uint32_t i = 0; i < mp.memoryTypeCount && ai.memoryTypeIndex == UINT32_MAX; ++i) {
            const VkMemoryPropertyFlags flags = want | (pass == 0 ? VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT : 0);
            if ((req.memoryTypeBits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & flags) == flags)
                ai.memoryTypeIndex = i;
        }
    if (ai.memoryTypeIndex == UINT32_MAX) {
        fprintf(stderr, "example: no host-visible coherent memory\n");
        exit(1);
    }
    EXAMPLE_CHECK(vkAllocateMemory(g->device, &ai, NULL, &b.memory));
    EXAMPLE_CHECK(vkBindBufferMemory(g->device, b.buffer, b.memory, 0));
    EXAMPLE_CHECK(vkMapMemory(g->device, b.memory, 0, VK_WHOLE_SIZE, 0, &b.data));
    return b;
}

void example_free_buffer(const ExampleGpu* g, ExampleBuffer* b) {
    vkDestroyBuffer(g->device, b->buffer, NULL);
    vkFreeMemory(g->device, b->memory, NULL);
}

/* The set layout, pool and set of `count` storage buffers, written. */
static void example_descriptors(const ExampleGpu* g, ExamplePipeline* p, uint32_t count,
                                const VkDescriptorBufferInfo* buffers) {
    VkDescriptorSetLayoutBinding binds[8];
    VkWriteDescriptorSet writes[8];
    if (count > 8) exit(1);
    for (uint32_t i = 0; i < count; ++i) {
        VkDescriptorSetLayoutBinding b = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL};
        binds[i] = b;
    }
    VkDescriptorSetLayoutCreateInfo dli = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    dli.bindingCount = count;
    dli.pBindings = binds;
    EXAMPLE_CHECK(vkCreateDescriptorSetLayout(g->device, &dli, NULL, &p->set_layout));
    VkDescriptorPoolSize ps = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, count};
    VkDescriptorPoolCreateInfo dpi = {VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    dpi.maxSets = 1;
    dpi.poolSizeCount = 1;
    dpi.pPoolSizes = &ps;
    EXAMPLE_CHECK(vkCreateDescriptorPool(g->device, &dpi, NULL, &p->pool));
    VkDescriptorSetAllocateInfo dsai = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    dsai.descriptorPool = p->pool;
    dsai.descriptorSetCount = 1;
    dsai.pSetLayouts = &p->set_layout;
    EXAMPLE_CHECK(vkAllocateDescriptorSets(g->device, &dsai, &p->set));
    for (uint32_t i = 0; i < count; ++i) {
        VkWriteDescriptorSet w = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
        w.dstSet = p->set;
        w.dstBinding = i;
        w.descriptorCount = 1;
        w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        w.pBufferInfo = &buffers[i];
        writes[i] = w;
    }
    vkUpdateDescriptorSets(g->device, count, writes, 0, NULL);
}

ExamplePipeline example_pipeline(const ExampleGpu* g, const uint32_t* spirv, size_t spirv_bytes, uint32_t count,
                                 const VkDescriptorBufferInfo* buffers, uint32_t push_bytes,
                                 const VkSpecializationInfo* spec) {
    ExamplePipeline p;
    VkShaderModuleCreateInfo smi = {VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    smi.codeSize = spirv_bytes;
    smi.pCode = spirv;
    EXAMPLE_CHECK(vkCreateShaderModule(g->device, &smi, NULL, &p.module));
    example_descriptors(g, &p, count, buffers);
    VkPushConstantRange pcr = {VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes};
    VkPipelineLayoutCreateInfo pli = {VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    pli.setLayoutCount = 1;
    pli.pSetLayouts = &p.set_layout;
    pli.pushConstantRangeCount = push_bytes ? 1 : 0;
    pli.pPushConstantRanges = &pcr;
    EXAMPLE_CHECK(vkCreatePipelineLayout(g->device, &pli, NULL, &p.layout));
    VkComputePipelineCreateInfo cpi = {VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    cpi.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    cpi.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    cpi.stage.module = p.module;
    cpi.stage.pName = "main";
    cpi.stage.pSpecializationInfo = spec;
    cpi.layout = p.layout;
    EXAMPLE_CHECK(vkCreateComputePipelines(g->device, VK_NULL_HANDLE, 1, &cpi, NULL, &p.pipeline));
    return p;
}

void example_free_pipeline(const ExampleGpu* g, ExamplePipeline* p) {
    vkDestroyDescriptorPool(g->device, p->pool, NULL);
    vkDestroyPipeline(g->device, p->pipeline, NULL);
    vkDestroyPipelineLayout(g->device, p->layout, NULL);
    vkDestroyDescriptorSetLayout(g->device, p->set_layout, NULL);
    vkDestroyShaderModule(g->device, p->module, NULL);
}

void example_bind(VkCommandBuffer cb, const ExamplePipeline* p, const void* push, uint32_t push_bytes) {
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p->pipeline);
    vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p->layout, 0, 1, &p->set, 0, NULL);
    if (push_bytes) vkCmdPushConstants(cb, p->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes, push);
}

int example_submit(const ExampleGpu* g, ExampleRecord record, void* user) {
    VkCommandPoolCreateInfo cpci = {VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    cpci.queueFamilyIndex = g->family;
    VkCommandPool pool;
    EXAMPLE_CHECK(vkCreateCommandPool(g->device, &cpci, NULL, &pool));
    VkCommandBufferAllocateInfo cbai = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    cbai.commandPool = pool;
    cbai.commandBufferCount = 1;
    VkCommandBuffer cb;
    EXAMPLE_CHECK(vkAllocateCommandBuffers(g->device, &cbai, &cb));
    VkCommandBufferBeginInfo cbbi = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    EXAMPLE_CHECK(vkBeginCommandBuffer(cb, &cbbi));
    const int recorded = record(cb, user);
    EXAMPLE_CHECK(vkEndCommandBuffer(cb));
    if (recorded) {
        VkFenceCreateInfo fci = {VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
        VkFence fence;
        EXAMPLE_CHECK(vkCreateFence(g->device, &fci, NULL, &fence));
        VkSubmitInfo si = {VK_STRUCTURE_TYPE_SUBMIT_INFO};
        si.commandBufferCount = 1;
        si.pCommandBuffers = &cb;
        EXAMPLE_CHECK(vkQueueSubmit(g->queue, 1, &si, fence));
        EXAMPLE_CHECK(vkWaitForFences(g->device, 1, &fence, VK_TRUE, UINT64_MAX));
        vkDestroyFence(g->device, fence, NULL);
    }
    vkDestroyCommandPool(g->device, pool, NULL);
    return recorded;
}

void example_barrier_to_host(VkCommandBuffer cb) {
    VkMemoryBarrier after = {VK_STRUCTURE_TYPE_MEMORY_BARRIER, NULL, VK_ACCESS_SHADER_WRITE_BIT, VK_ACCESS_HOST_READ_BIT};
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &after, 0, NULL, 0,
                         NULL);
}
