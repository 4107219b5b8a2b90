/// @file
/// Loss ops: `OpCrossEntropy`, log-softmax and negative log-likelihood fused in one
/// kernel pair, so the [N, V] probabilities are never stored between forward and
/// backward (only one log-sum-exp per row is).
#pragma once

#include "zero/autograd/tensor_op.h"

namespace zero::autograd {

/// Mean over rows i whose target is not `ignore_index` of
/// `logsumexp(logits[i]) - logits[i, targets[i]]`; 0 when every row is ignored.
/// Inputs: contiguous F32 logits [N, V] and I32 targets [N]. Saves lse [N].
/// Backward: `grad_logits = g * (softmax(logits) - onehot(target)) / count`, zero on
/// ignored rows; the targets get no gradient.
class OpCrossEntropy : public TensorOp {
 public:
  /// Rows whose target equals `ignore_index` are skipped (e.g. padding).
  explicit OpCrossEntropy(int ignore_index) : ignore_index_(ignore_index) {}
  /// "OpCrossEntropy".
  const char* name() const override { return "OpCrossEntropy"; }

 protected:
  /// Calls `ops::cross_entropy_forward` into a 0-d loss and saves lse.
  std::vector<Tensor> OpValue_(const std::vector<Tensor>& inputs) override;
  /// Calls `ops::cross_entropy_backward`.
  std::vector<Tensor> Backward_(const std::vector<Tensor>& grad_outputs) override;
  /// Drops the saved lse.
  void ReleaseSaved_() override { lse_ = Tensor(); }

 private:
  int ignore_index_;
  Tensor lse_;  // (N)
};

}  // namespace zero::autograd
