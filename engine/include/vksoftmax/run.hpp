// run(): softmax of host memory on a Context's device in one submission:
// upload, dispatch (timed with timestamps where the device has them),
// download. For applications that own their Vulkan objects, use
// make_plan() + record() instead.
#pragma once
#include <vector>

#include "vksoftmax/attention.hpp"
#include "vksoftmax/plan.hpp"

namespace vksoftmax {

class Context;

struct RunOptions {
    PlanOptions plan;
    // Fill the output with NaN before the dispatch, so that an element the
    // shaders fail to write cannot pass for a result.
    bool poison_output = true;
};

struct RunResult {
    Plan plan;
    bool timed = false;           // false where the device has no timestamps
    std::vector<double> pass_ns;  // GPU time of each dispatch
    double gpu_ns = 0;            // all passes
};

// `input` and `output` hold problem.shape elements of problem.dtype (fp16
// as raw binary16 bits). They may be the same memory. `attention` holds
// the buffers of the problem's attention options (AttentionData in attention.hpp).
RunResult run(Context& ctx, const Problem& problem, const void* input, void* output, const RunOptions& options = {},
              const AttentionData& attention = {});

// The backward pass of a Problem::backward problem: dx from the forward
// output y and its gradient dy (each problem.shape elements of
// problem.dtype; dx may be the memory of either). Where the forward had
// sinks (problem.attention.sinks), each row's sink gradient is written to
// `sink_gradient` (one float per row; required then).
RunResult run_backward(Context& ctx, const Problem& problem, const void* y, const void* dy, void* dx,
                       const RunOptions& options = {}, float* sink_gradient = nullptr);

}  // namespace vksoftmax
