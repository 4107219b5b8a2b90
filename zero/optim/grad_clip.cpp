// Global gradient-norm clipping: one sum of squares over every gradient (the
// multi-tensor kernels of kernels/optimizer.cpp), one scalar to the host, then an
// in-place scale when the norm is over the bound.
#include "zero/optim/grad_clip.h"

#include <cmath>

#include "zero/autograd/grad_mode.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::optim {

float clip_grad_norm(const std::vector<Tensor>& params, float max_norm, float grad_scale) {
  ZERO_CHECK(max_norm > 0.0f, "clip_grad_norm: expected max_norm > 0, got ", max_norm);
  ZERO_CHECK(std::isfinite(grad_scale) && grad_scale > 0.0f,
             "clip_grad_norm: expected a finite, positive grad_scale, got ", grad_scale);
  NoGradGuard no_grad;
  std::vector<Tensor> grads;
  for (const Tensor& p : params) {
    Tensor g = p.Grad();
    if (!g.defined()) continue;
    if (!g.is_contiguous()) {  // scaled in place below, so it must be the stored gradient
      g = g.Contiguous();
      Tensor(p).SetGrad(g);
    }
    ZERO_CHECK(grads.empty() || g.device() == grads.front().device(),
               "clip_grad_norm: gradients on ", grads.front().device(), " and ", g.device(),
               "; expected one device");
    grads.push_back(g);
  }
  if (grads.empty()) return 0.0f;

  const double sum_sq = ops::sum_of_squares(grads).Item();  // the one device->host copy
  // The true norm: that of the scaled gradients over the scale (exact when it is 1).
  const float norm = static_cast<float>(std::sqrt(sum_sq) / grad_scale);
  if (!std::isfinite(norm)) return norm;
  const float clip = norm > max_norm ? max_norm / (norm + 1e-6f) : 1.0f;
  if (grad_scale == 1.0f) {
    if (norm > max_norm) ops::scale(grads, clip);
  } else {
    ops::scale(grads, clip / grad_scale);  // unscale and clip in one pass
  }
  return norm;
}

}  // namespace zero::optim
