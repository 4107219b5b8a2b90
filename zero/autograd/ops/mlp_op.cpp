// Forward and backward of a GPT's MLP as one node (OpMlp, declared in fused_ops.h with
// the other fused ops), and its functional entry `mlp`. The kernels are those of
// OpLinearGelu and OpLinear, in the same order; what differs is what the node keeps.
#include "zero/autograd/ops/fused_ops.h"

#include <string>
#include <vector>

#include "zero/autograd/functional.h"
#include "zero/kernels/tensor_ops.h"

namespace zero {
namespace autograd {

// Note [Recomputing the GeLU]
// As two ops, linear_gelu then linear, the MLP keeps two [N, 4C] tensors for the
// backward: the pre-activation (for GeLU's derivative) and the hidden layer gelu(pre)
// (the second Linear's input, for its weight gradient). They are the largest
// activations of a block: for GPT-2 at B 8, T 1024 each is 8192 x 3072 values, 50 MB in
// BF16, and the hidden layers of the 12 blocks alone are 0.6 GB. This node keeps only
// pre and makes the hidden layer again in the backward, in the pass that applies GeLU's
// derivative to g W_proj (ops::matmul_gelu_backward): each element's tanh serves both.
// The backward then holds three [N, 4C] tensors at its peak (pre, the hidden layer and
// grad_pre) until c_proj's weight gradient is made, one more than if the hidden layer
// were made alone first; for GPT-2 in BF16 that is 50 MB beside the 3.8 GB of the step's
// peak. llm.c trades the same way (its `recompute` setting).
// The recomputed layer is gelu(pre) of the stored pre. On the CPU, and on CUDA in IEEE
// FP32 and TF32, that is how the forward made it too, so the two agree bit for bit.
// Otherwise the forward's came from cuBLASLt's GeLU epilogue, evaluated on the FP32 pre
// before it was rounded (Note [GeLU in the GEMM's epilogue] in
// kernels/cuda/gelu_epilogue.cu): with FP32 tensors the two differ by cuBLASLt's
// evaluation of tanh, in 16 bits by at most about one rounding of the layer.
// The second Linear's weight gradient is then that of a hidden layer this close to the
// forward's.

std::vector<Tensor> OpMlp::OpValue_(const std::vector<Tensor>& in) {
  const Tensor& fc_weight = in[1];                     // (H, C)
  const Tensor& proj_weight = in[3];                   // (C, H)
  const Tensor x = in[0].View({-1, fc_weight.size(1)});  // (N, C)
  Tensor hidden = Tensor::Empty({x.size(0), fc_weight.size(0)}, x.options());  // (N, H)
  Tensor pre = Tensor::Empty(hidden.sizes(), hidden.options());                // (N, H)
  ops::linear_gelu_forward(x, fc_weight, in[2], hidden, pre);
  Tensor y = Tensor::Empty({x.size(0), proj_weight.size(0)}, x.options());  // (N, C)
  const Tensor residual = in.size() > 5 ? in[5].View(y.sizes()) : Tensor();  // (N, C)
  ops::linear_forward(hidden, proj_weight, in[4], y, residual);
  pre_ = pre.Detach();
  return {y.View(in[0].sizes())};  // (..., C); `hidden` is freed here
}

Tensor OpMlp::ColumnSumsOfGrad(size_t k) {
  if (k != 0 || !needs_grad(4)) return Tensor();
  const Tensor& proj_bias = inputs()[4];
  grad_proj_bias_ =
      Tensor::Empty(proj_bias.sizes(), proj_bias.options().WithDtype(grad_dtype(proj_bias)));
  return grad_proj_bias_;
}

std::vector<Tensor> OpMlp::Backward_(const std::vector<Tensor>& grad) {
  const Tensor& proj_weight = inputs()[3];                                // (C, H)
  const Tensor g = grad[0].Contiguous().View({-1, proj_weight.size(0)});  // (N, C)
  Tensor grad_proj_weight, grad_proj_bias;
  const Tensor& proj_bias = inputs()[4];  // (C)
  if (needs_grad(3)) {  // in FP32 past a cast (Note [Gradients past a cast] in engine.cpp)
    grad_proj_weight = Tensor::Empty(proj_weight.sizes(),
                                     proj_weight.options().WithDtype(grad_dtype(proj_weight)));
  }
  // proj_bias's gradient may have been summed by the pass that wrote g (ColumnSumsOfGrad).
  const bool bias_made = grad_proj_bias_.defined();
  grad_proj_bias = std::move(grad_proj_bias_);
  grad_proj_bias_ = Tensor();
  if (needs_grad(4) && !bias_made) {
    grad_proj_bias = Tensor::Empty(proj_bias.sizes(),
                                   proj_bias.options().WithDtype(grad_dtype(proj_bias)));
  }
  // A 16-bit c_proj's bias gradient is a column sum of g of its own, made first while g
  // is in L2: after the GeLU pass's 200 MB (a char model's BF16 layer) it came from
  // memory (docs/speed_notes.md, item 78). In FP32 the sum stays with the weight
  // gradient, whose GEMM may make it in its epilogue (cuBLASLt's BGRADB).
  const bool to_sum = grad_proj_bias.defined() && !bias_made;
  const bool bias_first = to_sum && g.dtype() != DataType::F32;
  if (bias_first) ops::linear_backward_bias(g, grad_proj_bias);
  const bool bias_with_weight = to_sum && !bias_first;
  const bool proj_grads = grad_proj_weight.defined() || bias_with_weight;
  const bool input_grads = needs_grad(0) || needs_grad(1) || needs_grad(2);
  Tensor hidden;  // (N, H), made again: Note [Recomputing the GeLU]
  if (proj_grads) hidden = Tensor::Empty(pre_.sizes(), pre_.options());
  Tensor grad_pre, grad_fc_bias;  // (N, H), (H)
  if (input_grads) {
    // grad_pre = (g W_proj) gelu'(pre), the hidden layer and c_fc's bias gradient in the
    // same pass over pre (Note [GeLU's derivative after the GEMM] and Note [The bias
    // gradient in the GeLU pass] in kernels/cuda/gelu_epilogue.cu).
    grad_pre = Tensor::Empty(pre_.sizes(), pre_.options());
    if (needs_grad(2)) {
      grad_fc_bias = Tensor::Empty({pre_.size(1)},
                                   inputs()[2].options().WithDtype(grad_dtype(inputs()[2])));
    }
    ops::matmul_gelu_backward(g, proj_weight, pre_, grad_pre, hidden, grad_fc_bias);
  } else if (proj_grads) {
    ops::unary(ops::UnaryOp::kGelu, pre_, hidden);
  }
  if (proj_grads) {
    ops::linear_backward_params(g, hidden, grad_proj_weight,
                                bias_with_weight ? grad_proj_bias : Tensor());
    hidden = Tensor();  // freed before the first Linear's gradients
  }
  std::vector<Tensor> grads = {Tensor(), Tensor(), Tensor()};
  if (input_grads) grads = linear_grads(*this, grad_pre, true, grad_fc_bias);  // 0, 1, 2
  grads.push_back(grad_proj_weight);
  grads.push_back(grad_proj_bias);
  if (inputs().size() > 5) grads.push_back(needs_grad(5) ? grad[0] : Tensor());  // residual
  return grads;
}

}  // namespace autograd

namespace {

// "[2, 3]", or "undefined", for error messages.
std::string shape_of(const Tensor& t) {
  return t.defined() ? shape_to_string(t.sizes()) : "undefined";
}

}  // namespace

Tensor mlp(const Tensor& x, const Tensor& fc_weight, const Tensor& fc_bias,
           const Tensor& proj_weight, const Tensor& proj_bias, const Tensor& residual) {
  ZERO_CHECK(fc_weight.defined() && fc_weight.dim() == 2,
             "mlp: expected fc_weight of shape [H, C], got ", shape_of(fc_weight));
  const int64_t h = fc_weight.size(0), c = fc_weight.size(1);
  ZERO_CHECK(x.defined() && x.dim() >= 1 && x.size(-1) == c, "mlp: expected x of shape [..., ",
             c, "] for fc_weight ", shape_to_string(fc_weight.sizes()), ", got ", shape_of(x));
  ZERO_CHECK(fc_bias.defined() && fc_bias.sizes() == Shape{h},
             "mlp: expected fc_bias of shape [", h, "], got ", shape_of(fc_bias));
  ZERO_CHECK(proj_weight.defined() && proj_weight.sizes() == (Shape{c, h}),
             "mlp: expected proj_weight of shape [", c, ", ", h, "], got ", shape_of(proj_weight));
  ZERO_CHECK(proj_bias.defined() && proj_bias.sizes() == Shape{c},
             "mlp: expected proj_bias of shape [", c, "], got ", shape_of(proj_bias));
  std::vector<Tensor> inputs = {x.Contiguous(), fc_weight.Contiguous(), fc_bias.Contiguous(),
                                proj_weight.Contiguous(), proj_bias.Contiguous()};
  if (residual.defined()) {
    ZERO_CHECK(residual.sizes() == x.sizes() && residual.dtype() == x.dtype(),
               "mlp: expected residual of x's shape ", shape_of(x), " and dtype ",
               to_string(x.dtype()), ", got ", shape_of(residual), " ",
               to_string(residual.dtype()));
    inputs.push_back(residual.Contiguous());
  }
  return autograd::RunOp<autograd::OpMlp>(inputs);
}

}  // namespace zero
