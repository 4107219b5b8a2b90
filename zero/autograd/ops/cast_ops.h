/// @file
/// `OpToDtype`: a tensor converted to another floating-point dtype, differentiably: the
/// autograd cast that mixed-precision training is built on.
///
/// A model's FP32 master weights are cast to BF16 or F16 where they are used; their
/// gradients come back in FP32, from the cast's backward or, for the ops that can write
/// them in FP32 themselves, past it (`grad_dtype` in tensor_op.h), so the optimiser only
/// ever sees FP32 (Note [Mixed precision] in nn/module.h).
#pragma once

#include <utility>

#include "zero/autograd/tensor_op.h"

namespace zero::autograd {

/// `x` converted element by element into `dtype` (`ops::convert`: round to nearest,
/// ties to even, into BF16 or F16; exact widening into F32). Backward: the gradient
/// converted into x's dtype.
class OpToDtype : public TensorOp {
 public:
  /// Converts into `dtype`; or, given `values` (x already converted, contiguous, in
  /// `dtype`: a cached cast, autograd/cast_cache.h), returns a tensor on their buffer.
  explicit OpToDtype(DataType dtype, Tensor values = Tensor())
      : dtype_(dtype), values_(std::move(values)) {}
  /// "OpToDtype".
  const char* name() const override { return "OpToDtype"; }
  /// True: a gradient may pass it by (`grad_dtype`).
  bool is_cast() const override { return true; }

 protected:
  /// A new contiguous tensor of x's shape in `dtype`, filled by `ops::convert`, or the
  /// given values.
  std::vector<Tensor> OpValue_(const std::vector<Tensor>& inputs) override;
  /// `ops::convert` of the gradient into the input's dtype.
  std::vector<Tensor> Backward_(const std::vector<Tensor>& grad_outputs) override;
  /// False: the backward reads only x's shape and dtype.
  bool KeepsInput_(size_t /*i*/) const override { return false; }

 private:
  DataType dtype_;
  Tensor values_;  // dropped once the forward has returned them
};

}  // namespace zero::autograd
