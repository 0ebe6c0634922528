/* Preloaded into the AddressSanitizer test runs: dlclose() does nothing, so
 * that the Vulkan drivers and layers the loader unloads at vkDestroyInstance
 * stay mapped. Their process-lifetime allocations then stay reachable from
 * their globals, as in any process that keeps a Vulkan instance, instead of
 * being reported as leaks of an "<unknown module>" (lavapipe leaves one of
 * 128 bytes per instance that way), and whatever is reported is attributed
 * to the module that allocated it. */
int dlclose(void* handle) {
    (void)handle;
    return 0;
}
