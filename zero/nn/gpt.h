/// @file
/// The GPT language model and its KV cache; the blocks it stacks are in nn/block.h.
///
/// A decoder-only transformer in the shape of nanoGPT's `model.py`, with the same
/// parameter names, so checkpoints map one-to-one onto PyTorch state dicts:
///
///     ids (B, T) -> wte(ids) + wpe(0..T-1) -> dropout -> n_layer x Block -> ln_f
///                -> logits = x @ wte.weight^T              (the head is tied to wte)
///     Block: x = x + attn(ln_1(x));  x = x + mlp(ln_2(x))
///
/// Generation reuses the same layers through a `KVCache`: each step feeds only the new
/// tokens and attends over the keys and values already computed.
/// Read next: nn/block.h, optim/adamw.h, the GPT chapter (chapters/11_gpt).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "zero/core/generator.h"
#include "zero/nn/block.h"
#include "zero/nn/layers.h"
#include "zero/nn/module.h"

namespace zero::nn {

/// Keys and values of every layer for incremental decoding: per layer k and v of
/// [B, H, block_size, D], filled up to `length()`. Made by `GPT::MakeCache`.
class KVCache {
 public:
  /// Batch size B the cache was made for.
  int64_t batch() const { return k_.empty() ? 0 : k_.front().size(0); }
  /// Positions it can hold (the model's block_size).
  int64_t capacity() const { return k_.empty() ? 0 : k_.front().size(2); }
  /// Positions filled so far.
  int64_t length() const { return length_; }
  /// Cached keys of layer `layer`, [B, H, capacity, D] (only the first `length()` are valid).
  const Tensor& k(int64_t layer) const { return k_.at(static_cast<size_t>(layer)); }
  /// Cached values of layer `layer`, same shape as `k`.
  const Tensor& v(int64_t layer) const { return v_.at(static_cast<size_t>(layer)); }
  /// Forgets every position (the buffers are reused).
  void Reset() { length_ = 0; }

 private:
  friend class GPT;
  KVCache(std::vector<Tensor> k, std::vector<Tensor> v) : k_(std::move(k)), v_(std::move(v)) {}
  std::vector<Tensor> k_;
  std::vector<Tensor> v_;
  int64_t length_ = 0;
};

/// The GPT language model.
///
/// Parameters are named exactly as in nanoGPT: `transformer.wte.weight` [V, C],
/// `transformer.wpe.weight` [block_size, C], `transformer.h.{i}.ln_1.weight|bias`,
/// `transformer.h.{i}.attn.c_attn.weight|bias`, `transformer.h.{i}.attn.c_proj.weight|bias`,
/// `transformer.h.{i}.ln_2.weight|bias`, `transformer.h.{i}.mlp.c_fc.weight|bias`,
/// `transformer.h.{i}.mlp.c_proj.weight|bias`, `transformer.ln_f.weight|bias`.
/// The output head is tied: nanoGPT's `lm_head.weight` *is* `transformer.wte.weight`,
/// one tensor, listed once here (nanoGPT's state dict lists both keys for one storage).
///
/// Dropout is nanoGPT's: on the embeddings, on the attention probabilities (inside the
/// fused attention op, from a recomputed Philox mask), and after each c_proj.
class GPT : public Module {
 public:
  /// Builds the model on the CPU (move it with `To`). Weights of Linear and Embedding
  /// layers are drawn from N(0, 0.02^2) with a generator seeded by `seed`, the c_proj
  /// weights that feed the residual stream from N(0, (0.02 / sqrt(2 n_layer))^2); biases
  /// are 0, LayerNorm weights 1 and biases 0. Throws unless n_head divides n_embd.
  GPT(const GPTConfig& config, uint64_t seed);
  /// The sizes the model was built with.
  const GPTConfig& config() const { return config_; }

  /// ids I32 [B, T], T <= block_size -> logits [B, T, V].
  Tensor Forward(const Tensor& ids);
  /// Mean cross-entropy of the next-token predictions for ids [B, T] against I32
  /// targets [B, T] (0-d), through `linear_cross_entropy`: the [B*T, V] logits are never
  /// all kept.
  Tensor Loss(const Tensor& ids, const Tensor& targets);

  /// An empty cache for `batch` sequences, on the model's device.
  KVCache MakeCache(int64_t batch) const;
  /// Appends ids [B, T_new] at position `cache.length()` of each sequence and returns the
  /// logits [B, T_new, V] of the new positions; advances the cache. Records no gradients.
  /// Dropout follows the training mode, so generate in evaluation mode (`EvalGuard`).
  Tensor ForwardCached(const Tensor& ids, KVCache& cache);

  /// The Philox stream every dropout layer of the model draws from (saved in
  /// checkpoints so a resumed run draws the same masks).
  Generator& dropout_generator() { return dropout_gen_; }

 private:
  // Embeddings, blocks and ln_f for ids at positions start.. -> (B, T, C).
  Tensor Hidden_(const Tensor& ids, int64_t start, KVCache* cache);

  GPTConfig config_;
  Generator dropout_gen_;
  std::shared_ptr<Embedding> wte_;
  std::shared_ptr<Embedding> wpe_;
  std::shared_ptr<Dropout> drop_;
  std::vector<std::shared_ptr<Block>> blocks_;
  std::shared_ptr<LayerNorm> ln_f_;
};

}  // namespace zero::nn
