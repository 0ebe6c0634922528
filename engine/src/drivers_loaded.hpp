// The Vulkan drivers (ICDs) mapped in the process, and keeping them mapped.
// Internal to the engine.
//
// The loader unmaps a driver when the last instance that used it is
// destroyed, and maps it again for the next. NVIDIA's driver (580.159.04)
// does not survive that beside threads: a thread that used it and exits
// after it was unmapped crashes (SIGSEGV at the thread's exit, in the
// driver's per-thread cleanup), and vkDestroyDevice unmapping it while
// another thread creates an instance or allocates memory deadlocks. With
// the drivers never unmapped, neither happened (bench/NOTES.md, v116).
#pragma once
#include "vksoftmax/device_info.hpp"  // loaded_vulkan_drivers()

namespace vksoftmax {

// Marks every Vulkan driver mapped now never to be unmapped (RTLD_NODELETE),
// as a process that keeps an instance for its whole life would have them.
void keep_vulkan_drivers_loaded();

}  // namespace vksoftmax
