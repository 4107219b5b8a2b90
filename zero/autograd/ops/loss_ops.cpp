// Forward and backward of the fused cross-entropy, and `cross_entropy`, which checks
// the shapes a user is most likely to get wrong before anything runs.
#include "zero/autograd/ops/loss_ops.h"

#include "zero/autograd/functional.h"
#include "zero/kernels/tensor_ops.h"

namespace zero {
namespace autograd {

std::vector<Tensor> OpCrossEntropy::OpValue_(const std::vector<Tensor>& in) {
  const Tensor& logits = in[0];  // (N, V)
  Tensor loss = Tensor::Empty({}, logits.options());          // ()
  lse_ = Tensor::Empty({logits.size(0)}, logits.options());  // (N)
  ops::cross_entropy_forward(logits, in[1], ignore_index_, loss, lse_);
  return {loss};
}

std::vector<Tensor> OpCrossEntropy::Backward_(const std::vector<Tensor>& grad) {
  const Tensor& logits = inputs()[0];
  Tensor grad_logits = Tensor::Empty(logits.sizes(), logits.options());  // (N, V)
  ops::cross_entropy_backward(logits, inputs()[1], lse_, grad[0], ignore_index_, grad_logits);
  return {grad_logits, Tensor()};
}

}  // namespace autograd

Tensor cross_entropy(const Tensor& logits, const Tensor& targets, int ignore_index) {
  ZERO_CHECK(logits.dim() == 2, "cross_entropy: expected logits of shape [N, V], got ",
             shape_to_string(logits.sizes()), "; flatten (B, T, V) logits with Reshape({-1, V})");
  ZERO_CHECK(logits.dtype() == DataType::F32, "cross_entropy: expected f32 logits, got ",
             to_string(logits.dtype()));
  ZERO_CHECK(targets.dtype() == DataType::I32, "cross_entropy: expected i32 targets, got ",
             to_string(targets.dtype()));
  ZERO_CHECK(targets.dim() == 1 && targets.size(0) == logits.size(0),
             "cross_entropy: expected targets of shape [", logits.size(0), "] for logits ",
             shape_to_string(logits.sizes()), ", got ", shape_to_string(targets.sizes()));
  return autograd::RunOp<autograd::OpCrossEntropy>({logits.Contiguous(), targets.Contiguous()},
                                                    ignore_index);
}

}  // namespace zero
