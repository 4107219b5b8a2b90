/// @file
/// How much arithmetic a GPT step is, and what fraction of the machine's peak that uses.
///
/// Model FLOPs utilisation (MFU) is the FLOPs the model needs per second (counted from
/// its shape, not from the kernels actually run) over the hardware's peak FLOP/s. It
/// makes runs of different sizes and on different machines comparable; PaLM (Chowdhery
/// et al., 2022, appendix B) defined it and nanoGPT's `estimate_mfu` uses the same count.
/// Read next: metrics.h.
#pragma once

#include <cstdint>

#include "zero/core/dtype.h"
#include "zero/nn/gpt.h"

namespace zero::train {

/// Number of parameters of a GPT of `config` (the tied head counted once, as in
/// `Module::NumParameters`); without the position embeddings when
/// `include_position_embeddings` is false (nanoGPT's `get_num_params(non_embedding=True)`).
int64_t gpt_num_params(const nn::GPTConfig& config, bool include_position_embeddings = true);

/// Training FLOPs per token (forward + backward) of a GPT on sequences of `seq_len`:
/// `6 N + 12 L C T`, nanoGPT's estimate, with N = `gpt_num_params(config, false)`,
/// L layers, C = n_embd (H heads times Q = C / H) and T = `seq_len`.
///
/// Every parameter takes part in one multiply-add per token (2 FLOPs) in the forward
/// pass and two in the backward pass (the gradients of the input and of the weight),
/// which makes 6 N; the token embedding counts through the tied output head, the
/// position embedding is a lookup and is left out. Attention adds, per layer and
/// token, q.k against T keys and a weighted sum of T values, 2 C T FLOPs each forward,
/// times 3 with the backward: 12 C T. The causal mask makes half of those scores
/// unused, so the formula slightly overcounts what a fused kernel does; it is kept as
/// is so MFU figures compare with nanoGPT's.
double gpt_train_flops_per_token(const nn::GPTConfig& config, int64_t seq_len);

/// Model FLOPs utilisation: `flops_per_token * tokens_per_second / peak_flops`, in
/// 0..1 (a fraction, not a percentage). @throws zero::Error unless `peak_flops` > 0.
double model_flops_utilization(double flops_per_token, double tokens_per_second, double peak_flops);

/// Peak FP32 FLOP/s of one H100 / H200 SXM GPU without Tensor Cores (67 TFLOP/s, the
/// datasheet's figure).
constexpr double kH200PeakFp32Flops = 67e12;
/// Peak dense BF16 and FP16 FLOP/s of one H100 / H200 SXM GPU on its Tensor Cores (990
/// TFLOP/s, the datasheet's figure).
constexpr double kH200PeakBf16Flops = 990e12;

/// The peak that `train_gpt` on CUDA divides by for MFU: the H100 / H200's rate for the
/// arithmetic a model computing in `dtype` runs its GEMMs in (kH200PeakBf16Flops for BF16
/// and F16, kH200PeakFp32Flops for F32), so that MFU says how much of the chip the
/// step uses.
double h200_peak_flops(DataType dtype);

}  // namespace zero::train
