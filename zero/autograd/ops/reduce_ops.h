/// @file
/// Reduction ops: `OpSum` (over one dimension or all of them).
#pragma once

#include "zero/autograd/tensor_op.h"

namespace zero::autograd {

/// Sum over dimension `dim` (keeping it with size 1 when `keepdim`), or over all
/// elements when `dim` is `kAllDims`. Backward: the gradient, broadcast back.
class OpSum : public TensorOp {
 public:
  /// Marks a reduction over every element.
  static constexpr int kAllDims = -1000;
  /// Sum over `dim` (already normalised) or `kAllDims`.
  OpSum(int dim, bool keepdim) : dim_(dim), keepdim_(keepdim) {}
  /// "OpSum".
  const char* name() const override { return "OpSum"; }

 protected:
  /// Calls `ops::sum` or `ops::sum_all`.
  std::vector<Tensor> OpValue_(const std::vector<Tensor>& inputs) override;
  /// Expands the gradient back to the input's shape.
  std::vector<Tensor> Backward_(const std::vector<Tensor>& grad_outputs) override;

 private:
  int dim_;
  bool keepdim_;
};

}  // namespace zero::autograd
