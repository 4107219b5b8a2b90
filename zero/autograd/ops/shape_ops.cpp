// Forward and backward of masked_fill and concat, and the functional API over them.
// Argument checks (mask broadcasting, matching sizes) are in kernels/shape_ops.cpp.
#include "zero/autograd/ops/shape_ops.h"

#include "zero/autograd/functional.h"
#include "zero/kernels/tensor_ops.h"

namespace zero {
namespace autograd {

std::vector<Tensor> OpMaskedFill::OpValue_(const std::vector<Tensor>& in) {
  Tensor out = Tensor::Empty(in[0].sizes(), in[0].options());
  ops::masked_fill(in[0], in[1], value_, out);
  return {out};
}

std::vector<Tensor> OpMaskedFill::Backward_(const std::vector<Tensor>& grad) {
  Tensor grad_x = Tensor::Empty(grad[0].sizes(), grad[0].options());
  ops::masked_fill(grad[0], inputs()[1], 0.0f, grad_x);
  return {grad_x, Tensor()};
}

std::vector<Tensor> OpConcat::OpValue_(const std::vector<Tensor>& in) {
  Shape sizes = in[0].sizes();
  sizes[dim_] = 0;
  // A tensor of another rank adds nothing here; ops::concat reports it with both shapes.
  for (const Tensor& t : in) sizes[dim_] += t.dim() == in[0].dim() ? t.size(dim_) : 0;
  Tensor out = Tensor::Empty(sizes, in[0].options());
  ops::concat(in, dim_, out);
  return {out};
}

std::vector<Tensor> OpConcat::Backward_(const std::vector<Tensor>& grad) {
  std::vector<Tensor> grads(inputs().size());
  int64_t start = 0;
  for (size_t i = 0; i < grads.size(); ++i) {
    const int64_t len = inputs()[i].size(dim_);
    if (needs_grad(i)) grads[i] = grad[0].Slice(dim_, start, start + len);
    start += len;
  }
  return grads;
}

}  // namespace autograd

Tensor masked_fill(const Tensor& x, const Tensor& mask, float value) {
  return autograd::RunOp<autograd::OpMaskedFill>({x, mask}, value);
}

Tensor concat(const std::vector<Tensor>& tensors, int64_t dim) {
  ZERO_CHECK(!tensors.empty(), "concat: expected at least one tensor, got an empty list");
  ZERO_CHECK(tensors[0].dim() > 0, "concat: expected tensors of at least 1 dimension, got a "
             "0-d tensor; use Unsqueeze(0) first");
  return autograd::RunOp<autograd::OpConcat>(tensors, normalize_dim(dim, tensors[0].dim()));
}

}  // namespace zero
