/// @file
/// `TensorOp`, `RunOp`: how an op computes its value and records itself for autograd.
///
/// Every differentiable op is a subclass of `TensorOp` with two methods:
/// `OpValue_` computes the outputs (allocating them and calling `ops::` kernels) and
/// `Backward_` maps output gradients to input gradients. `RunOp<OpAdd>({a, b})` makes
/// the op, and `TensorOp::Apply` runs `OpValue_` and, when gradients are recorded and
/// an input requires grad, links the outputs to the op (`grad_fn`) and the op to its
/// inputs: that chain is the graph `Backward()` walks (autograd/engine.cpp).
/// Read next: functional.h (the ops users call), engine.cpp.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "zero/core/tensor.h"

namespace zero::autograd {

/// One recorded operation in the autograd graph.
///
/// An op keeps its inputs (the graph's edges; of an input whose values its backward does
/// not read, or whose producer recomputes it, only the edge: `KeepsInput_`,
/// `RecomputesOutput_`) and whatever it saved for the backward,
/// never its outputs (that would be a reference cycle); to reuse an output it saves
/// `out.Detach()`, which shares the buffer without the history.
class TensorOp : public std::enable_shared_from_this<TensorOp> {
 public:
  /// Frees the graph above this op without recursing once per op (see
  /// Note [Destroying deep graphs] in tensor_op.cpp).
  virtual ~TensorOp();

  /// The op's name as printed in graphs and errors ("OpAdd").
  virtual const char* name() const = 0;

  /// Computes the outputs and, if recording, attaches this op to them.
  std::vector<Tensor> Apply(const std::vector<Tensor>& inputs);

  /// The inputs recorded by `Apply` (empty once the graph is freed or when not recorded).
  const std::vector<Tensor>& inputs() const { return inputs_; }
  /// Metadata of each output, to make zero gradients for outputs that got none.
  const std::vector<TensorMeta>& output_metas() const { return output_metas_; }
  /// Whether input `i` needs a gradient (it requires grad).
  bool needs_grad(size_t i) const { return i < needs_grad_.size() && needs_grad_[i]; }
  /// Whether this op is a dtype cast (`OpToDtype`), whose backward only converts the
  /// gradient back into its input's dtype (see `grad_dtype`).
  virtual bool is_cast() const { return false; }

  /// Whether `Backward_` adds the gradient that input `i` already has (`grad_so_far`)
  /// into the one it returns for it, so that the engine need not add the two in a pass
  /// of their own (Note [Sums made by the op] in engine.cpp).
  virtual bool AddsGradSoFar(size_t /*i*/) const { return false; }
  /// Whether `Backward_` also adds into a leaf's .grad, for input `i` a leaf or a cast of
  /// one: true only for an op that always returns input i's gradient in
  /// `grad_dtype(input)`, the leaf's dtype past a cast (the engine hands over a .grad
  /// only when this pass made it and nothing else holds it).
  virtual bool AddsLeafGradSoFar(size_t /*i*/) const { return false; }
  /// Whether `Backward_`, given `grad_column_sums(i)`, writes there the column sums (over
  /// all but the last dimension) of the gradient it returns for input `i`. Asked only of
  /// an op that `AddsGradSoFar(i)` (Note [Column sums made by the consumer] in engine.cpp).
  virtual bool SumsGradColumns(size_t /*i*/) const { return false; }
  /// A buffer for the column sums of output `k`'s gradient, when this op's backward would
  /// otherwise sum them itself (a bias gradient); the op keeps it for that backward, and
  /// the consumer that writes the gradient whole fills it. Undefined when not wanted.
  virtual Tensor ColumnSumsOfGrad(size_t /*k*/) { return Tensor(); }

  /// Runs `Backward_` on behalf of the engine; throws if the graph was freed. Inputs kept
  /// as edges to a recomputing producer are computed again for it first, and dropped
  /// after it (Note [Recomputed inputs] in tensor_op.cpp). `so_far[i]`, where given, is
  /// the gradient input `i` already has, for an op that `AddsGradSoFar(i)`;
  /// `column_sums[i]`, where given, the buffer for an op that `SumsGradColumns(i)`.
  std::vector<Tensor> RunBackward(const std::vector<Tensor>& grad_outputs,
                                  std::vector<Tensor> so_far = {},
                                  std::vector<Tensor> column_sums = {});
  /// Frees the graph edges and saved tensors (called by the engine after use).
  void Release();

