// Exercise 09: the two small rules mixed-precision training rests on.
//
// ex09.1 rounds an FP32 bit pattern to BF16, to nearest with ties to even, as the GPU's
// conversion instruction and zero/core/half.h do: BF16 is FP32 with the low 16 mantissa
// bits cut off, so rounding decides whether the kept half goes up by one. ex09.2 is the
// update rule of FP16's dynamic loss scale: after each backward pass, skip the step and
// halve the scale if a gradient overflowed, and double it after a run of good steps.
// The chapter program uses both (sections 1 and 3); the tests compare ex09.1 with
// zero::float_to_bf16_bits over many patterns and replay scripted runs through ex09.2.
#pragma once

#include <algorithm>
#include <cstdint>

#include "zero/core/error.h"

namespace zero::ex09 {

/// The BF16 nearest to the float whose bits are `f32_bits`, ties to even, as its 16 bits.
/// Infinities stay infinities, a finite value too large for BF16 becomes one, and a NaN
/// stays a NaN of the same sign (however small its payload).
inline uint16_t round_to_bf16(uint32_t f32_bits) {
  // TODO(ex09.1): keep the high 16 bits, rounded to nearest even; a NaN stays a NaN
  ZERO_NOT_IMPLEMENTED("ex09.1");
}

/// The state of FP16 dynamic loss scaling: the loss is multiplied by `scale` before the
/// backward pass, so small gradients stay above FP16's smallest values, and the gradients
/// are divided by it again (in FP32) before the optimiser uses them.
struct LossScale {
  float scale = 65536.0f;         ///< Current factor, a power of two (2^16 to start).
  int good_steps = 0;             ///< Steps in a row with finite gradients since the last change.
  int growth_interval = 2000;     ///< Good steps after which the scale doubles.
  float min_scale = 1.0f;         ///< The scale never halves below this.
  float max_scale = 16777216.0f;  ///< Nor doubles above this (2^24).
};

/// Updates `s` after one backward pass of the scaled loss: `found_inf` says whether any
/// gradient came out infinite or NaN. Returns whether the optimiser step is taken.
///
/// An overflow means the scale is too large: the step is skipped (its gradients are
/// garbage), the scale halves (not below `min_scale`) and the count of good steps starts
/// again from zero. A finite step is taken and counted; on the `growth_interval`-th good
/// step in a row the scale doubles (not above `max_scale`) and the count starts again,
/// so the scale keeps probing for the largest value that does not overflow.
inline bool update_loss_scale(LossScale& s, bool found_inf) {
  // TODO(ex09.2): skip and halve on an overflow; double after growth_interval good steps
  ZERO_NOT_IMPLEMENTED("ex09.2");
}

}  // namespace zero::ex09
