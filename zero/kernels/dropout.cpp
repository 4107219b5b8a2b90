// Dispatch for dropout: check p, shapes, dtypes, devices and layouts, then call the
// CPU or CUDA kernel. The mask is never stored: both directions recompute it from
// (seed, offset) with Philox (core/philox.h), so it is the same on every device.
// Input and output share one dtype, f32, bf16 or f16 (scaled in float, rounded once).
#include "zero/kernels/checks.h"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {

ZERO_DEFINE_KERNEL(dropout_forward);
ZERO_DEFINE_KERNEL(dropout_backward);

namespace {

void check_dropout(const char* op, float p, const Tensor& in, const char* in_name,
                   const Tensor& out, const char* out_name) {
  check_same_device(op, {&in, &out});
  check_drop_probability(op, p);
  check_float_dtype(op, in, in_name);
  check_tensor(op, in, in_name, in.dtype(), in.sizes());
  check_tensor(op, out, out_name, in.dtype(), in.sizes());
}

}  // namespace

void dropout_forward(const Tensor& x, float p, uint64_t seed, uint64_t offset, const Tensor& y,
                     const Tensor& residual) {
  check_dropout("dropout", p, x, "x", y, "output");
  if (residual.defined()) {
    check_same_device("dropout", {&x, &residual});
    check_tensor("dropout", residual, "residual", x.dtype(), x.sizes());
  }
  dropout_forward_stub(x.device(), x, p, seed, offset, y, residual);
}

void dropout_backward(const Tensor& grad_y, float p, uint64_t seed, uint64_t offset,
                      const Tensor& grad_x) {
  check_dropout("dropout backward", p, grad_y, "grad_y", grad_x, "grad_x");
  dropout_backward_stub(grad_y.device(), grad_y, p, seed, offset, grad_x);
}

}  // namespace zero::ops
