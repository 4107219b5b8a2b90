/// @file
/// Reduction ops: `OpSum`, `OpMean` and `OpMax`, each over one dimension or over all
/// elements. (`argmax` is not differentiable and runs without an op, in reduce_ops.cpp.)
#pragma once

#include "zero/autograd/tensor_op.h"

namespace zero::autograd {

/// What every reduction shares: the dimension reduced (or all of them), whether it
/// stays with size 1, and the reshaping between the kernel's output and the user's.
///
/// The kernels always write the "kept" shape (size 1 at `dim`, or one element for
/// all dimensions); without `keepdim` the op returns a squeezed view of it, and the
/// backward undoes that squeeze before broadcasting the gradient back.
class OpReduce : public TensorOp {
 public:
  /// Marks a reduction over every element (the result is 0-d).
  static constexpr int kAllDims = -1000;
  /// Reduce over `dim` (already normalised) or `kAllDims`.
  OpReduce(int dim, bool keepdim) : dim_(dim), keepdim_(keepdim) {}

 protected:
  /// The shape the kernel writes: `x`'s with size 1 at `dim_` (`[]` for all dimensions).
  Shape KeptShape_(const Tensor& x) const;
  /// The kernel's output as the user sees it: squeezed at `dim_` unless `keepdim_`.
  Tensor UserView_(const Tensor& kept) const;
  /// The output gradient viewed in the input's rank: size 1 at `dim_`, or every
  /// dimension 1 for a reduction over all elements, ready to broadcast.
  Tensor GradKept_(const Tensor& grad) const;

  int dim_;        ///< Dimension reduced, or `kAllDims`.
  bool keepdim_;   ///< Whether the result keeps `dim_` with size 1.
};

/// Sum over dimension `dim` (keeping it with size 1 when `keepdim`), or over all
/// elements when `dim` is `kAllDims`. Backward: the gradient, broadcast back.
class OpSum : public OpReduce {
 public:
  using OpReduce::OpReduce;
  /// "OpSum".
  const char* name() const override { return "OpSum"; }

 protected:
  /// Calls `ops::sum` or `ops::sum_all`.
  std::vector<Tensor> OpValue_(const std::vector<Tensor>& inputs) override;
  /// Expands the gradient back to the input's shape.
  std::vector<Tensor> Backward_(const std::vector<Tensor>& grad_outputs) override;
};

/// Mean over `dim`, or over all elements for `kAllDims`. Backward: the gradient
/// divided by the number of elements averaged, broadcast back.
class OpMean : public OpReduce {
 public:
  using OpReduce::OpReduce;
  /// "OpMean".
  const char* name() const override { return "OpMean"; }

 protected:
  /// Calls `ops::mean` or `ops::mean_all`.
  std::vector<Tensor> OpValue_(const std::vector<Tensor>& inputs) override;
  /// `g / n`, expanded back to the input's shape.
  std::vector<Tensor> Backward_(const std::vector<Tensor>& grad_outputs) override;
};

/// Maximum over `dim`, or over all elements for `kAllDims`. Saves the position of the
/// first maximum of each slice; the backward sends the whole gradient there and
/// zero everywhere else (a subgradient: ties do not share it).
class OpMax : public OpReduce {
 public:
  using OpReduce::OpReduce;
  /// "OpMax".
  const char* name() const override { return "OpMax"; }

 protected:
  /// Calls `ops::max` or `ops::max_all` and saves the I32 indices.
  std::vector<Tensor> OpValue_(const std::vector<Tensor>& inputs) override;
  /// Calls `ops::max_backward` (on the flattened input for `kAllDims`).
  std::vector<Tensor> Backward_(const std::vector<Tensor>& grad_outputs) override;
  /// Drops the saved indices.
  void ReleaseSaved_() override { indices_ = Tensor(); }

 private:
  Tensor indices_;  // I32, the kernel's kept shape
};

}  // namespace zero::autograd
