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

// One module per storage type and reduction kind.
SpirvBlob softmax_spirv(Dtype dtype, bool subgroup);
// copy.comp: the benchmark's bandwidth ceiling.
SpirvBlob copy_spirv();

}  // namespace vksoftmax
