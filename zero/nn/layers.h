/// @file
/// The basic layers: `Linear`, `LayerNorm`, `Embedding`, `Dropout`.
///
/// Each layer is a `Module` that owns its parameters and whose `Forward` is one fused
/// functional op (autograd/functional.h): the layer adds names, initialisation and mode,
/// the op does the arithmetic and its gradient. Parameters are FP32; a layer set to
/// compute in BF16 or F16 (`Module::SetComputeDtype`) casts them, and its input, to that
/// dtype in Forward and returns a result of that dtype (Note [Mixed precision] in
/// nn/module.h). Initialisation draws from a caller's `Generator`, so a model built
/// twice from one seed is the same model on any device.
/// Read next: nn/block.h (attention, the MLP and the block built from these), nn/gpt.h.
#pragma once

#include <cstdint>

#include "zero/core/generator.h"
#include "zero/nn/module.h"

namespace zero::nn {

/// `y = x @ weight^T + bias`, weight [out, in] (PyTorch's layout), bias [out].
class Linear : public Module {
 public:
  /// Weight drawn from N(0, `init_std`^2) with `gen`; bias (when `bias`) zero.
  Linear(int64_t in_features, int64_t out_features, Generator& gen, float init_std = 0.02f,
         bool bias = true);
  /// x [..., in] -> [..., out] in the compute dtype, through the fused `linear` op. With
  /// a defined `residual` [..., out], `residual + Forward(x)` as that one op (on CUDA the
  /// GEMM adds it: a GPT's c_proj writing into its residual stream).
  Tensor Forward(const Tensor& x, const Tensor& residual = Tensor()) const;
  /// `gelu(Forward(x))` through the fused `linear_gelu` op: one GEMM with the bias and
  /// the GeLU in its epilogue on CUDA in 16-bit and the fast modes; the same bits as the
  /// two ops on the CPU and in IEEE FP32.
  Tensor ForwardGelu(const Tensor& x) const;
  /// The weight [out, in].
  const Tensor& weight() const { return weight_; }
  /// The bias [out], undefined for a layer built without one.
  const Tensor& bias() const { return bias_; }

 private:
  Tensor weight_;
  Tensor bias_;
};

/// LayerNorm over the last dimension, with a learned scale (weight, 1 at start) and
/// shift (bias, 0 at start).
class LayerNorm : public Module {
 public:
  /// Normalises vectors of `features` elements; `eps` is added to the variance.
  explicit LayerNorm(int64_t features, float eps = 1e-5f);
  /// x [..., features] -> same shape, in the compute dtype.
  Tensor Forward(const Tensor& x) const;
  /// The scale [features].
  const Tensor& weight() const { return weight_; }
  /// The shift [features].
  const Tensor& bias() const { return bias_; }

 private:
  Tensor weight_;
  Tensor bias_;
  float eps_;
};

/// A lookup table: row `id` of weight [num_embeddings, dim] for each I32 id.
class Embedding : public Module {
 public:
  /// Weight drawn from N(0, `init_std`^2) with `gen`.
  Embedding(int64_t num_embeddings, int64_t dim, Generator& gen, float init_std = 0.02f);
  /// ids [...] (I32) -> [..., dim], rows of the table in the compute dtype.
  Tensor Forward(const Tensor& ids) const;
  /// The table [num_embeddings, dim].
  const Tensor& weight() const { return weight_; }

 private:
  Tensor weight_;
};

/// Dropout with probability `p` in training mode, the identity in evaluation mode.
///
/// The masks come from a generator the owner of the model holds (GPT keeps one for all
/// its dropout layers, saved in checkpoints), so a run resumes with the same masks.
class Dropout : public Module {
 public:
  /// Drops with probability `p`, drawing from `gen` (the default generator when null;
  /// `gen` must outlive the layer).
  explicit Dropout(float p, Generator* gen = nullptr);
  /// x -> same shape.
  Tensor Forward(const Tensor& x) const;
  /// residual + Forward(x), in one pass where the two share shape and dtype
  /// (`dropout_add`); Forward(x) when `residual` is undefined.
  Tensor Forward(const Tensor& x, const Tensor& residual) const;
  /// The drop probability.
  float p() const { return p_; }
  /// Whether Forward drops anything: training, with p > 0. Otherwise it is the identity.
  bool active() const { return is_training() && p_ > 0.0f; }

 private:
  float p_;
  Generator* gen_;
};

}  // namespace zero::nn
