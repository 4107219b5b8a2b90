/// @file
/// Memory budgets checked before allocating: a run or a batch of samples that could never
/// fit fails at once, with the estimate, instead of running until the machine gives out.
///
/// The estimates are lower bounds, counted from the shapes alone: `--n-layer 100000000`
/// is refused in microseconds, while a size that is merely large is left to the allocator
/// (whose out-of-memory error states its own figures).
/// Read next: trainer.h (which checks training), sampling.h (which checks generation).
#pragma once

#include <cstdint>
#include <string>

#include "zero/core/device.h"
#include "zero/nn/gpt.h"
#include "zero/train/config.h"

namespace zero::train {

/// Parameters of a GPT of `model`'s shape (embeddings, blocks, final LayerNorm), counted
/// in double so that absurd shapes give a large number instead of an overflow.
double gpt_parameter_count(const nn::GPTConfig& model);

/// At least the bytes one training step of `config` keeps on its device: weights,
/// gradients and AdamW's two moments (16 bytes a parameter) and, per layer, four floats
/// of activations for each of the B x T x C positions.
double training_bytes_lower_bound(const TrainConfig& config);

/// At least the bytes generating `count` sequences of `new_tokens` tokens at once takes
/// besides the weights: each sequence's KV cache (2 x layers x block x C floats), its row
/// of logits and its token ids.
double sampling_bytes_lower_bound(const nn::GPTConfig& model, int64_t count, int64_t new_tokens);

/// Throws unless `bytes` fit in `device`'s memory. `what` names the request in the
/// message, e.g. "training this model" or "--samples 100000000".
/// @throws zero::Error "WHAT needs at least X GiB; DEVICE has Y GiB in all".
void check_fits(double bytes, Device device, const std::string& what);

}  // namespace zero::train
