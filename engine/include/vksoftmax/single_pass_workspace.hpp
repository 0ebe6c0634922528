// The single-pass path's workspace as 32-bit words, as
// shaders/softmax_single_pass.comp lays it out: two banks, used by
// alternate calls, of one 4-word partial per chunk of every row
// {~m, ~d, flags | kPublished, unused}, then one done count per row (it
// grows by the chunk count per call). For tools that read a workspace
// back: tests and diagnostics.
#pragma once
#include <cstdint>
#include <vector>

namespace vksoftmax {

struct Plan;

namespace single_pass_workspace {

// A flags word's mark that its partial is published in this call.
constexpr uint32_t kPublished = 0x80000000u;

// The workspace's bytes for `rows` rows of `chunks` chunks: the banks, then
// the counts rounded up to 16 bytes.
uint64_t bytes(uint64_t rows, uint64_t chunks);

// Where a plan's partials and counts lie (its push constants' rows and
// chunks: one range of a plan cut in ranges).
struct Layout {
    uint64_t rows = 0, chunks = 0;
    explicit Layout(const Plan& plan);
    uint64_t partial_word(uint64_t bank, uint64_t row, uint64_t chunk) const {
        return 4 * (bank * rows * chunks + row * chunks + chunk);
    }
    uint64_t count_word(uint64_t row) const { return 8 * rows * chunks + row; }
};

// One chunk's partial as the words hold it: m and d stored complemented,
// published only where all three words are non-zero.
struct Partial {
    bool published = false;
    float m = 0, d = 0;  // backward: the chunk's mass and sum
    uint32_t flags = 0;  // without kPublished
};
Partial read_partial(const std::vector<uint32_t>& words, uint64_t first_word);

}  // namespace single_pass_workspace
}  // namespace vksoftmax
