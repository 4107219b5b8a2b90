/// @file
/// The two 16-bit floating-point element types, `bf16` and `f16`, and their exact
/// conversions to and from `float`, the same on the CPU and in CUDA kernels.
///
/// Both are stored as their 16 bits and computed with in float: a kernel loads a value,
/// converts it, does FP32 arithmetic and rounds the result back on the store. See
/// Note [Rounding to 16 bits]. Read next: dtype.h.
#pragma once

#include <cstdint>
#include <cstring>

#include "zero/core/host_device.h"

namespace zero {

/// @cond INTERNAL
ZERO_HOST_DEVICE inline uint32_t float_to_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

ZERO_HOST_DEVICE inline float bits_to_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}
/// @endcond

// Note [Rounding to 16 bits]
// Both conversions round to nearest, ties to even, as IEEE 754 and the GPUs' own
// conversion instructions do. BF16 is FP32 with the low 16 mantissa bits cut off (8
// exponent bits, 7 mantissa bits): same range as FP32, about 3 significant digits.
// Rounding adds 0x7fff plus the lowest kept bit, so a tie carries only when that bit
// is 1; a carry out of the mantissa raises the exponent, which is also how a huge finite
// value becomes infinity. F16 has 5 exponent bits and 10 mantissa bits: largest finite
// 65504, smallest normal 2^-14, subnormals down to 2^-24. Its conversion rebiases the
// exponent (127 - 15 = 112), rounds at mantissa bit 13, sends everything from 65520 (the
// tie between 65504 and 2^16) up to infinity, and shifts small values into subnormals
// with the same rounding. NaNs stay NaN (quiet) with their sign.

/// @cond INTERNAL
// The conversions as bit manipulations, the same on either side; the public functions
// below are these, but for the conversion instructions a CUDA kernel uses (Note [The
// GPU's own conversions]).
ZERO_HOST_DEVICE inline uint16_t float_to_bf16_bits_portable(float f) {
  const uint32_t u = float_to_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);  // NaN
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

ZERO_HOST_DEVICE inline uint16_t float_to_f16_bits_portable(float f) {
  const uint32_t u = float_to_bits(f);
  const uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);  // NaN
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520: infinity
  if (a >= 0x38800000u) {  // normal: 2^-14 and above
    return static_cast<uint16_t>(sign | ((a + 0xfffu + ((a >> 13) & 1u) - 0x38000000u) >> 13));
  }
  if (a < 0x33000000u) return static_cast<uint16_t>(sign);  // below 2^-25: zero
  // Subnormal: the value in units of 2^-24, rounded. The significand (with its hidden
  // bit) times 2^(e - 126) is that count; e is at most 112 here, so shift >= 14.
  const uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u, shift = 126u - e;
  uint32_t q = m >> shift;
  const uint32_t rest = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
  if (rest > half || (rest == half && (q & 1u))) ++q;  // may reach 0x400, the least normal
  return static_cast<uint16_t>(sign | q);
}

ZERO_HOST_DEVICE inline float f16_bits_to_float_portable(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1fu) return bits_to_float(sign | 0x7f800000u | (m << 13));  // infinity, NaN
  if (e == 0u) {  // zero or subnormal: m units of 2^-24, exact in float
    const float v = static_cast<float>(m) * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  return bits_to_float(sign | ((e + 112u) << 23) | (m << 13));
}
/// @endcond

// Note [The GPU's own conversions]
// Built with ZERO_CUDA_CONVERT_INSTRUCTIONS (a CMake option, on unless turned off to
// time the two), code compiled for a GPU of compute capability 8.0 or later converts
// with the hardware's instructions (cvt.rn.bf16.f32, cvt.rn.f16.f32, cvt.f32.f16): one
// instruction where the bit manipulations above take about nine to BF16 and more to
// F16, on every value a BF16 or F16 kernel stores. Both round to nearest, ties to even,
// with the same overflow and subnormals; they differ only on NaNs, which the
// instructions make one canonical NaN, so a select keeps the portable result, with its
// sign, for a NaN. tools/half_rounding_check.cu compares the two on a GPU for all 2^32
// floats and all 2^16 F16 values; on an H100 it found no input where they differ
// (docs/speed_notes.md, item 68), so the kernels' results keep their bits either way.

/// `f` rounded to the nearest BF16, ties to even, as its 16 bits.
ZERO_HOST_DEVICE inline uint16_t float_to_bf16_bits(float f) {
#if defined(ZERO_CUDA_CONVERT_INSTRUCTIONS) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  uint16_t b;  // both results, then a select: no branch a value
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(b) : "f"(f));
  const uint32_t u = float_to_bits(f);
  return (u & 0x7fffffffu) > 0x7f800000u ? static_cast<uint16_t>((u >> 16) | 0x40u) : b;
#else
  return float_to_bf16_bits_portable(f);
#endif
}

/// The float whose value BF16 bits `b` hold (exact).
ZERO_HOST_DEVICE inline float bf16_bits_to_float(uint16_t b) {
  return bits_to_float(static_cast<uint32_t>(b) << 16);
}

/// `f` rounded to the nearest F16, ties to even, as its 16 bits.
ZERO_HOST_DEVICE inline uint16_t float_to_f16_bits(float f) {
#if defined(ZERO_CUDA_CONVERT_INSTRUCTIONS) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  uint16_t h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  const uint32_t u = float_to_bits(f);
  return (u & 0x7fffffffu) > 0x7f800000u ? static_cast<uint16_t>(((u >> 16) & 0x8000u) | 0x7e00u)
                                         : h;
#else
  return float_to_f16_bits_portable(f);
#endif
}

/// The float whose value F16 bits `h` hold (exact).
ZERO_HOST_DEVICE inline float f16_bits_to_float(uint16_t h) {
#if defined(ZERO_CUDA_CONVERT_INSTRUCTIONS) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  const uint32_t nan = (static_cast<uint32_t>(h & 0x8000u) << 16) | 0x7f800000u |
                       (static_cast<uint32_t>(h & 0x3ffu) << 13);
  return (h & 0x7fffu) > 0x7c00u ? bits_to_float(nan) : f;
#else
  return f16_bits_to_float_portable(h);
#endif
}

/// A bfloat16 value: stored as 16 bits, converted to float to compute.
struct bf16 {
  uint16_t bits = 0;  ///< The raw bits: sign, 8 exponent bits, 7 mantissa bits.
  bf16() = default;
  /// `f` rounded to the nearest BF16 (ties to even).
  ZERO_HOST_DEVICE explicit bf16(float f) : bits(float_to_bf16_bits(f)) {}
  /// The value as a float (exact).
  ZERO_HOST_DEVICE explicit operator float() const { return bf16_bits_to_float(bits); }
};

/// An IEEE half-precision value: stored as 16 bits, converted to float to compute.
struct f16 {
  uint16_t bits = 0;  ///< The raw bits: sign, 5 exponent bits, 10 mantissa bits.
  f16() = default;
  /// `f` rounded to the nearest F16 (ties to even; overflow gives infinity).
  ZERO_HOST_DEVICE explicit f16(float f) : bits(float_to_f16_bits(f)) {}
  /// The value as a float (exact).
  ZERO_HOST_DEVICE explicit operator float() const { return f16_bits_to_float(bits); }
};

}  // namespace zero
