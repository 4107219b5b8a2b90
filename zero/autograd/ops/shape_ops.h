/// @file
/// Ops that overwrite or join elements without computing with them: `OpMaskedFill`
/// (e.g. the causal mask before a softmax) and `OpConcat`.
#pragma once

#include "zero/autograd/tensor_op.h"

namespace zero::autograd {

/// `x` with `value` wherever the I32 `mask` (broadcast to x) is non-zero.
/// Inputs: x, mask. Backward: the gradient where the mask is 0, zero where it filled.
class OpMaskedFill : public TensorOp {
 public:
  /// The value written where the mask is set.
  explicit OpMaskedFill(float value) : value_(value) {}
  /// "OpMaskedFill".
  const char* name() const override { return "OpMaskedFill"; }

 protected:
  /// Calls `ops::masked_fill` into a new tensor of x's shape.
  std::vector<Tensor> OpValue_(const std::vector<Tensor>& inputs) override;
  /// `ops::masked_fill(g, mask, 0)`.
  std::vector<Tensor> Backward_(const std::vector<Tensor>& grad_outputs) override;

 private:
  float value_;
};

/// Joins its inputs along `dim`. Backward: each input gets its slice of the gradient.
class OpConcat : public TensorOp {
 public:
  /// Join along `dim` (already normalised).
  explicit OpConcat(int dim) : dim_(dim) {}
  /// "OpConcat".
  const char* name() const override { return "OpConcat"; }

 protected:
  /// Calls `ops::concat` into a new contiguous tensor.
  std::vector<Tensor> OpValue_(const std::vector<Tensor>& inputs) override;
  /// Slices the gradient along `dim` at the inputs' boundaries (views, no copies).
  std::vector<Tensor> Backward_(const std::vector<Tensor>& grad_outputs) override;

 private:
  int dim_;
};

}  // namespace zero::autograd
