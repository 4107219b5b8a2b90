// Forward and backward of the autograd cast, and its functional API, to_dtype.
#include "zero/autograd/ops/cast_ops.h"

#include "zero/autograd/functional.h"
#include "zero/kernels/tensor_ops.h"

namespace zero {
namespace autograd {

std::vector<Tensor> OpToDtype::OpValue_(const std::vector<Tensor>& in) {
  if (values_.defined()) {  // a cached cast: a tensor of its own on the kept buffer
    Tensor out = values_.Detach();
    values_ = Tensor();
    return {out};
  }
  Tensor out = Tensor::Empty(in[0].sizes(), in[0].options().WithDtype(dtype_));
  ops::convert(in[0], out);
  return {out};
}

std::vector<Tensor> OpToDtype::Backward_(const std::vector<Tensor>& grad) {
  const Tensor& x = inputs()[0];
  Tensor grad_x = Tensor::Empty(x.sizes(), x.options());
  ops::convert(grad[0], grad_x);
  return {grad_x};
}

}  // namespace autograd

Tensor to_dtype(const Tensor& x, DataType dtype) {
  if (!x.defined() || x.dtype() == dtype) return x;  // no node: the same tensor
  return autograd::RunOp<autograd::OpToDtype>({x}, dtype);
}

}  // namespace zero
