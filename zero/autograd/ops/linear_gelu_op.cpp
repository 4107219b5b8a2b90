// Forward and backward of the Linear fused with the GeLU after it (OpLinearGelu, declared
// in fused_ops.h with the other fused ops), and its functional entry `linear_gelu`. The
// forward kernel is ops::linear_gelu_forward (kernels/linear.cpp); the backward uses the
// GeLU and Linear backward kernels the unfused ops use, in the same order.
#include "zero/autograd/ops/fused_ops.h"

#include <vector>

#include "zero/autograd/functional.h"
#include "zero/kernels/tensor_ops.h"

namespace zero {
namespace autograd {

std::vector<Tensor> OpLinearGelu::OpValue_(const std::vector<Tensor>& in) {
  const Tensor& weight = in[1];                          // (out, in)
  const Tensor bias = in.size() > 2 ? in[2] : Tensor();  // (out) or undefined
  const Tensor x = in[0].View({-1, weight.size(1)});     // (N, in)
  Tensor y = Tensor::Empty({x.size(0), weight.size(0)}, x.options());  // (N, out)
  Tensor pre = Tensor::Empty(y.sizes(), y.options());                  // (N, out)
  ops::linear_gelu_forward(x, weight, bias, y, pre);
  pre_ = pre.Detach();
  Shape sizes = in[0].sizes();
  sizes.back() = weight.size(0);
  return {y.View(sizes)};  // (..., out)
}

std::vector<Tensor> OpLinearGelu::Backward_(const std::vector<Tensor>& grad) {
  const Tensor g = grad[0].Contiguous().View({-1, inputs()[1].size(0)});  // (N, out)
  // dpre = g * gelu'(pre). GeLU's derivative reads only its input, so pre also stands in
  // for the output argument, which this op does not keep.
  Tensor dpre = Tensor::Empty(pre_.sizes(), pre_.options());  // (N, out)
  ops::unary_backward(ops::UnaryOp::kGelu, pre_, pre_, g, dpre);
  return linear_grads(*this, dpre, inputs().size() > 2);  // OpLinear's backward from here
}

}  // namespace autograd

Tensor linear_gelu(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  ZERO_CHECK(weight.dim() == 2, "linear_gelu: expected weight of shape [out, in], got ",
             shape_to_string(weight.sizes()));
  ZERO_CHECK(x.dim() >= 1 && x.size(-1) == weight.size(1),
             "linear_gelu: expected x of shape [..., ", weight.size(1), "] for weight ",
             shape_to_string(weight.sizes()), ", got ", shape_to_string(x.sizes()));
  ZERO_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == weight.size(0)),
             "linear_gelu: expected bias of shape [", weight.size(0), "] for weight ",
             shape_to_string(weight.sizes()), ", got ", shape_to_string(bias.sizes()));
  std::vector<Tensor> inputs = {x.Contiguous(), weight.Contiguous()};
  if (bias.defined()) inputs.push_back(bias.Contiguous());
  return autograd::RunOp<autograd::OpLinearGelu>(inputs);
}

}  // namespace zero
