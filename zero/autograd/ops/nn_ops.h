/// @file
/// The neural-network layer ops: `OpLayerNorm`, `OpEmbedding`, `OpDropout`.
///
/// Each wraps one fused kernel from kernels/tensor_ops.h in both directions, so a
/// LayerNorm is one graph node, not the dozen a composition of means and divisions
/// would make. nn/ builds its modules (LayerNorm, Embedding, Dropout) on these.
#pragma once

#include <cstdint>

#include "zero/autograd/tensor_op.h"

namespace zero::autograd {

/// LayerNorm over the last dimension of a contiguous `x` [..., C] with `weight`, `bias` [C].
/// Saves the per-row mean and 1/std; backward gives gradients for x, weight and bias.
class OpLayerNorm : public TensorOp {
 public:
  /// `eps` is added to the variance before the square root.
  explicit OpLayerNorm(float eps) : eps_(eps) {}
  /// "OpLayerNorm".
  const char* name() const override { return "OpLayerNorm"; }
  /// True for x: its gradient is written with the one x already has added in (Note
  /// [Sums made by the op] in engine.cpp).
  bool AddsGradSoFar(size_t i) const override { return i == 0; }
  /// True for x: the kernel that writes its gradient can sum its columns too (Note
  /// [Column sums made by the consumer] in engine.cpp).
  bool SumsGradColumns(size_t i) const override { return i == 0; }

 protected:
  /// Calls `ops::layer_norm_forward` on inputs {x, weight, bias}; keeps mean and rstd.
  std::vector<Tensor> OpValue_(const std::vector<Tensor>& inputs) override;
  /// Calls `ops::layer_norm_backward` with the saved statistics.
  std::vector<Tensor> Backward_(const std::vector<Tensor>& grad_outputs) override;
  /// Drops mean and rstd.
  void ReleaseSaved_() override;
  /// True for an FP32 output: the op after it keeps only an edge, and the output is made
  /// again from x for that op's backward (Note [Recomputing a LayerNorm] in nn_ops.cpp).
  bool RecomputesOutput_(size_t k) const override;

 private:
  float eps_;
  DataType dtype_ = DataType::F32;  // x's
  Tensor mean_;  // (N,) one per row of C
  Tensor rstd_;  // (N,)
};

/// Row lookup `weight[ids]` on inputs {weight [V, C], I32 ids [...]}: result [..., C].
/// Backward: the gradient rows summed into the weight rows their ids name (ids get none).
class OpEmbedding : public TensorOp {
 public:
  /// "OpEmbedding".
  const char* name() const override { return "OpEmbedding"; }
  /// True for the table: its gradient is added into the one it already has (Note [Sums
  /// made by the op] in engine.cpp), as a tied output head gives it.
  bool AddsGradSoFar(size_t i) const override { return i == 0; }
  /// True for the table, a parameter (or its cast) whose .grad the head may have made.
  bool AddsLeafGradSoFar(size_t i) const override { return i == 0; }

 protected:
  /// Calls `ops::embedding_forward`.
  std::vector<Tensor> OpValue_(const std::vector<Tensor>& inputs) override;
  /// Calls `ops::embedding_backward` for the weight; undefined for the ids.
  std::vector<Tensor> Backward_(const std::vector<Tensor>& grad_outputs) override;
};

/// Dropout of a contiguous `x` with probability `p`, the mask drawn from the Philox stream
/// words `offset`, `offset + 1`, ... of `seed`. Only (seed, offset) are saved: the
/// backward regenerates the mask rather than keeping a tensor of it.
class OpDropout : public TensorOp {
 public:
  /// `p` in [0, 1); the caller has reserved `x.numel()` words from `offset` on. Inputs
  /// {x} give dropout(x); {x, residual} (one shape, one dtype) give residual + dropout(x).
  OpDropout(float p, uint64_t seed, uint64_t offset) : p_(p), seed_(seed), offset_(offset) {}
  /// "OpDropout".
  const char* name() const override { return "OpDropout"; }

 protected:
  /// Calls `ops::dropout_forward`.
  std::vector<Tensor> OpValue_(const std::vector<Tensor>& inputs) override;
  /// Calls `ops::dropout_backward` with the same (seed, offset); a residual's gradient is
  /// the output's.
  std::vector<Tensor> Backward_(const std::vector<Tensor>& grad_outputs) override;
  /// False: the mask is made again from (seed, offset), not read from x or the residual.
  bool KeepsInput_(size_t /*i*/) const override { return false; }

 private:
  float p_;
  uint64_t seed_;
  uint64_t offset_;
};

}  // namespace zero::autograd
