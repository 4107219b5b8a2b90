// Dispatch for the optimiser's multi-tensor kernels: AdamW over every parameter, and
// the sum of squares, scale and clip factor of gradient-norm clipping. Checks every
// tensor (contiguous, one device, matching shapes, dtypes) and the hyper-parameters,
// then calls the CPU (cpu/optimizer_cpu.cpp) or CUDA (cuda/optimizer.cu, grad_clip.cu)
// kernel. The optimiser classes of optim/ decide which tensors; these kernels do the
// arithmetic.
//
// Dtypes, for mixed precision: parameters and moments are the FP32 master copies;
// gradients may be f32, bf16 or f16 (read into FP32); an AdamW entry's optional
// param_copy receives the updated parameter in its own dtype, usually bf16 or f16.
#include <cmath>

#include "zero/kernels/checks.h"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {

ZERO_DEFINE_KERNEL(adamw);
ZERO_DEFINE_KERNEL(adamw_scalars);
ZERO_DEFINE_KERNEL(sum_of_squares);
ZERO_DEFINE_KERNEL(scale);
ZERO_DEFINE_KERNEL(clip_factor);

namespace {

void check_state(const char* op, const Tensor& t, const char* what, const Tensor& param) {
  check_tensor(op, t, what, DataType::F32, param.sizes());
  check_same_device(op, {&param, &t});
}

// A gradient or parameter copy: a float dtype, param's shape, contiguous, param's device.
void check_float_like(const char* op, const Tensor& t, const char* what, const Tensor& param) {
  check_float_dtype(op, t, what);
  check_tensor(op, t, what, t.dtype(), param.sizes());
  check_same_device(op, {&param, &t});
}

// Every tensor of `tensors` of a float dtype, contiguous and on the first one's device.
void check_all(const char* op, const std::vector<Tensor>& tensors) {
  for (const Tensor& t : tensors) {
    check_float_dtype(op, t, "every tensor");
    check_contiguous(op, t, "tensor");
    check_same_device(op, {&tensors.front(), &t});
  }
}

}  // namespace

namespace {

void check_hyper_parameters(const char* op, const AdamWParams& hp) {
  ZERO_CHECK(hp.step >= 1, op, ": expected a 1-based step >= 1, got ", hp.step);
  ZERO_CHECK(hp.beta1 >= 0.0f && hp.beta1 < 1.0f && hp.beta2 >= 0.0f && hp.beta2 < 1.0f, op,
             ": expected betas in [0, 1), got beta1 = ", hp.beta1, ", beta2 = ", hp.beta2);
  ZERO_CHECK(hp.lr >= 0.0f && hp.eps >= 0.0f && hp.weight_decay >= 0.0f, op,
             ": expected lr, eps and weight_decay >= 0, got lr = ", hp.lr, ", eps = ", hp.eps,
             ", weight_decay = ", hp.weight_decay);
}

// Three F32 elements on a GPU: AdamWParams::scalars.
void check_scalars(const char* op, const Tensor& t) {
  check_tensor(op, t, "scalars", DataType::F32, {3});
  ZERO_CHECK(t.device().is_cuda(), op, ": scalars on the device are for CUDA; got ",
             t.device());
}

}  // namespace

void adamw_scalars(const AdamWParams& hp, const Tensor& out) {
  check_hyper_parameters("adamw_scalars", hp);
  check_scalars("adamw_scalars", out);
  adamw_scalars_stub(out.device(), hp, out);
}

void adamw(const std::vector<AdamWTensor>& tensors, const AdamWParams& hp) {
  const char* op = "adamw";
  check_hyper_parameters(op, hp);
  if (tensors.empty()) return;
  const Tensor& first = tensors.front().param;
  for (const AdamWTensor& e : tensors) {
    check_state(op, e.param, "param", e.param);
    check_same_device(op, {&first, &e.param});
    check_float_like(op, e.grad, "grad", e.param);
    if (e.param_copy.defined()) check_float_like(op, e.param_copy, "param_copy", e.param);
    check_state(op, e.exp_avg, "m (first moment)", e.param);
    check_state(op, e.exp_avg_sq, "v (second moment)", e.param);
  }
  if (hp.grad_factor.defined()) {
    check_scalar(op, hp.grad_factor, "grad_factor");
    check_contiguous(op, hp.grad_factor, "grad_factor");
    check_same_device(op, {&first, &hp.grad_factor});
  }
  if (hp.scalars.defined()) {
    check_scalars(op, hp.scalars);
    check_same_device(op, {&first, &hp.scalars});
  }
  adamw_stub(first.device(), tensors, hp);
}

void adamw_update(const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v,
                  const AdamWParams& hp) {
  adamw({{param, grad, m, v, true}}, hp);
}

Tensor sum_of_squares(const std::vector<Tensor>& tensors) {
  if (tensors.empty()) return Tensor::Zeros({1});
  check_all("sum_of_squares", tensors);
  return sum_of_squares_stub(tensors.front().device(), tensors);
}

void scale(const std::vector<Tensor>& tensors, float factor) {
  if (tensors.empty()) return;
  check_all("scale", tensors);
  scale_stub(tensors.front().device(), tensors, factor);
}

void clip_factor(const Tensor& sum_sq, float max_norm, float grad_scale, const Tensor& out) {
  const char* op = "clip_factor";
  ZERO_CHECK(max_norm > 0.0f, op, ": expected max_norm > 0, got ", max_norm);
  ZERO_CHECK(std::isfinite(grad_scale) && grad_scale > 0.0f, op,
             ": expected a finite, positive grad_scale, got ", grad_scale);
  check_scalar(op, sum_sq, "sum of squares");
  check_contiguous(op, sum_sq, "sum of squares");
  check_tensor(op, out, "out (norm and factor)", DataType::F32, {2});
  check_same_device(op, {&sum_sq, &out});
  clip_factor_stub(out.device(), sum_sq, max_norm, grad_scale, out);
}

}  // namespace zero::ops
