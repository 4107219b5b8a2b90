// Dispatch for element-wise kernels: check, then call the CPU or CUDA version.
#include "zero/kernels/cpu/cpu_ops.h"
#include "zero/kernels/cuda/cuda_ops.h"

namespace zero::ops {

void check_same_device(const char* op, const std::vector<const Tensor*>& tensors) {
  const Tensor* first = nullptr;
  for (const Tensor* t : tensors) {
    if (t == nullptr || !t->defined()) continue;
    if (first == nullptr) {
      first = t;
      continue;
    }
    ZERO_CHECK(t->device() == first->device(), op, ": expected all tensors on one device, got ",
               first->device(), " and ", t->device(), "; move them with .To(device) first");
  }
}

namespace {

void check_f32(const char* op, const Tensor& t, const char* what) {
  ZERO_CHECK(t.dtype() == DataType::F32, op, ": expected ", what, " of dtype f32, got ",
             to_string(t.dtype()));
}

}  // namespace

void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  check_same_device("binary op", {&a, &b, &out});
  check_f32("binary op", a, "the first operand");
  check_f32("binary op", b, "the second operand");
  check_f32("binary op", out, "the output");
  ZERO_CHECK(broadcast_shapes(a.sizes(), b.sizes()) == out.sizes(), "binary op: operands ",
             shape_to_string(a.sizes()), " and ", shape_to_string(b.sizes()),
             " do not broadcast to the output shape ", shape_to_string(out.sizes()));
  if (out.device().is_cpu()) {
    binary_cpu(op, a, b, out);
  } else {
    binary_cuda(op, a, b, out);
  }
}

void binary_scalar(BinaryOp op, const Tensor& a, float s, const Tensor& out, bool scalar_first) {
  check_same_device("binary op", {&a, &out});
  check_f32("binary op", a, "the tensor operand");
  check_f32("binary op", out, "the output");
  ZERO_CHECK(a.sizes() == out.sizes(), "binary op with a scalar: expected output shape ",
             shape_to_string(a.sizes()), ", got ", shape_to_string(out.sizes()));
  if (out.device().is_cpu()) {
    binary_scalar_cpu(op, a, s, out, scalar_first);
  } else {
    binary_scalar_cuda(op, a, s, out, scalar_first);
  }
}

void unary(UnaryOp op, const Tensor& x, const Tensor& out) {
  check_same_device("unary op", {&x, &out});
  check_f32("unary op", x, "the input");
  check_f32("unary op", out, "the output");
  ZERO_CHECK(x.sizes() == out.sizes(), "unary op: expected output shape ",
             shape_to_string(x.sizes()), ", got ", shape_to_string(out.sizes()));
  if (out.device().is_cpu()) {
    unary_cpu(op, x, out);
  } else {
    unary_cuda(op, x, out);
  }
}

void unary_backward(UnaryOp op, const Tensor& x, const Tensor& y, const Tensor& grad_y,
                    const Tensor& grad_x) {
  check_same_device("unary backward", {&x, &y, &grad_y, &grad_x});
  for (const Tensor* t : {&x, &y, &grad_y, &grad_x}) {
    ZERO_CHECK(t->sizes() == x.sizes(), "unary backward: expected shape ",
               shape_to_string(x.sizes()), ", got ", shape_to_string(t->sizes()));
    check_f32("unary backward", *t, "every operand");
  }
  if (x.device().is_cpu()) {
    unary_backward_cpu(op, x, y, grad_y, grad_x);
  } else {
    unary_backward_cuda(op, x, y, grad_y, grad_x);
  }
}

}  // namespace zero::ops
