/* The examples' own Vulkan objects, made the way any host makes them, with
 * nothing of vksoftmax: an instance and device with one compute queue,
 * host-visible buffers, a compute pipeline over storage buffers, and a
 * command buffer submitted and waited for. Any failing call ends the
 * program with the call's name and result. */
#ifndef VKSOFTMAX_EXAMPLE_VULKAN_H
#define VKSOFTMAX_EXAMPLE_VULKAN_H
#include <stddef.h>
#include <stdint.h>
#include <vulkan/vulkan.h>

typedef struct {
    VkInstance instance;
    VkPhysicalDevice physical;
    VkDevice device;
    VkQueue queue;
    uint32_t family; /* the first queue family with compute */
} ExampleGpu;

typedef struct {
    VkBuffer buffer;
    VkDeviceMemory memory;
    void* data; /* mapped, coherent */
} ExampleBuffer;

typedef struct {
    VkShaderModule module;
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout layout;
    VkPipeline pipeline;
    VkDescriptorPool pool;
    VkDescriptorSet set;
} ExamplePipeline;

void example_check(VkResult result, const char* call, int line);
#define EXAMPLE_CHECK(call) example_check((call), #call, __LINE__)

/* A Vulkan 1.1 instance and its first device (exits when there is none). */
void example_pick_device(ExampleGpu* g, const char* name);
int example_device_has_extension(const ExampleGpu* g, const char* extension);
/* The logical device with one compute queue, `extensions` and the feature
 * structures chained from `features` (VkPhysicalDeviceFeatures2, or NULL). */
void example_create_device(ExampleGpu* g, const char* const* extensions, uint32_t extension_count, const void* features);
void example_close(ExampleGpu* g);

/* Host-visible and coherent, mapped; device-local too where offered. */
ExampleBuffer example_buffer(const ExampleGpu* g, VkDeviceSize bytes);
void example_free_buffer(const ExampleGpu* g, ExampleBuffer* b);

/* A compute pipeline of `spirv`: storage buffers 0 .. count - 1 of set 0
 * bound to `buffers`, `push_bytes` of push constants, specialization `spec`
 * (or NULL). */
ExamplePipeline example_pipeline(const ExampleGpu* g, const uint32_t* spirv, size_t spirv_bytes, uint32_t count,
                                 const VkDescriptorBufferInfo* buffers, uint32_t push_bytes,
                                 const VkSpecializationInfo* spec);
void example_free_pipeline(const ExampleGpu* g, ExamplePipeline* p);
/* Binds the pipeline and its set, pushes `push_bytes` of `push`. */
void example_bind(VkCommandBuffer cb, const ExamplePipeline* p, const void* push, uint32_t push_bytes);

/* One command buffer, recorded by `record(cb, user)`, submitted and waited
 * for; `record` returns 0 to stop (nothing is submitted then). */
typedef int (*ExampleRecord)(VkCommandBuffer cb, void* user);
int example_submit(const ExampleGpu* g, ExampleRecord record, void* user);
/* Shader writes made visible to the host: the barrier before reading back. */
void example_barrier_to_host(VkCommandBuffer cb);

#endif
