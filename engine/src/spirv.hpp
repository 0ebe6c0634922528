// The SPIR-V of softmax.comp, compiled and validated at build time and
// embedded as arrays (generated spirv_blobs.cpp).
#pragma once
#include <cstddef>
#include <cstdint>

#include "vksoftmax/types.hpp"

namespace vksoftmax {

struct SpirvBlob {
    const uint32_t* words;
    size_t count;
};

enum class SpirvReduction {
    shared,                         // shared-memory tree
    subgroup,                       // subgroup arithmetic
    subgroup_uniform_control_flow,  // the same, with SubgroupUniformControlFlowKHR
};
// One module per storage type and reduction kind.
SpirvBlob softmax_spirv(Dtype dtype, SpirvReduction reduction);
// copy.comp: the benchmark's bandwidth ceiling.
SpirvBlob copy_spirv();

}  // namespace vksoftmax
