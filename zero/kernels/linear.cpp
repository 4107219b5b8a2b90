// Dispatch for the fused Linear layer: out = x @ weight^T + bias, and the backward's
// parameter gradients. Weights use PyTorch's layout [out, in], so the forward reads
// weight through a transposed view (no copy). On CUDA both directions are one
// cuBLASLt call each (cuda/blas_lt.cu); on the CPU they are compositions of the
// existing GEMM, broadcast add and column sum (cpu/matmul_cpu.cpp).
#include "zero/kernels/checks.h"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {

ZERO_DEFINE_KERNEL(linear_forward);
ZERO_DEFINE_KERNEL(linear_backward_params);

namespace {

void check_matrix(const char* op, const Tensor& t, const char* what, const Shape& sizes) {
  check_tensor(op, t, what, DataType::F32, sizes);
}

}  // namespace

void linear_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& out) {
  const char* op = "linear";
  check_same_device(op, {&x, &weight, &bias, &out});
  ZERO_CHECK(x.dim() == 2 && weight.dim() == 2, op,
             ": expected x [N, in] and weight [out, in], got ", shape_to_string(x.sizes()),
             " and ", shape_to_string(weight.sizes()));
  const int64_t n = x.size(0), in = x.size(1), n_out = weight.size(0);
  check_matrix(op, x, "x", {n, in});
  check_matrix(op, weight, "weight", {n_out, in});
  if (bias.defined()) check_matrix(op, bias, "bias", {n_out});
  check_matrix(op, out, "out", {n, n_out});
  linear_forward_stub(out.device(), x, weight, bias, out);
}

void linear_backward_params(const Tensor& grad_out, const Tensor& x, const Tensor& grad_weight,
                            const Tensor& grad_bias) {
  const char* op = "linear backward";
  check_same_device(op, {&grad_out, &x, &grad_weight, &grad_bias});
  ZERO_CHECK(grad_out.dim() == 2 && x.dim() == 2, op,
             ": expected grad_out [N, out] and x [N, in], got ", shape_to_string(grad_out.sizes()),
             " and ", shape_to_string(x.sizes()));
  const int64_t n = x.size(0), in = x.size(1), n_out = grad_out.size(1);
  check_matrix(op, grad_out, "grad_out", {n, n_out});
  check_matrix(op, x, "x", {n, in});
  if (grad_weight.defined()) check_matrix(op, grad_weight, "grad_weight", {n_out, in});
  if (grad_bias.defined()) check_matrix(op, grad_bias, "grad_bias", {n_out});
  linear_backward_params_stub(x.device(), grad_out, x, grad_weight, grad_bias);
}

}  // namespace zero::ops
