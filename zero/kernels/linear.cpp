// Dispatch for the fused Linear layer: out = x @ weight^T + bias, and the backward's
// parameter gradients; for the Linear fused with the GeLU after it in a GPT's MLP,
// pre = x @ weight^T + bias and y = gelu(pre); and for the MLP backward's product that
// feeds GeLU's derivative, grad_pre = (grad_y @ weight) gelu'(pre). Weights use
// PyTorch's layout [out, in], so the forward reads weight through a transposed view (no
// copy). On CUDA each is one cuBLASLt call (cuda/blas_lt.cu, cuda/gelu_epilogue.cu);
// on the CPU they are compositions of the existing GEMM (onto rows holding the bias),
// column sum and GeLU (cpu/matmul_cpu.cpp).
//
// Dtypes: x, weight, bias and out (y, pre) share one (f32, bf16 or f16); the GEMM
// accumulates in FP32 and the bias is added before the output's one rounding. The
// backward's grad_out has x's dtype, and grad_weight and grad_bias x's dtype or f32 each.
#include <vector>

#include "zero/kernels/checks.h"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {

ZERO_DEFINE_KERNEL(linear_forward);
ZERO_DEFINE_KERNEL(linear_backward_params);
ZERO_DEFINE_KERNEL(linear_gelu_forward);
ZERO_DEFINE_KERNEL(matmul_gelu_backward);

namespace {

// `t` of `dtype` (or, with `or_f32`, f32), of exactly `sizes` and contiguous.
void check_matrix(const char* op, const Tensor& t, const char* what, DataType dtype,
                  const Shape& sizes, bool or_f32 = false) {
  if (or_f32) check_dtype_or_f32(op, t, what, dtype);
  check_tensor(op, t, what, or_f32 ? t.dtype() : dtype, sizes);
}

// The checks of a Linear forward whose outputs are `outs`, named `names`: each
// [N, out] in x's dtype.
void check_linear_forward(const char* op, const Tensor& x, const Tensor& weight,
                          const Tensor& bias, const std::vector<const Tensor*>& outs,
                          const std::vector<const char*>& names) {
  std::vector<const Tensor*> all = {&x, &weight, &bias};
  all.insert(all.end(), outs.begin(), outs.end());
  check_same_device(op, all);
  ZERO_CHECK(x.dim() == 2 && weight.dim() == 2, op,
             ": expected x [N, in] and weight [out, in], got ", shape_to_string(x.sizes()),
             " and ", shape_to_string(weight.sizes()));
  const int64_t n = x.size(0), in = x.size(1), n_out = weight.size(0);
  check_float_dtype(op, x, "x");
  check_matrix(op, x, "x", x.dtype(), {n, in});
  check_matrix(op, weight, "weight", x.dtype(), {n_out, in});
  if (bias.defined()) check_matrix(op, bias, "bias", x.dtype(), {n_out});
  for (size_t i = 0; i < outs.size(); ++i) {
    check_matrix(op, *outs[i], names[i], x.dtype(), {n, n_out});
  }
}

}  // namespace

void linear_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& out,
                    const Tensor& residual) {
  check_linear_forward("linear", x, weight, bias, {&out}, {"out"});
  if (residual.defined()) {
    check_same_device("linear", {&x, &residual});
    check_matrix("linear", residual, "residual", x.dtype(), out.sizes());
    ZERO_CHECK(residual.data() != out.data(), "linear: residual must not overlap out");
  }
  linear_forward_stub(out.device(), x, weight, bias, out, residual);
}

void linear_gelu_forward(const Tensor& x, const Tensor& weight, const Tensor& bias,
                         const Tensor& y, const Tensor& pre) {
  check_linear_forward("linear_gelu", x, weight, bias, {&y, &pre}, {"y", "pre"});
  linear_gelu_forward_stub(y.device(), x, weight, bias, y, pre);
}

void matmul_gelu_backward(const Tensor& grad_y, const Tensor& weight, const Tensor& pre,
                          const Tensor& grad_pre, const Tensor& hidden, const Tensor& grad_bias) {
  const char* op = "matmul_gelu_backward";
  check_same_device(op, {&grad_y, &weight, &pre, &grad_pre, &hidden, &grad_bias});
  ZERO_CHECK(grad_y.dim() == 2 && pre.dim() == 2, op,
             ": expected grad_y [N, C] and pre [N, H], got ", shape_to_string(grad_y.sizes()),
             " and ", shape_to_string(pre.sizes()));
  const int64_t n = grad_y.size(0), c = grad_y.size(1), h = pre.size(1);
  check_float_dtype(op, grad_y, "grad_y");
  check_matrix(op, weight, "weight", grad_y.dtype(), {c, h});
  check_matrix(op, pre, "pre", grad_y.dtype(), {n, h});
  check_matrix(op, grad_pre, "grad_pre", grad_y.dtype(), {n, h});
  check_matrix(op, grad_y, "grad_y", grad_y.dtype(), {n, c});
  if (hidden.defined()) check_matrix(op, hidden, "hidden", grad_y.dtype(), {n, h});
  if (grad_bias.defined()) {
    check_matrix(op, grad_bias, "grad_bias", grad_y.dtype(), {h}, /*or_f32=*/true);
  }
  matmul_gelu_backward_stub(grad_pre.device(), grad_y, weight, pre, grad_pre, hidden, grad_bias);
}

void linear_backward_params(const Tensor& grad_out, const Tensor& x, const Tensor& grad_weight,
                            const Tensor& grad_bias) {
  const char* op = "linear backward";
  check_same_device(op, {&grad_out, &x, &grad_weight, &grad_bias});
  ZERO_CHECK(grad_out.dim() == 2 && x.dim() == 2, op,
             ": expected grad_out [N, out] and x [N, in], got ", shape_to_string(grad_out.sizes()),
             " and ", shape_to_string(x.sizes()));
  const int64_t n = x.size(0), in = x.size(1), n_out = grad_out.size(1);
  check_float_dtype(op, x, "x");
  check_matrix(op, grad_out, "grad_out", x.dtype(), {n, n_out});
  check_matrix(op, x, "x", x.dtype(), {n, in});
  if (grad_weight.defined()) {
    check_matrix(op, grad_weight, "grad_weight", x.dtype(), {n_out, in}, /*or_f32=*/true);
  }
  if (grad_bias.defined()) {
    check_matrix(op, grad_bias, "grad_bias", x.dtype(), {n_out}, /*or_f32=*/true);
  }
  linear_backward_params_stub(x.device(), grad_out, x, grad_weight, grad_bias);
}

void linear_backward_bias(const Tensor& grad_out, const Tensor& grad_bias) {
  // With no weight gradient x is only checked, never read: grad_out stands in for it.
  linear_backward_params(grad_out, grad_out, Tensor(), grad_bias);
}

}  // namespace zero::ops
