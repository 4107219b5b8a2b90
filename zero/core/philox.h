/// @file
/// Philox4x32-10, the counter-based random generator behind `Rand`, `Randn` and dropout.
///
/// A counter-based generator needs no state between draws: value k of the stream
/// with seed s is a pure function of (s, k). So the CPU and a CUDA kernel, each
/// element computed by any thread in any order, produce the same numbers.
/// Header-only and usable in device code (`ZERO_HOST_DEVICE`).
#pragma once

#include <cmath>
#include <cstdint>

#include "zero/core/host_device.h"

namespace zero {

/// Four 32-bit words: a Philox counter block or its output.
struct PhiloxBlock {
  uint32_t x[4];  ///< The words.
};

/// Philox4x32 with 10 rounds (Salmon et al., SC'11) on a full 128-bit counter and the
/// 64-bit key (`k0`, `k1`): the form the Random123 known-answer vectors are written in.
ZERO_HOST_DEVICE inline PhiloxBlock philox4x32_10(PhiloxBlock counter, uint32_t k0, uint32_t k1) {
  uint32_t c0 = counter.x[0], c1 = counter.x[1], c2 = counter.x[2], c3 = counter.x[3];
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(0xD2511F53u) * c0;
    const uint64_t p1 = static_cast<uint64_t>(0xCD9E8D57u) * c2;
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return PhiloxBlock{{c0, c1, c2, c3}};
}

/// Philox4x32-10 of a 64-bit counter (the upper two counter words are 0) and a 64-bit key.
ZERO_HOST_DEVICE inline PhiloxBlock philox4x32(uint64_t counter, uint64_t key) {
  const PhiloxBlock block{
      {static_cast<uint32_t>(counter), static_cast<uint32_t>(counter >> 32), 0u, 0u}};
  return philox4x32_10(block, static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32));
}

/// Random word number `index` of the stream with `seed`: word `index % 4` of block `index / 4`.
ZERO_HOST_DEVICE inline uint32_t philox_word(uint64_t seed, uint64_t index) {
  return philox4x32(index >> 2, seed).x[index & 3];
}

/// Uniform float in [0, 1) from the top 24 bits of a stream word: what `philox_uniform`
/// returns, for callers that take several words from one `philox4x32` block.
ZERO_HOST_DEVICE inline float philox_word_to_uniform(uint32_t word) {
  return static_cast<float>(word >> 8) * (1.0f / 16777216.0f);
}

/// Uniform float in [0, 1) from the top 24 bits of stream word `index`.
ZERO_HOST_DEVICE inline float philox_uniform(uint64_t seed, uint64_t index) {
  return philox_word_to_uniform(philox_word(seed, index));
}

/// Standard normal from stream words `2*index` and `2*index + 1` (Box-Muller, cosine branch).
ZERO_HOST_DEVICE inline float philox_normal(uint64_t seed, uint64_t index) {
  // 1 - u keeps the logarithm's argument in (0, 1].
  const float u1 = 1.0f - philox_uniform(seed, 2 * index);
  const float u2 = philox_uniform(seed, 2 * index + 1);
  return sqrtf(-2.0f * logf(u1)) * cosf(6.28318530717958647692f * u2);
}

}  // namespace zero
