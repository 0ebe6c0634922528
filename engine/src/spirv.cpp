#include "spirv.hpp"

#include "vksoftmax/error.hpp"

namespace vksoftmax {
namespace {

// The module's file name in shaders/CMakeLists.txt: NAME[_attn]_DTYPE_REDUCTION[_shuffle|_key].
SpirvBlob named(const std::string& name) {
    const SpirvBlob blob = spirv_module(name);
    if (!blob.words) throw Error(ErrorKind::unsupported, "no embedded SPIR-V module " + name);
    return blob;
}

const char* reduction_suffix(SpirvReduction r) {
    switch (r) {
        case SpirvReduction::subgroup: return "sg";
        case SpirvReduction::subgroup_uniform_control_flow: return "sg_ucf";
        case SpirvReduction::shared: return "shared";
    }
    return "?";
}

std::string module_name(const char* source, Dtype dtype, SpirvReduction r, bool attention) {
    return std::string(source) + (attention ? "_attn_" : "_") + dtype_name(dtype) + "_" + reduction_suffix(r);
}

}  // namespace

SpirvBlob softmax_spirv(Dtype dtype, SpirvReduction r, bool shuffle, bool attention, bool max_by_key) {
    const bool with_shuffle = shuffle && r != SpirvReduction::shared;
    return named(module_name("softmax", dtype, r, attention) +
                 (with_shuffle ? "_shuffle" : "") + (max_by_key ? "_key" : ""));
}

SpirvBlob backward_spirv(Dtype dtype, SpirvReduction r, bool shuffle) {
    const bool with_shuffle = shuffle && r != SpirvReduction::shared;
    return named(module_name("softmax_backward", dtype, r, false) + (with_shuffle ? "_shuffle" : ""));
}

SpirvBlob single_pass_spirv(Dtype dtype, SpirvReduction r, bool attention, bool backward, bool max_by_key) {
    return named(module_name(backward ? "single_pass_backward" : "single_pass", dtype, r, attention) +
                 (max_by_key ? "_key" : ""));
}

SpirvBlob copy_spirv() { return named("copy"); }

}  // namespace vksoftmax
