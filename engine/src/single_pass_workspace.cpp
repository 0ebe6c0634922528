#include "vksoftmax/single_pass_workspace.hpp"

#include <cstring>

#include "vksoftmax/plan.hpp"

namespace vksoftmax::single_pass_workspace {

uint64_t bytes(uint64_t rows, uint64_t chunks) { return 2 * rows * chunks * 16 + (4 * rows + 15) / 16 * 16; }

Layout::Layout(const Plan& plan) : rows(plan.push.rows), chunks(plan.push.chunks) {}

namespace {

float complemented_float(uint32_t word) {
    const uint32_t bits = ~word;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

}  // namespace

Partial read_partial(const std::vector<uint32_t>& words, uint64_t first_word) {
    Partial p;
    const uint32_t m = words.at(first_word), d = words.at(first_word + 1), f = words.at(first_word + 2);
    p.published = m && d && f;
    p.m = complemented_float(m);
    p.d = complemented_float(d);
    p.flags = f & ~kPublished;
    return p;
}

}  // namespace vksoftmax::single_pass_workspace
