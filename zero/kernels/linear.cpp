// Dispatch for the fused Linear layer: out = x @ weight^T + bias, and the backward's
// parameter gradients. Weights use PyTorch's layout [out, in], so the forward reads
// weight through a transposed view (no copy). On CUDA both directions are one
// cuBLASLt call each (cuda/blas_lt.cu); on the CPU they are compositions of the
// existing GEMM, broadcast add and column sum, which is all the fusion the CPU needs.
#include "zero/kernels/cpu/cpu_ops.h"
#include "zero/kernels/cuda/cuda_ops.h"

namespace zero::ops {
namespace {

// `t` (2-d) viewed transposed: the kernel layer's own view, as Tensor::Transpose
// records autograd history and lives in the layer above.
Tensor transposed(const Tensor& t) { return Tensor(meta_transpose(t.meta(), 0, 1), t.node()); }

// `t` viewed with new `sizes`; `t` must be contiguous.
Tensor reshaped(const Tensor& t, const Shape& sizes) {
  return Tensor(meta_view(t.meta(), sizes), t.node());
}

void check_matrix(const char* op, const Tensor& t, const char* what, const Shape& sizes) {
  ZERO_CHECK(t.dtype() == DataType::F32, op, ": expected ", what, " of dtype f32, got ",
             to_string(t.dtype()));
  ZERO_CHECK(t.sizes() == sizes, op, ": expected ", what, " of shape ", shape_to_string(sizes),
             ", got ", shape_to_string(t.sizes()));
  ZERO_CHECK(t.is_contiguous(), op, ": expected ", what, " to be contiguous; call .Contiguous()");
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
  if (out.device().is_cpu()) {
    matmul_cpu(x, transposed(weight), out);                                 // (N, out)
    if (bias.defined()) binary_cpu(BinaryOp::kAdd, out, bias, out);  // element-wise: may alias
  } else {
    linear_forward_cuda(x, weight, bias, out);
  }
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
  if (x.device().is_cpu()) {
    if (grad_weight.defined()) matmul_cpu(transposed(grad_out), x, grad_weight);  // (out, in)
    if (grad_bias.defined()) sum_cpu(grad_out, 0, reshaped(grad_bias, {1, n_out}));  // (1, out)
  } else {
    linear_backward_params_cuda(grad_out, x, grad_weight, grad_bias);
  }
}

}  // namespace zero::ops
