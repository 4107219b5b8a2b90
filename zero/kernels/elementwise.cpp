// Dispatch for element-wise kernels: check, then call the kernel's stub (dispatch.h).
#include "zero/kernels/checks.h"
#include "zero/kernels/dispatch.h"

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

// One stub per kernel of this family; each backend fills its slot (dispatch.h).
ZERO_DEFINE_KERNEL(binary);
ZERO_DEFINE_KERNEL(binary_scalar);
ZERO_DEFINE_KERNEL(unary);
ZERO_DEFINE_KERNEL(unary_backward);

// The kernels are in cpu/elementwise_cpu.cpp and cuda/elementwise.cu; they trust
// these checks, and each picks its element type with dtype_dispatch.h.
void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  check_same_device("binary op", {&a, &b, &out});
  check_same_dtype("binary op", out, {&a, &b});
  // Broadcasting is NumPy's: sizes align from the right, and each pair of sizes is
  // equal or one of them is 1, which then stretches over the other (broadcast_shapes,
  // core/tensor_meta.h).
  ZERO_CHECK(broadcast_shapes(a.sizes(), b.sizes()) == out.sizes(), "binary op: operands ",
             shape_to_string(a.sizes()), " and ", shape_to_string(b.sizes()),
             " do not broadcast to the output shape ", shape_to_string(out.sizes()));
  binary_stub(out.device(), op, a, b, out);
}

void binary_scalar(BinaryOp op, const Tensor& a, float s, const Tensor& out, bool scalar_first) {
  check_same_device("binary op", {&a, &out});
  check_same_dtype("binary op", out, {&a});
  check_shape("binary op with a scalar", out, "output", a.sizes());
  binary_scalar_stub(out.device(), op, a, s, out, scalar_first);
}

void unary(UnaryOp op, const Tensor& x, const Tensor& out) {
  check_same_device("unary op", {&x, &out});
  check_same_dtype("unary op", out, {&x});
  check_shape("unary op", out, "output", x.sizes());
  unary_stub(out.device(), op, x, out);
}

void unary_backward(UnaryOp op, const Tensor& x, const Tensor& y, const Tensor& grad_y,
                    const Tensor& grad_x) {
  check_same_device("unary backward", {&x, &y, &grad_y, &grad_x});
  check_same_dtype("unary backward", x, {&y, &grad_y, &grad_x});
  for (const Tensor* t : {&y, &grad_y, &grad_x}) {
    check_shape("unary backward", *t, "every operand", x.sizes());
  }
  unary_backward_stub(x.device(), op, x, y, grad_y, grad_x);
}

}  // namespace zero::ops
