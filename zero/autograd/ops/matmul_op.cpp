// Forward and backward of the matrix product, and the functional `matmul` over it.
#include "zero/autograd/ops/matmul_op.h"

#include "zero/autograd/functional.h"
#include "zero/kernels/tensor_ops.h"

namespace zero {
namespace autograd {
namespace {

// x @ y into a new tensor, straight through the kernel (the backward records nothing).
Tensor product(const Tensor& x, const Tensor& y) {
  Tensor out = Tensor::Empty(ops::matmul_shape(x.sizes(), y.sizes()), x.options());
  ops::matmul(x, y, out);
  return out;
}

}  // namespace

std::vector<Tensor> OpMatMul::OpValue_(const std::vector<Tensor>& in) {
  ops::check_same_device("matmul", {&in[0], &in[1]});
  return {product(in[0], in[1])};  // (..., M, N)
}

std::vector<Tensor> OpMatMul::Backward_(const std::vector<Tensor>& grad) {
  const Tensor& g = grad[0];  // (..., M, N)
  const Tensor& a = inputs()[0];
  const Tensor& b = inputs()[1];
  Tensor grad_a, grad_b;
  if (needs_grad(0)) {
    grad_a = sum_to_shape(product(g, b.Transpose(-1, -2)), a.sizes());  // (..., M, K)
  }
  if (needs_grad(1)) {
    if (b.dim() == 2 && a.dim() > 2) {
      // One matrix shared by the whole batch (a Linear layer's weight): stack the
      // batch into rows, so one K x N product replaces a batch of them and a sum.
      const Tensor a_rows = a.Reshape({-1, a.size(-1)});  // (batch * M, K)
      const Tensor g_rows = g.Reshape({-1, g.size(-1)});  // (batch * M, N)
      grad_b = product(a_rows.Transpose(0, 1), g_rows);   // (K, N)
    } else {
      grad_b = sum_to_shape(product(a.Transpose(-1, -2), g), b.sizes());  // (..., K, N)
    }
  }
  return {grad_a, grad_b};
}

}  // namespace autograd

Tensor matmul(const Tensor& a, const Tensor& b) {
  return autograd::RunOp<autograd::OpMatMul>({a, b});
}

}  // namespace zero
