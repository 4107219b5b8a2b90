// Dispatch for LayerNorm over the last dimension: check shapes, dtypes, devices and
// layouts, then call the CPU or CUDA kernel. x is read as N rows of C (C = last dim);
// mean and rstd hold one value per row. The kernels are in cpu/layer_norm_cpu.cpp.
//
// Dtypes: x, weight, bias, y, grad_y and grad_x share one dtype T (f32, bf16 or f16);
// mean and rstd are always f32, and so is every statistic inside. grad_weight and
// grad_bias are sums over all N rows: T, or f32 so that a 16-bit model can hand them
// to an FP32 optimiser without a second rounding (both the same dtype).
#include "zero/kernels/checks.h"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {

ZERO_DEFINE_KERNEL(layer_norm_forward);
ZERO_DEFINE_KERNEL(layer_norm_backward);

namespace {

void check_f32_contiguous(const char* op, const Tensor& t, const char* what) {
  check_dtype(op, t, what, DataType::F32);
  check_contiguous(op, t, what);
}

// `t` has x's dtype and a contiguous layout.
void check_like_x(const char* op, const Tensor& t, const char* what, const Tensor& x) {
  check_dtype(op, t, what, x.dtype());
  check_contiguous(op, t, what);
}

// The [C] parameters must match x's last dimension; the message names both shapes.
void check_param(const char* op, const Tensor& p, const char* what, const Tensor& x) {
  const int64_t c = x.size(-1);
  ZERO_CHECK(p.sizes() == Shape{c}, op, ": expected ", what, " of shape [", c,
             "] to match the last dimension of x ", shape_to_string(x.sizes()), ", got ",
             what, " of shape ", shape_to_string(p.sizes()));
}

// mean and rstd are one value per row: N = numel / C elements.
void check_row_stats(const char* op, const Tensor& t, const char* what, const Tensor& x) {
  const int64_t rows = x.numel() / x.size(-1);
  ZERO_CHECK(t.numel() == rows, op, ": expected ", what, " with one value per row (", rows,
             " for x of shape ", shape_to_string(x.sizes()), "), got shape ",
             shape_to_string(t.sizes()));
}

}  // namespace

void layer_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps,
                        const Tensor& y, const Tensor& mean, const Tensor& rstd) {
  const char* op = "layer_norm";
  check_same_device(op, {&x, &weight, &bias, &y, &mean, &rstd});
  ZERO_CHECK(x.dim() >= 1 && x.size(-1) > 0, op,
             ": expected x with a non-empty last dimension, got shape ",
             shape_to_string(x.sizes()));
  ZERO_CHECK(eps > 0.0f, op, ": expected eps > 0, got ", eps);
  check_float_dtype(op, x, "x");
  check_contiguous(op, x, "x");
  check_like_x(op, weight, "weight", x);
  check_like_x(op, bias, "bias", x);
  check_like_x(op, y, "output", x);
  check_f32_contiguous(op, mean, "mean");
  check_f32_contiguous(op, rstd, "rstd");
  check_param(op, weight, "weight", x);
  check_param(op, bias, "bias", x);
  check_shape(op, y, "output", x.sizes());
  check_row_stats(op, mean, "mean", x);
  check_row_stats(op, rstd, "rstd", x);
  layer_norm_forward_stub(x.device(), x, weight, bias, eps, y, mean, rstd);
}

void layer_norm_backward(const Tensor& grad_y, const Tensor& x, const Tensor& weight,
                         const Tensor& mean, const Tensor& rstd, const Tensor& grad_x,
                         const Tensor& grad_weight, const Tensor& grad_bias,
                         const Tensor& grad_x_add, const Tensor& grad_x_sums) {
  const char* op = "layer_norm backward";
  check_same_device(op, {&grad_y, &x, &weight, &mean, &rstd, &grad_x, &grad_weight, &grad_bias});
  ZERO_CHECK(x.dim() >= 1 && x.size(-1) > 0, op,
             ": expected x with a non-empty last dimension, got shape ",
             shape_to_string(x.sizes()));
  check_float_dtype(op, x, "x");
  check_contiguous(op, x, "x");
  check_like_x(op, grad_y, "grad_y", x);
  check_like_x(op, weight, "weight", x);
  check_f32_contiguous(op, mean, "mean");
  check_f32_contiguous(op, rstd, "rstd");
  check_like_x(op, grad_x, "grad_x", x);
  check_dtype_or_f32(op, grad_weight, "grad_weight", x.dtype());
  check_contiguous(op, grad_weight, "grad_weight");
  check_dtype(op, grad_bias, "grad_bias", grad_weight.dtype());
  check_contiguous(op, grad_bias, "grad_bias");
  check_shape(op, grad_y, "grad_y", x.sizes());
  check_shape(op, grad_x, "grad_x", x.sizes());
  check_param(op, weight, "weight", x);
  check_param(op, grad_weight, "grad_weight", x);
  check_param(op, grad_bias, "grad_bias", x);
  check_row_stats(op, mean, "mean", x);
  check_row_stats(op, rstd, "rstd", x);
  if (grad_x_add.defined()) {
    check_same_device(op, {&x, &grad_x_add});
    check_like_x(op, grad_x_add, "grad_x_add", x);
    check_shape(op, grad_x_add, "grad_x_add", x.sizes());
  }
  if (grad_x_sums.defined()) {
    check_same_device(op, {&x, &grad_x_sums});
    check_dtype_or_f32(op, grad_x_sums, "grad_x_sums", x.dtype());
    check_contiguous(op, grad_x_sums, "grad_x_sums");
    check_param(op, grad_x_sums, "grad_x_sums", x);
  }
  layer_norm_backward_stub(x.device(), grad_y, x, weight, mean, rstd, grad_x, grad_weight,
                           grad_bias, grad_x_add, grad_x_sums);
}

}  // namespace zero::ops
