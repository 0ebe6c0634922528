// IEEE 754 binary16 and bfloat16 <-> binary32 on the host, bit-exact, round
// to nearest even (the shaders round the same way).
#pragma once
#include <cstdint>
#include <cstring>

#include "vksoftmax/types.hpp"

namespace vksoftmax {

inline float half_to_float(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (mant << 13);  // inf, NaN (payload kept)
    } else if (exp != 0) {
        bits = sign | ((exp + 112u) << 23) | (mant << 13);
    } else if (mant == 0) {
        bits = sign;  // +-0
    } else {
        // Subnormal: normalize into binary32.
        exp = 113;
        while ((mant & 0x400u) == 0) {
            mant <<= 1;
            --exp;
        }
        bits = sign | (exp << 23) | ((mant & 0x3ffu) << 13);
    }
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

inline uint16_t float_to_half(float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
    const uint32_t abs = bits & 0x7fffffffu;
    if (abs >= 0x7f800000u)  // inf or NaN (NaN stays quiet)
        return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
    if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds past 65504
    if (abs < 0x38800000u) {
        // Result is subnormal or zero: shift the full mantissa and round.
        if (abs < 0x33000000u) return sign;  // below half the smallest subnormal
        const uint32_t e = abs >> 23;
        const uint32_t m = (abs & 0x7fffffu) | 0x800000u;
        const uint32_t shift = 126u - e;  // 14..24
        uint32_t r = m >> shift;
        const uint32_t rem = m & ((1u << shift) - 1u), halfway = 1u << (shift - 1u);
        if (rem > halfway || (rem == halfway && (r & 1u))) ++r;
        return static_cast<uint16_t>(sign | r);
    }
    uint32_t r = ((abs >> 13) - (112u << 10));
    const uint32_t rem = abs & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) ++r;  // may carry into the exponent: correct
    return static_cast<uint16_t>(sign | r);
}

// bfloat16 is the top half of a binary32: widening is exact.
inline float bf16_to_float(uint16_t b) {
    const uint32_t bits = static_cast<uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

inline uint16_t float_to_bf16(float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);  // NaN stays quiet
    // Round to nearest even; a carry into the exponent is correct (up to inf).
    bits += 0x7fffu + ((bits >> 16) & 1u);
    return static_cast<uint16_t>(bits >> 16);
}

// An element of a 16-bit storage type (f16 or bf16) <-> binary32.
inline float from_16bit(Dtype dtype, uint16_t v) { return dtype == Dtype::bf16 ? bf16_to_float(v) : half_to_float(v); }
inline uint16_t to_16bit(Dtype dtype, float f) { return dtype == Dtype::bf16 ? float_to_bf16(f) : float_to_half(f); }

}  // namespace vksoftmax
