// The benchmark: softmax cases timed on the GPU with timestamp queries, and
// the device's copy ceiling timed the same way.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "vksoftmax/plan.hpp"
#include "vksoftmax/types.hpp"

namespace vksoftmax {
class Context;
}

namespace vksoftmax::bench {

struct Case {
    Shape shape;  // rows x cols: outer = rows, axis = cols
    Dtype dtype = Dtype::f32;
    bool log = false;
    std::string name() const;  // "1024x512"
};

// "suite", or a comma-separated list of ROWSxCOLS, crossed with the dtypes.
std::vector<Case> parse_cases(const std::string& shapes, const std::vector<Dtype>& dtypes, bool log);
// The default suite: the shapes, then ggml's large ones.
std::vector<Shape> suite();

struct Options {
    uint32_t iters = 20;    // back-to-back calls per timed submission
    uint32_t repeats = 15;  // timed submissions; median and min reported
    uint32_t warmup = 3;    // untimed calls before each timed run
    // Before the first timed run, keep the GPU busy with the case this long:
    // after an idle gap (the CPU check) clocks drop, and a burst of a few
    // calls does not bring them back (bench/NOTES.md).
    double warmup_ms = 200;
    PlanOptions plan;       // overrides for tuning
};

struct Timing {
    double median_us = 0, min_us = 0;
    double gbps = 0;  // bytes counted / median time
};

struct Row {
    Case c;
    std::string path;
    uint32_t passes = 0;
    uint64_t bytes = 0;  // 2 * N * sizeof(dtype)
    Timing t;
    double max_rel_error = 0;  // of one call, against the float64 reference
    bool verified = false;
    uint32_t workgroup_size = 0, vpt = 0, groups = 0;
    std::vector<std::string> stats;  // driver statistics of each pass, where captured
};

// Softmax of fresh normal(0, 4) logits: checked once against the CPU
// reference, then timed. Throws vksoftmax::Error on device failure.
Row measure(Context& ctx, const Case& c, const Options& o);

// copy.comp over `bytes` of input (bytes read + written counted).
Timing measure_copy(Context& ctx, uint64_t bytes, const Options& o);

}  // namespace vksoftmax::bench
