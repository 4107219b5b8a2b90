/// @file
/// Softmax ops over the last dimension: `OpSoftmax` and `OpLogSoftmax`.
///
/// Both save their output, which is all their backward needs. The kernels read
/// contiguous rows, so `softmax` and `log_softmax` make the input contiguous first.
/// Cross-entropy has its own fused op (loss_ops.h) that never stores the softmax.
#pragma once

#include "zero/autograd/tensor_op.h"

namespace zero::autograd {

/// `y = exp(x - max) / sum(exp(x - max))` over the last dimension of a contiguous `x`.
/// Backward: `grad_x = y * (g - sum(g * y))`.
class OpSoftmax : public TensorOp {
 public:
  /// "OpSoftmax".
  const char* name() const override { return "OpSoftmax"; }

 protected:
  /// Calls `ops::softmax_forward` and saves the output.
  std::vector<Tensor> OpValue_(const std::vector<Tensor>& inputs) override;
  /// Calls `ops::softmax_backward`.
  std::vector<Tensor> Backward_(const std::vector<Tensor>& grad_outputs) override;
  /// Drops the saved output.
  void ReleaseSaved_() override { output_ = Tensor(); }

 private:
  Tensor output_;
};

/// `y = x - logsumexp(x)` over the last dimension of a contiguous `x`.
/// Backward: `grad_x = g - exp(y) * sum(g)`.
class OpLogSoftmax : public TensorOp {
 public:
  /// "OpLogSoftmax".
  const char* name() const override { return "OpLogSoftmax"; }

 protected:
  /// Calls `ops::log_softmax_forward` and saves the output.
  std::vector<Tensor> OpValue_(const std::vector<Tensor>& inputs) override;
  /// Calls `ops::log_softmax_backward`.
  std::vector<Tensor> Backward_(const std::vector<Tensor>& grad_outputs) override;
  /// Drops the saved output.
  void ReleaseSaved_() override { output_ = Tensor(); }

 private:
  Tensor output_;
};

}  // namespace zero::autograd
