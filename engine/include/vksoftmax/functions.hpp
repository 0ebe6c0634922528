// The Vulkan entry points vksoftmax calls, in tables that each Context loads
// for itself: from the system loader for a Context of its own, from the
// host's vkGetInstanceProcAddr for an adopted one. Nothing process-wide is
// written after the system loader is first found, so contexts on any number
// of instances can be created, used and destroyed from any threads, and the
// library defines no vk* symbol that could shadow a host's loader or volk.
#pragma once
#include <vulkan/vulkan.h>

// Global commands: callable before there is an instance.
#define VKSOFTMAX_LOADER_FUNCTIONS(F) \
    F(vkCreateInstance)               \
    F(vkEnumerateInstanceLayerProperties)

// Instance-level commands (and vkGetDeviceProcAddr, which loads the device's).
#define VKSOFTMAX_INSTANCE_FUNCTIONS(F)        \
    F(vkDestroyInstance)                       \
    F(vkEnumeratePhysicalDevices)              \
    F(vkEnumerateDeviceExtensionProperties)    \
    F(vkGetPhysicalDeviceProperties)           \
    F(vkGetPhysicalDeviceProperties2)          \
    F(vkGetPhysicalDeviceFeatures2)            \
    F(vkGetPhysicalDeviceQueueFamilyProperties) \
    F(vkGetPhysicalDeviceMemoryProperties)     \
    F(vkCreateDevice)                          \
    F(vkGetDeviceProcAddr)                     \
    F(vkCreateDebugUtilsMessengerEXT)          \
    F(vkDestroyDebugUtilsMessengerEXT)         \
    F(vkSetDebugUtilsObjectNameEXT)            \
    F(vkCmdBeginDebugUtilsLabelEXT)            \
    F(vkCmdEndDebugUtilsLabelEXT)

// Device-level commands. Extension commands stay null where the device
// was created without the extension, and vkCmdPipelineBarrier2 (Vulkan 1.3,
// timed by the bench only) below Vulkan 1.3.
#define VKSOFTMAX_DEVICE_FUNCTIONS(F)         \
    F(vkDestroyDevice)                        \
    F(vkDeviceWaitIdle)                       \
    F(vkGetDeviceQueue)                       \
    F(vkQueueSubmit)                          \
    F(vkCreateFence)                          \
    F(vkDestroyFence)                         \
    F(vkResetFences)                          \
    F(vkWaitForFences)                        \
    F(vkCreateCommandPool)                    \
    F(vkDestroyCommandPool)                   \
    F(vkAllocateCommandBuffers)               \
    F(vkFreeCommandBuffers)                   \
    F(vkBeginCommandBuffer)                   \
    F(vkEndCommandBuffer)                     \
    F(vkCreateBuffer)                         \
    F(vkDestroyBuffer)                        \
    F(vkGetBufferMemoryRequirements)          \
    F(vkAllocateMemory)                       \
    F(vkFreeMemory)                           \
    F(vkBindBufferMemory)                     \
    F(vkMapMemory)                            \
    F(vkFlushMappedMemoryRanges)              \
    F(vkInvalidateMappedMemoryRanges)         \
    F(vkCreateShaderModule)                   \
    F(vkDestroyShaderModule)                  \
    F(vkCreateDescriptorSetLayout)            \
    F(vkDestroyDescriptorSetLayout)           \
    F(vkCreatePipelineLayout)                 \
    F(vkDestroyPipelineLayout)                \
    F(vkCreatePipelineCache)                  \
    F(vkDestroyPipelineCache)                 \
    F(vkGetPipelineCacheData)                 \
    F(vkCreateComputePipelines)               \
    F(vkDestroyPipeline)                      \
    F(vkGetPipelineExecutableStatisticsKHR)   \
    F(vkCreateQueryPool)                      \
    F(vkDestroyQueryPool)                     \
    F(vkGetQueryPoolResults)                  \
    F(vkCmdResetQueryPool)                    \
    F(vkCmdWriteTimestamp)                    \
    F(vkCmdBindPipeline)                      \
    F(vkCmdPushDescriptorSetKHR)              \
    F(vkAllocateDescriptorSets)               \
    F(vkUpdateDescriptorSets)                 \
    F(vkCmdBindDescriptorSets)                \
    F(vkCmdPushConstants)                     \
    F(vkCmdDispatch)                          \
    F(vkCmdPipelineBarrier)                   \
    F(vkCmdPipelineBarrier2)                  \
    F(vkCreateEvent)                          \
    F(vkDestroyEvent)                         \
    F(vkCmdSetEvent)                          \
    F(vkResetEvent)                           \
    F(vkCmdWaitEvents)                        \
    F(vkCmdCopyBuffer)                        \
    F(vkCmdFillBuffer)

namespace vksoftmax {

#define VKSOFTMAX_FUNCTION_MEMBER(name) PFN_##name name = nullptr;
struct LoaderFunctions {
    PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
    PFN_vkEnumerateInstanceVersion vkEnumerateInstanceVersion = nullptr;  // null in a Vulkan 1.0 loader
    VKSOFTMAX_LOADER_FUNCTIONS(VKSOFTMAX_FUNCTION_MEMBER)
};
struct InstanceFunctions {
    VKSOFTMAX_INSTANCE_FUNCTIONS(VKSOFTMAX_FUNCTION_MEMBER)
};
struct DeviceFunctions {
    VKSOFTMAX_DEVICE_FUNCTIONS(VKSOFTMAX_FUNCTION_MEMBER)
};
#undef VKSOFTMAX_FUNCTION_MEMBER

// vkGetInstanceProcAddr of the system's Vulkan loader (libvulkan.so.1),
// opened once per process (thread-safe); Error(unsupported) when there is
// none.
PFN_vkGetInstanceProcAddr system_loader();

// The tables, from `get_instance_proc_addr` (the system loader's or a
// host's). Error(unsupported) names a core command the loader or driver
// did not give.
LoaderFunctions load_loader_functions(PFN_vkGetInstanceProcAddr get_instance_proc_addr);
InstanceFunctions load_instance_functions(PFN_vkGetInstanceProcAddr get_instance_proc_addr, VkInstance instance);
DeviceFunctions load_device_functions(const InstanceFunctions& instance_functions, VkDevice device);

}  // namespace vksoftmax
