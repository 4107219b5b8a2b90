// Global gradient-norm clipping: one sum of squares over every gradient (the
// multi-tensor kernels of kernels/optimizer.cpp), then either one scalar to the host and
// an in-place scale when the norm is over the bound (clip_grad_norm), or the clip
// factor computed where the sum is, for AdamW to apply (clip_factor).
//
// Note [The clip factor on the device]
// clip_grad_norm stops the host in the middle of every step: it must read the sum of
// squares to decide whether to scale, and the scale is one more read and write of every
// gradient (124M floats for GPT-2) just before AdamW reads them all again. clip_factor
// turns the sum into the norm and the factor on the device (ops::clip_factor, one
// thread), and AdamW multiplies each gradient by the factor in a register as it loads
// it (AdamWParams::grad_factor). The host learns the norm only when it next waits for
// the device anyway, reading the loss at the end of the step (train/trainer.cpp).
// Nothing changes in the results: the kernel runs the host arithmetic below, the same
// functions of kernels/clip_rule.h (the F32 sum widened to double, sqrt and the unscale in
// double, one rounding to float, the clip and the unscale in float), and a gradient
// times the factor in a register is the very float that scale() stores. Skipping has to
// move too: the host no longer decides before the update, so a non-finite norm becomes
// a NaN factor and AdamW, seeing it, writes nothing. The caller then only has to take
// the step back from AdamW's count (AdamW::UncountStep) once it sees the norm.
#include "zero/optim/grad_clip.h"

#include <cmath>

#include "zero/autograd/grad_mode.h"
#include "zero/kernels/clip_rule.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::optim {

namespace {

void check_bounds(const char* op, float max_norm, float grad_scale) {
  ZERO_CHECK(max_norm > 0.0f, op, ": expected max_norm > 0, got ", max_norm);
  ZERO_CHECK(std::isfinite(grad_scale) && grad_scale > 0.0f, op,
             ": expected a finite, positive grad_scale, got ", grad_scale);
}

// The gradients of `params` that exist, contiguous (a strided one is replaced by a
// contiguous copy: clip_grad_norm scales the stored gradient in place) and on one device.
std::vector<Tensor> gradients(const char* op, const std::vector<Tensor>& params) {
  std::vector<Tensor> grads;
  for (const Tensor& p : params) {
    Tensor g = p.Grad();
    if (!g.defined()) continue;
    if (!g.is_contiguous()) {
      g = g.Contiguous();
      Tensor(p).SetGrad(g);
    }
    ZERO_CHECK(grads.empty() || g.device() == grads.front().device(), op, ": gradients on ",
               grads.front().device(), " and ", g.device(), "; expected one device");
    grads.push_back(g);
  }
  return grads;
}

}  // namespace

float clip_grad_norm(const std::vector<Tensor>& params, float max_norm, float grad_scale) {
  check_bounds("clip_grad_norm", max_norm, grad_scale);
  NoGradGuard no_grad;
  const std::vector<Tensor> grads = gradients("clip_grad_norm", params);
  if (grads.empty()) return 0.0f;

  const double sum_sq = ops::sum_of_squares(grads).Item();  // the one device->host copy
  // The true norm: that of the scaled gradients over the scale (exact when it is 1).
  const float norm = ops::clip_norm(sum_sq, grad_scale);
  if (!std::isfinite(norm)) return norm;
  const float clip = ops::clip_scale(norm, max_norm);
  if (grad_scale == 1.0f) {
    if (norm > max_norm) ops::scale(grads, clip);
  } else {
    ops::scale(grads, clip / grad_scale);  // unscale and clip in one pass
  }
  return norm;
}

Tensor clip_factor(const std::vector<Tensor>& params, float max_norm, float grad_scale) {
  check_bounds("clip_factor", max_norm, grad_scale);
  NoGradGuard no_grad;
  const std::vector<Tensor> grads = gradients("clip_factor", params);
  if (grads.empty()) {
    const Device device = params.empty() ? Device::Cpu() : params.front().device();
    return Tensor::From({0.0f, 1.0f}, {2}, TensorOption().OnDevice(device));
  }
  Tensor out = Tensor::Empty({2}, TensorOption().OnDevice(grads.front().device()));  // F32
  ops::clip_factor(ops::sum_of_squares(grads), max_norm, grad_scale, out);
  return out;
}

}  // namespace zero::optim
