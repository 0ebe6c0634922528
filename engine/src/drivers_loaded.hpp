// The Vulkan drivers (ICDs) mapped in the process, and keeping them mapped.
// Internal to the engine.
//
// The loader unmaps a driver when the last instance that used it is
// destroyed, and maps it again for the next. NVIDIA's driver (580.159.04)
// does not survive that beside threads: a thread that used it and exits
// after it was unmapped crashes (SIGSEGV at the thread's exit, with no
// frame left to read: most likely its per-thread cleanup), and vkDestroyDevice unmapping it while
// another thread creates an instance or allocates memory deadlocks. With
// the drivers never unmapped, neither happened (bench/NOTES.md, v116).
// Layers stay the loader's to unmap: the validation layer keeps its
// per-thread state in C++ thread_local objects, and glibc does not unmap
// an object whose thread_local destructors are still to run (dlclose()
// leaves it mapped), so a thread that used a layer can exit after it.
// Listing them is public: loaded_vulkan_drivers(), vksoftmax/device_info.hpp.
#pragma once

namespace vksoftmax {

// Marks every Vulkan driver mapped now never to be unmapped (RTLD_NODELETE),
// as a process that keeps an instance for its whole life would have them.
void keep_vulkan_drivers_loaded();

}  // namespace vksoftmax
