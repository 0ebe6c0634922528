// The SPIR-V of the shaders, compiled and validated at build time and
// embedded as arrays (generated spirv_blobs.cpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

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
// with shuffles (KIND_ROWS_PER_SLOT rows of ROW_LANES lanes); each of them
// again with the attention options (ATTENTION); the plain subgroup ones
// without shuffles again with a subgroup's max on integer keys
// (max_by_key: SUBGROUP_MAX_BY_KEY, workgroup rows).
SpirvBlob softmax_spirv(Dtype dtype, SpirvReduction reduction, bool shuffle, bool attention, bool max_by_key);
// softmax_single_pass.comp (long rows in one dispatch): one module per
// storage type and reduction kind, plain, with the attention options, and
// the backward pass (BACKWARD); the plain subgroup ones again with a
// subgroup's max on integer keys (max_by_key: SUBGROUP_MAX_BY_KEY).
SpirvBlob single_pass_spirv(Dtype dtype, SpirvReduction reduction, bool attention, bool backward, bool max_by_key);
// softmax_backward.comp (the backward pass): one module per storage type
// and reduction kind, the subgroup ones also with shuffles.
SpirvBlob backward_spirv(Dtype dtype, SpirvReduction reduction, bool shuffle);
// copy.comp: the benchmark's bandwidth ceiling.
SpirvBlob copy_spirv();
// The embedded module ${name}.spv of shaders/CMakeLists.txt (generated
// spirv_blobs.cpp); words is null where there is none of that name.
SpirvBlob spirv_module(const std::string& name);

}  // namespace vksoftmax
