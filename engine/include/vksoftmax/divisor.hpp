// Division of 32-bit unsigned integers by a divisor known when a problem is
// planned, as a multiply-high, a subtraction and two shifts (Granlund and
// Montgomery, "Division by invariant integers using multiplication", 1994,
// figure 4.1). The attention modules split each row's index into (batch,
// head, query) and the mask's broadcast this way: a GPU divides by a
// run-time value in a long instruction sequence, and the row index is taken
// apart once per row (softmax_attention.glsl's divide() is divide() below).
#pragma once
#include <cstdint>

namespace vksoftmax {

struct Divisor {
    uint32_t magic = 1;   // floor(2^32 (2^l - d) / d) + 1, l = ceil(log2 d)
    uint32_t shifts = 0;  // bit 0: min(l, 1); bits 1-5: max(l - 1, 0)
};

// The magic number and shifts of d >= 1 (d = 0 is taken as 1).
inline Divisor divisor_for(uint32_t d) {
    if (d == 0) d = 1;
    uint32_t l = 0;
    while (l < 32 && (uint64_t{1} << l) < d) ++l;
    // 2^l - d < d, so the quotient is below 2^32 and the magic fits 32 bits.
    const uint64_t magic = (((uint64_t{1} << l) - d) << 32) / d + 1;
    Divisor v;
    v.magic = static_cast<uint32_t>(magic);
    v.shifts = (l > 0 ? 1u : 0u) | ((l > 0 ? l - 1 : 0u) << 1);
    return v;
}

// floor(n / d) for every 32-bit n: t + (n - t) / 2 never overflows.
inline uint32_t divide(uint32_t n, Divisor v) {
    const uint32_t t = static_cast<uint32_t>((uint64_t{n} * v.magic) >> 32);
    return (t + ((n - t) >> (v.shifts & 1u))) >> (v.shifts >> 1);
}

}  // namespace vksoftmax
