/// @file
/// Checkpoints: a folder holding everything needed to continue a run bit for bit, or to
/// sample from the model, written so that a crash never leaves a broken one behind.
///
///     checkpoint/
///       model.safetensors      the parameters, under nanoGPT's names (nn/gpt.h)
///       optimizer.safetensors  AdamW's moments, "<param>.exp_avg" / "<param>.exp_avg_sq"
///       trainer.json           step, config, RNG states, loss scale, best val loss
///                              (TrainerState)
///       vocab.json             the tokenizer the ids refer to
///
/// The folder is written under a temporary name and renamed over the old one
/// (`io::replace_directory_atomically`), so it is always either the previous
/// checkpoint or the new one. Because every random draw in Zero is a position in a
/// Philox stream (core/generator.h), the RNG state is four integers: the dropout
/// generator's (seed, offset) and the batch sampler's (seed, position). The weights and
/// moments are FP32 whatever dtype the run computes in (the master weights); the dtype
/// itself is part of the config, and an F16 run's loss scale is saved with it.
/// Read next: trainer.h (what saves and resumes), tools/convert_checkpoint.py.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include "zero/nn/gpt.h"
#include "zero/optim/adamw.h"
#include "zero/train/config.h"

namespace zero::train {

/// Everything about a run that is not a tensor: the contents of trainer.json.
struct TrainerState {
  int64_t step = 0;  ///< Optimiser steps completed.
  /// Lowest validation loss seen so far (+inf before the first evaluation).
  float best_val_loss = std::numeric_limits<float>::infinity();
  uint64_t dropout_seed = 0;      ///< `GPT::dropout_generator()` seed ...
  uint64_t dropout_offset = 0;    ///< ... and position in its stream.
  uint64_t sampler_seed = 0;      ///< `BatchSampler` seed ...
  uint64_t sampler_position = 0;  ///< ... and index of its next window.
  float loss_scale = 1.0f;        ///< The loss scaler's scale (F16; 1 otherwise) ...
  int64_t loss_scale_good_steps = 0;  ///< ... and its good steps in a row.
  int64_t skipped_steps = 0;      ///< Updates skipped for a non-finite gradient norm.
  TrainConfig config;             ///< The model's shape and the hyper-parameters.
  std::string data_dir;           ///< Prepared dataset (train.bin, val.bin) the run reads.
  std::string vocab_path;    ///< vocab.json the token ids refer to (copied into the checkpoint).
  std::string metrics_path;  ///< The run's JSONL metrics log.
};

/// trainer.json text of `state` (pretty-printed; +inf best loss written as null).
std::string trainer_state_to_json(const TrainerState& state);
/// Parses trainer.json text; `source` names it in errors.
/// @throws zero::Error for malformed JSON, another format or version, or a missing field.
TrainerState trainer_state_from_json(const std::string& json, const std::string& source);

/// Writes a checkpoint of `model`, `optimizer` and `state` to the folder `dir`, replacing
/// it atomically; `state.vocab_path`, when set, is copied in as vocab.json.
/// @throws zero::Error if anything cannot be written (the previous `dir` then survives).
void save_checkpoint(const std::string& dir, const nn::GPT& model, const optim::AdamW& optimizer,
                     const TrainerState& state);

/// Reads `dir`/trainer.json alone: enough to build a model of the right shape before
/// calling `load_checkpoint`. @throws zero::Error naming what is missing when `dir` is
/// not a checkpoint.
TrainerState read_trainer_state(const std::string& dir);

/// The data folder to resume the run saved in `ckpt_dir` with, as an absolute path:
/// `state.data_dir` (recorded as the first run gave it, perhaps relative to where it
/// started) if it holds a vocab.json, else `out_dir`/data (a run folder that was moved).
/// @throws zero::Error if neither holds the data, or if that data's vocabulary is not
/// the checkpoint's (an out-dir reused for another text).
std::string resume_data_dir(const TrainerState& state, const std::string& out_dir,
                            const std::string& ckpt_dir);

/// Loads a checkpoint into `model` (whose config must match the saved one), into
/// `*optimizer` unless it is null (weights only), and into `state`. The model's
/// parameters keep their devices. Restoring RNG states into the generators is the
/// caller's part (trainer.h does it).
/// @throws zero::Error when `dir` is not a checkpoint, or when the shapes differ: the
/// message lists the differing config values, or the missing, unexpected and mis-shaped
/// tensor names. The model is unchanged when the check fails.
void load_checkpoint(const std::string& dir, nn::GPT& model, optim::AdamW* optimizer,
                     TrainerState& state);

}  // namespace zero::train
