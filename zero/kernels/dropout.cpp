// Dispatch for dropout: check p, shapes, dtypes, devices and layouts, then call the
// CPU or CUDA kernel. The mask is never stored: both directions recompute it from
// (seed, offset) with Philox (core/philox.h), so it is the same on every device.
#include "zero/kernels/dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {

ZERO_DEFINE_KERNEL(dropout_forward);
ZERO_DEFINE_KERNEL(dropout_backward);
namespace {

void check_operand(const char* op, const Tensor& t, const char* name) {
  ZERO_CHECK(t.dtype() == DataType::F32, op, ": expected ", name, " of dtype f32, got ",
             to_string(t.dtype()));
  ZERO_CHECK(t.is_contiguous(), op, ": expected a contiguous ", name,
             " (call .Contiguous() first), got strides ", shape_to_string(t.strides()));
}

void check_dropout(const char* op, float p, const Tensor& in, const char* in_name,
                   const Tensor& out, const char* out_name) {
  check_same_device(op, {&in, &out});
  ZERO_CHECK(p >= 0.0f && p < 1.0f, op, ": expected a drop probability p in [0, 1), got ", p,
             p == 1.0f ? " (p = 1 would drop everything and scale by 1/0: use p < 1)" : "");
  check_operand(op, in, in_name);
  check_operand(op, out, out_name);
  ZERO_CHECK(out.sizes() == in.sizes(), op, ": expected ", out_name, " of shape ",
             shape_to_string(in.sizes()), ", got ", shape_to_string(out.sizes()));
}

}  // namespace

void dropout_forward(const Tensor& x, float p, uint64_t seed, uint64_t offset, const Tensor& y) {
  check_dropout("dropout", p, x, "x", y, "output");
  dropout_forward_kernel(x.device(), x, p, seed, offset, y);
}

void dropout_backward(const Tensor& grad_y, float p, uint64_t seed, uint64_t offset,
                      const Tensor& grad_x) {
  check_dropout("dropout backward", p, grad_y, "grad_y", grad_x, "grad_x");
  dropout_backward_kernel(grad_y.device(), grad_y, p, seed, offset, grad_x);
}

}  // namespace zero::ops
