// The SPIR-V of the shaders, compiled and validated at build time and
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
// One module per storage type and reduction kind; the subgroup ones also
// with shuffles (KIND_ROWS_PER_SLOT rows of ROW_LANES lanes).
SpirvBlob softmax_spirv(Dtype dtype, SpirvReduction reduction, bool shuffle);
// softmax_single_pass.comp (long rows in one dispatch): one module per
// storage type and reduction kind.
SpirvBlob single_pass_spirv(Dtype dtype, SpirvReduction reduction);
// copy.comp: the benchmark's bandwidth ceiling.
SpirvBlob copy_spirv();

}  // namespace vksoftmax
