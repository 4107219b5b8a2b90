/// @file
/// `OpMatMul`: the matrix product `a[..., M, K] @ b[..., K, N]` with broadcast batch
/// dimensions, and its backward.
///
/// The kernels are `ops::matmul` (kernels/matmul.cpp, then cpu/matmul_cpu.cpp or
/// cuBLAS); this op only sizes the output and maps gradients, using transposed views
/// so that neither direction copies an operand.
#pragma once

#include "zero/autograd/tensor_op.h"

namespace zero::autograd {

/// `out = a @ b` over the last two dimensions; leading (batch) dimensions broadcast.
/// Both inputs must be at least 2-d. Backward, for g = dL/dout [..., M, N]:
/// `grad_a = g @ bᵀ` and `grad_b = aᵀ @ g`, each summed over the batch dimensions its
/// input was broadcast along.
class OpMatMul : public TensorOp {
 public:
  /// "OpMatMul".
  const char* name() const override { return "OpMatMul"; }

 protected:
  /// Allocates out [..., M, N] (shape from `ops::matmul_shape`) and calls `ops::matmul`.
  std::vector<Tensor> OpValue_(const std::vector<Tensor>& inputs) override;
  /// `g @ b.Transpose(-1, -2)` and `a.Transpose(-1, -2) @ g`, reduced to the inputs' shapes.
  std::vector<Tensor> Backward_(const std::vector<Tensor>& grad_outputs) override;
};

}  // namespace zero::autograd
