/* The vksm_context_desc of an example's device: its objects, the loader's
 * vkGetInstanceProcAddr, and push descriptors as enabled by
 * example_create_device() with VK_KHR_push_descriptor. */
#ifndef VKSOFTMAX_EXAMPLE_CONTEXT_H
#define VKSOFTMAX_EXAMPLE_CONTEXT_H
#include "example_vulkan.h"
#include "vksoftmax/vksoftmax.h"

static inline vksm_context_desc example_context_desc(const ExampleGpu* g) {
    vksm_context_desc desc = {0};
    desc.instance = g->instance;
    desc.physical_device = g->physical;
    desc.device = g->device;
    desc.queue_family = g->family;
    desc.get_instance_proc_addr = vkGetInstanceProcAddr;
    desc.push_descriptor = 1;
    return desc;
}

#endif
