// Whether an attention module's subgroup rows issue a tile's loads
// together (tile_loads_rule()), from what was measured on each driver.
#include <string>

#include "driver_table.hpp"
#include "vksoftmax/plan.hpp"

namespace vksoftmax {

const char* tile_loads_name(TileLoads t) {
    switch (t) {
        case TileLoads::automatic: return "automatic";
        case TileLoads::in_branches: return "in-branches";
        case TileLoads::together: return "together";
    }
    return "?";
}

namespace {

// Drivers on which attention subgroup rows ran faster with a tile's loads
// issued together, and whose conformance catalogue passed so. Every
// Vulkan device runs either form right; the other form is kept elsewhere
// because lavapipe (Mesa 22.3.6) compiles these modules up to 4x more
// slowly (f16 masked, subgroup size 16: 58 s against 13).
constexpr DriverReason kTogetherDrivers[] = {
    // bench/NOTES.md (H200, 580.159.04, v79), (1, 32, 1024, 1024), us:
    // causal f16 32.3 -> 29.7, bf16 33.7 -> 31.9, f32 54.5 -> 53.9; masked
    // f16 43.2 -> 40.7, bf16 44.5 -> 42.1; rows of 512 (4 slots) and
    // workgroup rows level. The whole catalogue passed so (3112 runs).
    {VK_DRIVER_ID_NVIDIA_PROPRIETARY,
     "NVIDIA's driver: attention subgroup rows issue a tile's loads together, 1-8% faster (H200, 580.159.04)"},
};

}  // namespace

TileLoadsRule tile_loads_rule(const DeviceInfo& d, TileLoads t) {
    if (t == TileLoads::in_branches) return {false, "each vector in a branch of its own (in-branches)"};
    if (t == TileLoads::together) return {true, "a tile's loads together (together)"};
    if (const char* reason = driver_reason(d, kTogetherDrivers)) return {true, reason};
    return {false, "tile loads together not measured on " + d.name + "'s driver: each vector in its own branch"};
}

}  // namespace vksoftmax
