/// @file
/// Generating text from a GPT: sampling one token from logits, and batched decoding
/// with a KV cache.
///
/// Sampling divides the logits by a temperature (below 1 sharpens the distribution,
/// above 1 flattens it, 0 means always the most likely token), keeps only the `top_k`
/// largest (so one unlucky draw cannot pick a token the model thinks absurd), and
/// draws from the softmax of what is left with one uniform number. `generate` decodes
/// B sequences as one batch: each step feeds B new tokens through the model at once, so
/// every weight read from memory serves B tokens instead of one (chapter 11 works out
/// what that does to arithmetic intensity). Read next: chapters/11_gpt/README.md.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "zero/core/generator.h"
#include "zero/core/tensor.h"
#include "zero/nn/gpt.h"

namespace zero::train {

/// Picks one token id given the logits of one position, a temperature, a top-k and a
/// uniform number u in [0, 1). `sample_token` below is one; chapter 11 passes the
/// learner's own (exercise ex11.1) to `generate`.
using TokenSampler = std::function<int32_t(const float* logits, int64_t vocab, float temperature,
                                           int64_t top_k, float u)>;

/// Draws a token from softmax(logits / temperature) restricted to the `top_k` largest
/// logits (all of them when top_k <= 0 or top_k >= vocab; ties with the k-th largest are
/// kept, as in nanoGPT), by inverting the cumulative distribution at `u`: the result is
/// the first id whose cumulative probability, in id order, exceeds u. Temperature 0, or
/// top_k = 1, returns the arg-max (the first one on ties) without drawing. Logits may be
/// -inf (never drawn) but not NaN or +inf.
/// @throws zero::Error for vocab <= 0, a negative temperature, u outside [0, 1), or
/// logits that are NaN, +inf or all -inf.
int32_t sample_token(const float* logits, int64_t vocab, float temperature, int64_t top_k, float u);

/// One token for each row of `logits` [B, V] (F32, any device): I32 [B] on the same
/// device, row b drawn by `sampler` with u number b of the B that are reserved from
/// `gen` (so a batch uses B consecutive stream words, whatever the device).
Tensor sample_next(const Tensor& logits, float temperature, int64_t top_k, Generator& gen,
                   const TokenSampler& sampler = sample_token);

/// Continues `prompt` by `n_new` tokens, `batch` times independently, and returns the
/// `batch` sequences (prompt followed by the new tokens).
///
/// Runs in evaluation mode (no dropout) without recording gradients, after returning the
/// allocator's cached blocks to the device (`TrimFreePool`, so memory held for training
/// activations is available). The B sequences are decoded as one batch through a
/// `KVCache`: the prompt (its last block_size tokens) is fed once, then one token per
/// sequence per step. When the cache is full the context window slides: the cache is
/// cleared and refilled with the last block_size / 2 tokens, so the model always sees
/// at least half a block of context while a refill costs one forward pass every
/// block_size / 2 tokens. (nanoGPT re-runs the whole last block for every token
/// instead.) Within block_size tokens the result equals decoding without a cache.
/// @throws zero::Error for an empty prompt, negative n_new, batch < 1, or an id outside
/// the model's vocabulary.
std::vector<std::vector<int32_t>> generate(nn::GPT& model, const std::vector<int32_t>& prompt,
                                           int64_t n_new, float temperature, int64_t top_k,
                                           int64_t batch, Generator& gen,
                                           const TokenSampler& sampler = sample_token);

}  // namespace zero::train