 protected:
  /// Computes the outputs from `inputs` (gradient recording is off inside).
  virtual std::vector<Tensor> OpValue_(const std::vector<Tensor>& inputs) = 0;
  /// Returns one gradient per input (undefined for inputs that need none), given one
  /// gradient per output (zeros stand in for outputs that received none).
  virtual std::vector<Tensor> Backward_(const std::vector<Tensor>& grad_outputs) = 0;
  /// Frees tensors saved for the backward; override when the op saves any.
  virtual void ReleaseSaved_() {}
  /// Whether `Backward_` reads the values of input `i`. An op that needs only the input's
  /// shape and dtype (a sum passes its gradient on; dropout remakes its mask) returns
  /// false, and the graph keeps only that input's edge, so its buffer is freed as soon as
  /// nothing else holds it (Note [Edges without values] in tensor_op.cpp).
  virtual bool KeepsInput_(size_t /*i*/) const { return true; }
  /// Whether an op that reads this op's output `k` in its backward should keep only an
  /// edge to it and have it computed again from this op's inputs when its backward runs
  /// (Note [Recomputed inputs] in tensor_op.cpp). The op's `OpValue_` must then give the
  /// same bits every time.
  virtual bool RecomputesOutput_(size_t /*k*/) const { return false; }
  /// Inside `Backward_`: the gradient input `i` already has, which the gradient returned
  /// for it must include, where `AddsGradSoFar(i)`; undefined where there is none.
  const Tensor& grad_so_far(size_t i) const;
  /// Inside `Backward_`: where to write the column sums of input `i`'s gradient, where
  /// `SumsGradColumns(i)` and the engine asks for them; undefined otherwise.
  const Tensor& grad_column_sums(size_t i) const;

 private:
  // Throws if an input or an output changed in place since Apply (Note [Version counter]).
  void CheckVersions() const;
  // Output k computed again from the kept inputs, for a consumer's backward.
  Tensor Recompute(size_t k);
  // Whether `producer` recomputes its output `t` whole (not a view of it).
  static bool remade_whole(const Tensor& t, const TensorOp& producer);

  std::vector<Tensor> inputs_;
  std::vector<Tensor> so_far_;       // RunBackward's so_far, for Backward_
  std::vector<Tensor> column_sums_;  // ... and its column_sums
  std::vector<bool> needs_grad_;
  std::vector<bool> recomputed_;  // inputs kept as edges and recomputed for the backward
  std::vector<TensorMeta> output_metas_;
  std::vector<uint64_t> input_versions_;  // each input's buffer version at Apply
  // Each output's buffer (not owned: an op never keeps its outputs alive) and version.
  std::vector<std::pair<std::weak_ptr<TensorNode>, uint64_t>> output_versions_;
  bool released_ = false;
};

/// Makes an `Op` from `args`, applies it to `inputs`, and returns all its outputs.
template <typename Op, typename... Args>
std::vector<Tensor> RunOpMulti(const std::vector<Tensor>& inputs, Args&&... args) {
  return std::make_shared<Op>(std::forward<Args>(args)...)->Apply(inputs);
}

/// Makes an `Op` from `args`, applies it to `inputs`, and returns its (first) output.
template <typename Op, typename... Args>
Tensor RunOp(const std::vector<Tensor>& inputs, Args&&... args) {
  return RunOpMulti<Op>(inputs, std::forward<Args>(args)...)[0];
}

/// The dtype in which a `Backward_` may return the gradient of its input `input`: F32 when
/// `input` is the output of a cast of an F32 tensor that needs a gradient (a BF16 or F16
/// copy of an FP32 parameter), else input's own dtype. The engine gives such an F32
/// gradient to the cast's input directly, so the GEMM or reduction that makes it can
/// write it in FP32 and the cast's backward has nothing to convert (Note [Gradients past
/// a cast] in engine.cpp).
DataType grad_dtype(const Tensor& input);

/// True when `grad` is the gradient of ones that `Backward()` made for its root, given
/// no gradient, in the backward now running on this thread. An op whose forward already
/// made its input gradients for an output gradient of 1 can then return them as they
/// are, instead of multiplying them by it (Note [Gradients in the forward pass] in
/// ops/fused_ops.cpp).
bool is_unit_root_gradient(const Tensor& grad);

/// Sums `grad` over the dimensions that broadcasting expanded, giving a tensor of
/// `shape` (the backward of every broadcasting op).
Tensor sum_to_shape(const Tensor& grad, const Shape& shape);

}  // namespace zero::autograd
