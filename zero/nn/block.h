/// @file
/// The GPT's pre-LayerNorm transformer block and its two halves, causal self-attention
/// and the MLP, with `GPTConfig`, the sizes all of them are built from.
///
///     Block: x = x + attn(ln_1(x));  x = x + mlp(ln_2(x))       (B, T, C) throughout
///
/// Submodules carry nanoGPT's names (`attn.c_attn`, `mlp.c_fc`, ...), so a block's
/// parameters map one-to-one onto a PyTorch state dict; block.cpp implements them.
/// Read next: nn/gpt.h, the model that stacks `n_layer` of these blocks.
#pragma once

#include <cstdint>
#include <memory>

#include "zero/core/generator.h"
#include "zero/nn/layers.h"
#include "zero/nn/module.h"

namespace zero::nn {

/// Sizes of a GPT. Defaults are nanoGPT's `shakespeare_char` configuration.
struct GPTConfig {
  int64_t vocab_size = 65;   ///< V: number of token ids.
  int64_t block_size = 256;  ///< Longest sequence (number of learned positions).
  int64_t n_layer = 6;       ///< Number of blocks.
  int64_t n_head = 6;        ///< Attention heads per block; must divide n_embd.
  int64_t n_embd = 384;      ///< C: width of the residual stream.
  float dropout = 0.2f;      ///< Dropout probability (embeddings, attention probabilities,
                             ///< attention and MLP outputs).
};

/// Multi-head causal self-attention: c_attn makes q, k, v for all heads at once, the
/// fused `attention` op mixes positions (with dropout on its probabilities in training,
/// nanoGPT's attn_dropout), c_proj mixes heads.
class CausalSelfAttention : public Module {
 public:
  /// c_attn [3C, C] and c_proj [C, C] drawn from `gen` (c_proj with the residual scaling,
  /// see GPT); both dropouts (probabilities and output) use `config.dropout` and draw
  /// from `dropout_gen`.
  CausalSelfAttention(const GPTConfig& config, Generator& gen, Generator* dropout_gen);
  /// x [B, T, C] -> [B, T, C], position t attending to positions <= t. With a defined
  /// `residual` [B, T, C], `residual + Forward(x)`: without an output dropout in effect,
  /// c_proj adds it (`Linear::Forward`'s residual), and no addition of its own is made.
  Tensor Forward(const Tensor& x, const Tensor& residual = Tensor()) const;
  /// x [B, T_new, C] holds positions `start`.. of a sequence whose keys and values for
  /// positions < `start` are in `k_cache`, `v_cache` [B, H, T_max, D]; writes the new
  /// keys and values there and attends over all `start + T_new` of them, `residual`
  /// added as in Forward. Generation: never drops attention probabilities.
  Tensor ForwardCached(const Tensor& x, const Tensor& k_cache, const Tensor& v_cache,
                       int64_t start, const Tensor& residual = Tensor()) const;

 private:
  // q, k, v [B, H, T, D] (strided views of c_attn's output).
  void Heads_(const Tensor& x, Tensor& q, Tensor& k, Tensor& v) const;
  Tensor Output_(const Tensor& y, const Tensor& residual) const;

  int64_t n_head_;
  std::shared_ptr<Linear> c_attn_;
  std::shared_ptr<Linear> c_proj_;
  std::shared_ptr<Dropout> resid_dropout_;
  float attn_dropout_p_;    // dropout on the attention probabilities, in training
  Generator* dropout_gen_;  // the stream of both dropouts; null = default generator
};

/// The position-wise feed-forward network: C -> 4C -> GeLU -> C -> dropout, the two
/// Linears and the GeLU as one op (`mlp`), which keeps only the pre-activation of the
/// 4C-wide hidden layer for the backward.
class MLP : public Module {
 public:
  /// c_fc [4C, C] and c_proj [C, 4C] drawn from `gen`; dropout draws from `dropout_gen`.
  MLP(const GPTConfig& config, Generator& gen, Generator* dropout_gen);
  /// x [..., C] -> [..., C]; with a defined `residual` [..., C], `residual + Forward(x)`,
  /// added by c_proj when the dropout is not in effect (as in CausalSelfAttention).
  Tensor Forward(const Tensor& x, const Tensor& residual = Tensor()) const;

 private:
  std::shared_ptr<Linear> c_fc_;
  std::shared_ptr<Linear> c_proj_;
  std::shared_ptr<Dropout> dropout_;
};

/// One pre-LayerNorm transformer block: `x + attn(ln_1(x))`, then `x + mlp(ln_2(x))`.
class Block : public Module {
 public:
  /// Builds ln_1, attn, ln_2, mlp (in that order, which is also the order of the names).
  Block(const GPTConfig& config, Generator& gen, Generator* dropout_gen);
  /// x [B, T, C] -> [B, T, C].
  Tensor Forward(const Tensor& x) const;
  /// `Forward` for generation; see `CausalSelfAttention::ForwardCached`.
  Tensor ForwardCached(const Tensor& x, const Tensor& k_cache, const Tensor& v_cache,
                       int64_t start) const;

 private:
  std::shared_ptr<LayerNorm> ln_1_;
  std::shared_ptr<CausalSelfAttention> attn_;
  std::shared_ptr<LayerNorm> ln_2_;
  std::shared_ptr<MLP> mlp_;
};

}  // namespace zero::nn
