// Exercise 11.2: one AdamW update of a single number, the arithmetic the optimiser
// applies to every element of every parameter.
//
// Adam keeps two running averages of the gradient g: m (its mean) and v (its square's
// mean). Both start at 0, so early on they are biased towards 0; dividing by
// (1 - beta^t) undoes that. The step is lr * m_hat / (sqrt(v_hat) + eps): the gradient
// direction, scaled per element by its typical size, so every weight moves by about lr
// whatever the scale of its gradient. AdamW's "W" is the weight decay applied to the
// parameter directly (p -= lr * wd * p), not added to the gradient, where Adam's
// normalisation would undo it (Loshchilov & Hutter, "Decoupled Weight Decay
// Regularization", 2019). zero/kernels/cpu/optimizer_cpu.cpp does the same per element.
#pragma once

#include <cmath>
#include <cstdint>

#include "zero/core/error.h"

namespace zero::ex11 {

/// One parameter element and its two moments.
struct AdamWScalar {
  float param = 0;       ///< p
  float exp_avg = 0;     ///< m, the running mean of the gradient
  float exp_avg_sq = 0;  ///< v, the running mean of the squared gradient
};

/// Hyper-parameters of the update (PyTorch's names).
struct AdamWHyper {
  float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.99f, eps = 1e-8f, weight_decay = 0.1f;
};

/// The state after one AdamW step with gradient `grad`, `step` being the 1-based count
/// of steps including this one (the bias correction uses it). In order: decay p by
/// lr * weight_decay * p; update m and v; p -= lr * m_hat / (sqrt(v_hat) + eps) with
/// m_hat = m / (1 - beta1^step), v_hat = v / (1 - beta2^step).
inline AdamWScalar adamw_step(AdamWScalar s, float grad, const AdamWHyper& h, int64_t step) {
  ZERO_CHECK(step >= 1, "adamw_step: expected a 1-based step >= 1, got ", step);
  // TODO(ex11.2): decoupled decay, the two moments, bias correction, the update
  ZERO_NOT_IMPLEMENTED("ex11.2");
}

}  // namespace zero::ex11
