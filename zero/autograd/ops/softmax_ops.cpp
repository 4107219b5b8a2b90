// Forward and backward of softmax and log-softmax over the last dimension, and the
// functional API over them. The numerics (subtracting the row maximum) are in the
// kernels: see Note [Stable softmax] in kernels/cpu/softmax_cpu.cpp.
#include "zero/autograd/ops/softmax_ops.h"

#include "zero/autograd/functional.h"
#include "zero/kernels/tensor_ops.h"

namespace zero {
namespace autograd {

std::vector<Tensor> OpSoftmax::OpValue_(const std::vector<Tensor>& in) {
  Tensor y = Tensor::Empty(in[0].sizes(), in[0].options());  // (..., C)
  ops::softmax_forward(in[0], y);
  output_ = y.Detach();
  return {y};
}

// The incoming gradient may be a broadcast view (e.g. from sum's backward): the
// kernel reads rows, so it is made contiguous.
std::vector<Tensor> OpSoftmax::Backward_(const std::vector<Tensor>& grad) {
  Tensor grad_x = Tensor::Empty(output_.sizes(), grad[0].options());  // (..., C)
  ops::softmax_backward(output_, grad[0].Contiguous(), grad_x);
  return {grad_x};
}

std::vector<Tensor> OpLogSoftmax::OpValue_(const std::vector<Tensor>& in) {
  Tensor y = Tensor::Empty(in[0].sizes(), in[0].options());  // (..., C)
  ops::log_softmax_forward(in[0], y);
  output_ = y.Detach();
  return {y};
}

std::vector<Tensor> OpLogSoftmax::Backward_(const std::vector<Tensor>& grad) {
  Tensor grad_x = Tensor::Empty(output_.sizes(), grad[0].options());  // (..., C)
  ops::log_softmax_backward(output_, grad[0].Contiguous(), grad_x);
  return {grad_x};
}

}  // namespace autograd

namespace {

void check_softmax_input(const char* op, const Tensor& x) {
  ZERO_CHECK(x.dim() >= 1, op, ": expected at least a 1-d tensor, got a 0-d tensor");
}

}  // namespace

// Contiguous() is recorded (as a copy), so the gradient still reaches a strided x.
Tensor softmax(const Tensor& x) {
  check_softmax_input("softmax", x);
  return autograd::RunOp<autograd::OpSoftmax>({x.Contiguous()});
}

Tensor log_softmax(const Tensor& x) {
  check_softmax_input("log_softmax", x);
  return autograd::RunOp<autograd::OpLogSoftmax>({x.Contiguous()});
}

}  // namespace zero
