/// @file
/// `TrainConfig`: every hyper-parameter of a GPT training run, with the two presets
/// `train_gpt` starts from.
///
/// The reference preset is nanoGPT's `config/train_shakespeare_char.py`; the CPU preset
/// is a model small enough to learn something recognisable in a few minutes on a laptop.
/// Read next: checkpoint.h (how a config is saved with the weights), trainer.h.
#pragma once

#include <cstdint>
#include <string>

#include "zero/core/device.h"
#include "zero/core/dtype.h"
#include "zero/nn/gpt.h"
#include "zero/train/loss_scaler.h"

namespace zero::train {

/// The model's shape and the optimisation settings of one run.
struct TrainConfig {
  nn::GPTConfig model;        ///< Sizes of the GPT (vocab_size is set from the data).
  int64_t batch_size = 64;    ///< Sequences per step, B.
  float lr = 1e-3f;           ///< Peak learning rate, reached after the warmup.
  float min_lr = 1e-4f;       ///< Floor of the cosine decay.
  int64_t warmup = 100;       ///< Steps of linear warmup.
  int64_t max_steps = 5000;   ///< Optimiser steps in the run (the cosine reaches min_lr here).
  float weight_decay = 0.1f;  ///< AdamW decoupled decay (matrices and embeddings only).
  float beta1 = 0.9f;         ///< AdamW first-moment decay.
  float beta2 = 0.99f;        ///< AdamW second-moment decay (0.99: small batches, few tokens).
  float grad_clip = 1.0f;     ///< Global gradient-norm bound (0 disables clipping).
  uint64_t seed = 1337;       ///< Seeds the weights, dropout and the batch order.
  /// The dtype the model computes in: F32, or BF16 / F16 with FP32 master weights
  /// (Note [Mixed precision] in nn/module.h). F16 turns on dynamic loss scaling.
  DataType dtype = DataType::F32;
  LossScalerOptions loss_scaling;  ///< The loss scaler's settings (used in F16 only).
  /// On a GPU, run each step after the first as the replay of one CUDA graph of the
  /// step (Note [The step as one CUDA graph] in train/step_graph.cpp): the same kernels
  /// on the same bits, without a launch each. Not for F16 or data-parallel runs, which
  /// decide things on the host between kernels. A run-time choice, not saved.
  bool cuda_graph = true;

  /// nanoGPT's shakespeare_char run: 6 layers, 6 heads, 384 wide, block 256, batch 64,
  /// dropout 0.2, lr 1e-3 -> 1e-4, warmup 100, 5000 steps.
  static TrainConfig Reference();
  /// A small model for CPUs: 3 layers, 4 heads, 48 wide, block 64, batch 16, no dropout,
  /// lr 3e-3 -> 3e-4, warmup 50, 1000 steps (a few minutes on a laptop).
  static TrainConfig SmallCpu();
};

/// Throws, saying why, unless a GPT can be trained in `dtype` on `device`: FP32, BF16
/// and F16 on the CPU (whose kernels compute in FP32 and round) and on any GPU, except
/// BF16 on a GPU older than compute capability 8.0.
/// @throws zero::Error otherwise, or for I32.
void check_compute_dtype(DataType dtype, Device device);

/// The dtype a `--dtype` flag names: "fp32", "bf16", "fp16", or "auto": BF16 on a GPU
/// of compute capability 8.0 or newer (its Tensor Cores compute BF16), FP32 elsewhere
/// (the CPU, whose 16-bit kernels give mixed precision's numbers but not its speed, and
/// older GPUs).
/// @throws zero::Error for another name, or for a dtype `check_compute_dtype` refuses
/// on `device`.
DataType resolve_dtype(const std::string& name, Device device);

/// The `--dtype` name of `dtype`: "fp32", "bf16" or "fp16" (what train_gpt prints and
/// trainer.json records).
const char* dtype_flag_name(DataType dtype);

/// The device a `--device` flag names: "cpu", "cuda" (GPU 0), "cuda:N", or "auto" (the
/// first GPU when one is visible, else the CPU).
/// @throws zero::Error for another name, or a GPU asked for when none is visible.
Device resolve_device(const std::string& name);

}  // namespace zero::train
