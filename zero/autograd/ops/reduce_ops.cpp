// Forward and backward of the reductions (sum, mean, max), and the functional API
// over them, including argmax (max's indices, with no gradient).
#include "zero/autograd/ops/reduce_ops.h"

#include "zero/autograd/functional.h"
#include "zero/kernels/tensor_ops.h"

namespace zero {
namespace autograd {

Shape OpReduce::KeptShape_(const Tensor& x) const {
  if (dim_ == kAllDims) return {};
  Shape kept = x.sizes();
  kept[dim_] = 1;
  return kept;
}

Tensor OpReduce::UserView_(const Tensor& kept) const {
  return dim_ == kAllDims || keepdim_ ? kept : kept.Squeeze(dim_);
}

Tensor OpReduce::GradKept_(const Tensor& grad) const {
  const Shape& in_sizes = inputs()[0].sizes();
  if (dim_ == kAllDims) return grad.Reshape(Shape(in_sizes.size(), 1));
  return keepdim_ ? grad : grad.Unsqueeze(dim_);
}

std::vector<Tensor> OpSum::OpValue_(const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  Tensor out = Tensor::Empty(KeptShape_(x), x.options());  // (..., 1, ...) or ()
  if (dim_ == kAllDims) {
    ops::sum_all(x, out);
  } else {
    ops::sum(x, dim_, out);
  }
  return {UserView_(out)};
}

std::vector<Tensor> OpSum::Backward_(const std::vector<Tensor>& grad) {
  return {GradKept_(grad[0]).Expand(inputs()[0].sizes())};  // a stride-0 view: no copy
}

std::vector<Tensor> OpMean::OpValue_(const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  Tensor out = Tensor::Empty(KeptShape_(x), x.options());  // (..., 1, ...) or ()
  if (dim_ == kAllDims) {
    ops::mean_all(x, out);
  } else {
    ops::mean(x, dim_, out);
  }
  return {UserView_(out)};
}

std::vector<Tensor> OpMean::Backward_(const std::vector<Tensor>& grad) {
  const Tensor& x = inputs()[0];
  const int64_t n = dim_ == kAllDims ? x.numel() : x.size(dim_);
  // Scale the small reduced gradient, then broadcast it: n times fewer multiplies.
  return {(GradKept_(grad[0]) * (1.0f / static_cast<float>(n))).Expand(x.sizes())};
}

std::vector<Tensor> OpMax::OpValue_(const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  const Shape kept = KeptShape_(x);
  Tensor values = Tensor::Empty(kept, x.options());                          // (..., 1, ...)
  indices_ = Tensor::Empty(kept, x.options().WithDtype(DataType::I32));     // (..., 1, ...)
  if (dim_ == kAllDims) {
    ops::max_all(x, values, indices_);
  } else {
    ops::max(x, dim_, values, indices_);
  }
  return {UserView_(values)};
}

std::vector<Tensor> OpMax::Backward_(const std::vector<Tensor>& grad) {
  const Shape& in_sizes = inputs()[0].sizes();
  Tensor grad_x = Tensor::Empty(in_sizes, grad[0].options());
  if (dim_ == kAllDims) {
    // The saved index is a row-major position: scatter into the flattened input.
    const Shape flat{grad_x.numel()};
    ops::max_backward(grad[0].Reshape({1}), indices_.View({1}), 0, grad_x.View(flat));
  } else {
    ops::max_backward(GradKept_(grad[0]), indices_, dim_, grad_x);
  }
  return {grad_x};
}

}  // namespace autograd

using autograd::OpMax;
using autograd::OpMean;
using autograd::OpReduce;
using autograd::OpSum;
using autograd::RunOp;

namespace {

// Normalises `dim` for a reduction over one dimension of `x`.
int reduction_dim(const char* op, const Tensor& x, int64_t dim) {
  ZERO_CHECK(x.dim() > 0, op, " over a dimension needs at least 1-d input, got a 0-d tensor");
  return normalize_dim(dim, x.dim());
}

}  // namespace

Tensor sum(const Tensor& x) { return RunOp<OpSum>({x}, OpReduce::kAllDims, false); }

Tensor sum(const Tensor& x, int64_t dim, bool keepdim) {
  return RunOp<OpSum>({x}, reduction_dim("sum", x, dim), keepdim);
}

Tensor mean(const Tensor& x) { return RunOp<OpMean>({x}, OpReduce::kAllDims, false); }

Tensor mean(const Tensor& x, int64_t dim, bool keepdim) {
  return RunOp<OpMean>({x}, reduction_dim("mean", x, dim), keepdim);
}

Tensor max(const Tensor& x) { return RunOp<OpMax>({x}, OpReduce::kAllDims, false); }

Tensor max(const Tensor& x, int64_t dim, bool keepdim) {
  return RunOp<OpMax>({x}, reduction_dim("max", x, dim), keepdim);
}

// Not an op: indices have no gradient, so there is nothing to record.
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim) {
  const int d = reduction_dim("argmax", x, dim);
  Shape kept = x.sizes();
  kept[d] = 1;
  Tensor values = Tensor::Empty(kept, x.options());                            // (..., 1, ...)
  Tensor indices = Tensor::Empty(kept, x.options().WithDtype(DataType::I32));  // (..., 1, ...)
  ops::max(x, d, values, indices);
  return keepdim ? indices : indices.Squeeze(d);
}

}  // namespace zero
