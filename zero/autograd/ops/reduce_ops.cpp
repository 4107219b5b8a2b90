// Forward and backward of the reductions, and the functional API over them.
#include "zero/autograd/ops/reduce_ops.h"

#include "zero/autograd/functional.h"
#include "zero/kernels/tensor_ops.h"

namespace zero {
namespace autograd {

std::vector<Tensor> OpSum::OpValue_(const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  if (dim_ == kAllDims) {
    Tensor out = Tensor::Empty({}, x.options());
    ops::sum_all(x, out);
    return {out};
  }
  Shape kept = x.sizes();
  kept[dim_] = 1;
  Tensor out = Tensor::Empty(kept, x.options());  // (..., 1, ...)
  ops::sum(x, dim_, out);
  return {keepdim_ ? out : out.Squeeze(dim_)};
}

std::vector<Tensor> OpSum::Backward_(const std::vector<Tensor>& grad) {
  const Shape& in_sizes = inputs()[0].sizes();
  Tensor g = grad[0];
  if (dim_ == OpSum::kAllDims) {
    g = g.Reshape(Shape(in_sizes.size(), 1));
  } else if (!keepdim_) {
    g = g.Unsqueeze(dim_);
  }
  return {g.Expand(in_sizes)};  // a stride-0 view: no copy
}

}  // namespace autograd

using autograd::OpSum;
using autograd::RunOp;

Tensor sum(const Tensor& x) { return RunOp<OpSum>({x}, OpSum::kAllDims, false); }

Tensor sum(const Tensor& x, int64_t dim, bool keepdim) {
  ZERO_CHECK(x.dim() > 0, "sum over a dimension needs at least 1-d input, got a 0-d tensor");
  return RunOp<OpSum>({x}, normalize_dim(dim, x.dim()), keepdim);
}

}  // namespace zero
