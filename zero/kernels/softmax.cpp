// Dispatch for softmax and log-softmax over the last dimension, forward and
// backward. The kernels treat a contiguous tensor as rows of its last dimension,
// so every operand must be contiguous, of one shape and one dtype (F32, BF16 or F16;
// the autograd ops in autograd/ops/softmax_ops.cpp call Contiguous() first).
#include "zero/kernels/checks.h"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {

ZERO_DEFINE_KERNEL(softmax_forward);
ZERO_DEFINE_KERNEL(softmax_backward);
ZERO_DEFINE_KERNEL(log_softmax_forward);
ZERO_DEFINE_KERNEL(log_softmax_backward);

namespace {

// Every operand: contiguous, of `ref`'s shape and float dtype, at least 1-d.
void check_rows(const char* op, const Tensor& ref, const std::vector<const Tensor*>& operands) {
  check_same_device(op, operands);
  ZERO_CHECK(ref.dim() >= 1, op, ": expected at least a 1-d tensor, got a 0-d tensor");
  check_float_dtype(op, ref, "every operand");
  for (const Tensor* t : operands) check_tensor(op, *t, "every operand", ref.dtype(), ref.sizes());
}

}  // namespace

void softmax_forward(const Tensor& x, const Tensor& y) {
  check_rows("softmax", x, {&x, &y});
  softmax_forward_stub(x.device(), x, y);
}

void softmax_backward(const Tensor& y, const Tensor& grad_y, const Tensor& grad_x) {
  check_rows("softmax backward", y, {&y, &grad_y, &grad_x});
  softmax_backward_stub(y.device(), y, grad_y, grad_x);
}

void log_softmax_forward(const Tensor& x, const Tensor& y) {
  check_rows("log_softmax", x, {&x, &y});
  log_softmax_forward_stub(x.device(), x, y);
}

void log_softmax_backward(const Tensor& y, const Tensor& grad_y, const Tensor& grad_x) {
  check_rows("log_softmax backward", y, {&y, &grad_y, &grad_x});
  log_softmax_backward_stub(y.device(), y, grad_y, grad_x);
}

}  // namespace zero::ops
