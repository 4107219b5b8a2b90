// Forward and backward of the Linear (OpLinear, declared in fused_ops.h with the other
// fused ops), the Linear backward that OpLinearGelu and OpMlp share (linear_grads), and
// the functional entry `linear`. The kernels are ops::linear_forward, ops::matmul and
// ops::linear_backward_params (kernels/linear.cpp).
#include <vector>

#include "zero/autograd/functional.h"
#include "zero/autograd/ops/fused_ops.h"
#include "zero/kernels/tensor_ops.h"

namespace zero {
namespace autograd {

std::vector<Tensor> OpLinear::OpValue_(const std::vector<Tensor>& in) {
  bias_ = in.size() > (adds_residual_ ? 3u : 2u);
  const Tensor& weight = in[1];                                      // (out, in)
  const Tensor bias = bias_ ? in[2] : Tensor();                      // (out) or undefined
  const Tensor x = in[0].View({-1, weight.size(1)});                 // (N, in)
  Tensor out = Tensor::Empty({x.size(0), weight.size(0)}, x.options());  // (N, out)
  const Tensor residual = adds_residual_ ? in.back().View(out.sizes()) : Tensor();
  ops::linear_forward(x, weight, bias, out, residual);
  Shape sizes = in[0].sizes();
  sizes.back() = weight.size(0);
  return {out.View(sizes)};  // (..., out)
}

std::vector<Tensor> linear_grads(const TensorOp& op, const Tensor& g, bool has_bias,
                                 Tensor grad_bias) {
  const Tensor& weight = op.inputs()[1];
  const Tensor x = op.inputs()[0].View({-1, weight.size(1)});  // (N, in)
  const Tensor made = grad_bias;  // (out) or undefined
  Tensor grad_x, grad_weight;
  // The parameters' gradients first, while g, just written, may still be in L2 for the
  // bias's column sums; then grad_x. In FP32 when they are casts of FP32 parameters:
  // Note [Gradients past a cast] in engine.cpp.
  if (op.needs_grad(1)) {
    grad_weight = Tensor::Empty(weight.sizes(), weight.options().WithDtype(grad_dtype(weight)));
  }
  if (has_bias && op.needs_grad(2) && !made.defined()) {
    const Tensor& bias = op.inputs()[2];
    grad_bias = Tensor::Empty(bias.sizes(), bias.options().WithDtype(grad_dtype(bias)));
  }
  if (grad_weight.defined() || (grad_bias.defined() && !made.defined())) {
    ops::linear_backward_params(g, x, grad_weight, made.defined() ? Tensor() : grad_bias);
  }
  if (op.needs_grad(0)) {
    grad_x = Tensor::Empty(x.sizes(), x.options());  // (N, in)
    ops::matmul(g, weight, grad_x);
    grad_x = grad_x.View(op.inputs()[0].sizes());  // (..., in)
  }
  std::vector<Tensor> grads = {grad_x, grad_weight};
  if (has_bias) grads.push_back(grad_bias);
  return grads;
}

Tensor OpLinear::ColumnSumsOfGrad(size_t k) {
  if (k != 0 || !bias_ || !needs_grad(2)) return Tensor();
  const Tensor& bias = inputs()[2];
  grad_bias_ = Tensor::Empty(bias.sizes(), bias.options().WithDtype(grad_dtype(bias)));
  return grad_bias_;
}

std::vector<Tensor> OpLinear::Backward_(const std::vector<Tensor>& grad) {
  const int64_t out = inputs()[1].size(0);
  const Tensor made = std::move(grad_bias_);  // (out) or undefined
  grad_bias_ = Tensor();
  std::vector<Tensor> grads =
      linear_grads(*this, grad[0].Contiguous().View({-1, out}), bias_, made);  // g: (N, out)
  // The residual was added: its gradient is g itself, of its shape (the output's).
  if (adds_residual_) grads.push_back(needs_grad(grads.size()) ? grad[0] : Tensor());
  return grads;
}

}  // namespace autograd

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& residual) {
  ZERO_CHECK(weight.dim() == 2, "linear: expected weight of shape [out, in], got ",
             shape_to_string(weight.sizes()));
  ZERO_CHECK(x.dim() >= 1 && x.size(-1) == weight.size(1), "linear: expected x of shape [..., ",
             weight.size(1), "] for weight ", shape_to_string(weight.sizes()), ", got ",
             shape_to_string(x.sizes()));
  ZERO_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == weight.size(0)),
             "linear: expected bias of shape [", weight.size(0), "] for weight ",
             shape_to_string(weight.sizes()), ", got ", shape_to_string(bias.sizes()));
  std::vector<Tensor> inputs = {x.Contiguous(), weight.Contiguous()};
  if (bias.defined()) inputs.push_back(bias.Contiguous());
  if (residual.defined()) {
    Shape out = x.sizes();
    out.back() = weight.size(0);
    ZERO_CHECK(residual.sizes() == out, "linear: expected residual of shape ",
               shape_to_string(out), " (the output's), got ", shape_to_string(residual.sizes()));
    ZERO_CHECK(residual.dtype() == x.dtype(), "linear: expected residual of x's dtype ",
               to_string(x.dtype()), ", got ", to_string(residual.dtype()));
    inputs.push_back(residual.Contiguous());
  }
  return autograd::RunOp<autograd::OpLinear>(inputs, residual.defined());
}

}  // namespace zero
