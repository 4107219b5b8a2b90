/// @file
/// The dropout mask of fused attention (Note [Attention dropout] in
/// kernels/cpu/attention_cpu.cpp), one formula shared by the CPU and the CUDA kernels
/// so that both draw the same mask, and the backward the forward's.
#pragma once

#include <cstdint>

#include "zero/core/philox.h"

namespace zero::ops {

/// The drop probability and Philox stream position of one attention call.
struct AttentionDropout {
  /// Drops with probability `p` in [0, 1) using stream words `offset`.. of `seed`.
  ZERO_HOST_DEVICE AttentionDropout(float p, uint64_t seed, uint64_t offset)
      : p(p), keep(1.0f / (1.0f - p)), seed(seed), offset(offset) {}

  /// The factor probability (row, j) is multiplied by, where row = (b*H + h)*Tq + i and
  /// j < `tk`: 1/(1 - p) if `philox_uniform(seed, offset + row*tk + j) >= p`, else 0;
  /// always 1 when p = 0 (no draw is made).
  ZERO_HOST_DEVICE float factor(int64_t row, int64_t j, int64_t tk) const {
    if (p == 0.0f) return 1.0f;
    return philox_uniform(seed, offset + static_cast<uint64_t>(row * tk + j)) >= p ? keep : 0.0f;
  }

  /// `factor(row, j, tk)` and `factor(row, j + 1, tk)` into f0 and f1: the same values,
  /// from one Philox block when both words are in it (three times in four), which halves
  /// the generator's work for a thread that holds two neighbouring keys.
  ZERO_HOST_DEVICE void factor_pair(int64_t row, int64_t j, int64_t tk, float& f0,
                                    float& f1) const {
    if (p == 0.0f) {
      f0 = f1 = 1.0f;
      return;
    }
    const uint64_t index = offset + static_cast<uint64_t>(row * tk + j);
    if ((index & 3) == 3) {  // the two words straddle two blocks
      f0 = factor(row, j, tk);
      f1 = factor(row, j + 1, tk);
      return;
    }
    const PhiloxBlock block = philox4x32(index >> 2, seed);
    f0 = from_word(block.x[index & 3]);
    f1 = from_word(block.x[(index & 3) + 1]);
  }

  float p;          ///< Drop probability; 0 means no dropout.
  float keep;       ///< 1 / (1 - p), the factor of a kept probability.
  uint64_t seed;    ///< Philox key.
  uint64_t offset;  ///< The call's first stream word; it uses B*H*Tq*Tk of them.

 private:
  // The factor a stream word gives: its uniform float compared with p.
  ZERO_HOST_DEVICE float from_word(uint32_t word) const {
    return philox_word_to_uniform(word) >= p ? keep : 0.0f;
  }
};

}  // namespace zero::ops
