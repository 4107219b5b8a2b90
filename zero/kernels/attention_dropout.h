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

  float p;          ///< Drop probability; 0 means no dropout.
  float keep;       ///< 1 / (1 - p), the factor of a kept probability.
  uint64_t seed;    ///< Philox key.
  uint64_t offset;  ///< The call's first stream word; it uses B*H*Tq*Tk of them.
};

}  // namespace zero::ops
