/// @file
/// The arithmetic of gradient clipping, written once for the three places that run it:
/// `optim::clip_grad_norm` on the host, and the `clip_factor` kernels of both devices
/// (cpu/optimizer_cpu.cpp, cuda/grad_clip.cu). One definition is what makes the device's
/// factor the host's decision to the bit (Note [The clip factor on the device] in
/// optim/grad_clip.cpp). The build does not use fast math, so the GPU rounds these
/// operations as IEEE does, as the host does.
#pragma once

#include <cmath>

#include "zero/core/host_device.h"

namespace zero::ops {

/// The true norm of gradients that were multiplied by `grad_scale` and whose squares sum
/// to `sum_sq`: the square root and the unscale in double, then one rounding to float.
ZERO_HOST_DEVICE inline float clip_norm(double sum_sq, float grad_scale) {
  return static_cast<float>(sqrt(sum_sq) / grad_scale);
}

/// The factor that brings gradients of finite true norm `norm` to at most `max_norm`:
/// max_norm / (norm + 1e-6) above the bound, 1 at or below it.
ZERO_HOST_DEVICE inline float clip_scale(float norm, float max_norm) {
  return norm > max_norm ? max_norm / (norm + 1e-6f) : 1.0f;
}

/// What AdamW multiplies each scaled gradient by: the clip and the unscale together
/// (the clip alone when `grad_scale` is 1), or NaN when `norm` is not finite, which
/// makes AdamW skip the step.
ZERO_HOST_DEVICE inline float clip_factor_value(float norm, float max_norm, float grad_scale) {
  if (!(norm - norm == 0.0f)) return NAN;  // inf - inf and NaN - NaN are NaN
  const float clip = clip_scale(norm, max_norm);
  return grad_scale == 1.0f ? clip : clip / grad_scale;
}

}  // namespace zero::ops
