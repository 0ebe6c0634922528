// The attention options of `vksoftmax run`: --mask, --causal, --alibi,
// --heads, --sinks and --lse, read against the input tensor into the
// problem's Attention and the buffers it reads and writes.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tensor.hpp"
#include "vksoftmax/cpu.hpp"
#include "vksoftmax/types.hpp"

namespace vksoftmax::cli {

struct AttentionArgs {
    std::string mask, sinks, lse;         // .npy paths; empty: off
    std::optional<int64_t> causal;        // --causal[=OFFSET]
    double alibi = 0.0;                   // --alibi MAX_BIAS
    uint64_t heads = 0;                   // --heads H; 0: from the tensor's shape
    bool any() const { return !mask.empty() || !sinks.empty() || !lse.empty() || causal || alibi != 0.0 || heads; }
};

// The options read: the problem's Attention, the mask (its file's bytes,
// fp32 or fp16) and the sinks (fp32), and room for the log-sum-exp.
struct AttentionInputs {
    Attention attention;
    Tensor mask;
    std::vector<float> sinks;
    std::vector<float> lse;
    std::vector<uint64_t> lse_dims;  // the input's dims but the last
    AttentionData data();            // pointers into the above
};

// Reads the files and checks them against the input `t` (softmax along
// `axis`): the tensor is (batch, heads, query rows, n) with query rows its
// second-to-last dimension and heads its third-to-last (or --heads); the
// mask is (mask_batch, mask_heads, mask_rows, n) with leading dimensions
// of 1 left out; the sinks hold one value per head. Error(invalid_argument)
// (exit 2) for options that do not fit the input, FileError (exit 3)
// naming the file, the field and the value for a mask or sinks file that
// does not.
AttentionInputs read_attention(const AttentionArgs& args, const Tensor& t, int axis);

}  // namespace vksoftmax::cli
