/// @file
/// `Trainer`: the GPT training loop's state and one step of it, separate from any
/// command line so tests can run it, stop it, save it and resume it.
///
/// One `Step()` is nanoGPT's loop body: set the learning rate from the schedule, draw a
/// batch, forward to the loss, backward, clip the global gradient norm, AdamW update.
/// The clip is a factor computed on the device that AdamW applies as it reads each
/// gradient (optim::clip_factor), so the host waits for the device only once a step,
/// for the loss. The model computes in `config.dtype` (FP32, or BF16 / F16 on FP32
/// master weights); in F16 the loss is scaled before the backward by a `LossScaler`,
/// whose state checkpoints keep, and the gradients are unscaled by the factor that
/// clips them. On a GPU, every step after the first is the replay of one CUDA graph of
/// the step (`TrainConfig::cuda_graph`; Note [The step as one CUDA graph] in
/// train/step_graph.cpp).
/// `Evaluate` measures the validation loss on the same fixed batches every time (so two
/// evaluations differ only because the model did). `Save` / `Resume` go through
/// checkpoint.h; a resumed run continues with exactly the batches, dropout masks and
/// optimizer moments the uninterrupted run would have used, so its losses are
/// identical bit for bit on the same machine. Read next: chapters/11_gpt/train_gpt.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "zero/autograd/profiler.h"
#include "zero/core/cuda_graph.h"
#include "zero/data/batch_sampler.h"
#include "zero/distributed/grad_buckets.h"
#include "zero/nn/gpt.h"
#include "zero/optim/adamw.h"
#include "zero/train/checkpoint.h"
#include "zero/train/config.h"
#include "zero/train/loss_scaler.h"

namespace zero::dist {
class Communicator;
class DataParallel;
}  // namespace zero::dist

namespace zero::train {

/// The tokens a run trains and validates on, and where they came from.
struct TokenData {
  std::vector<int32_t> train;  ///< Training split.
  std::vector<int32_t> val;    ///< Validation split.
  std::string dir;             ///< Prepared dataset folder (recorded in checkpoints).
  std::string vocab_path;      ///< Its vocab.json (copied into checkpoints).
};

/// What one training step did.
struct StepResult {
  float loss = 0;        ///< Loss of the step's batch (before the update).
  float lr = 0;          ///< Learning rate used.
  float grad_norm = 0;   ///< Global gradient norm before clipping.
  double ms = 0;         ///< Wall time, including the one synchronisation that reads the loss.
  bool skipped = false;  ///< True when the gradient norm was not finite and no update was made.
  float loss_scale = 1;  ///< The loss scale the step's backward used (1 unless F16).
  bool replayed = false;  ///< True when the step ran as a CUDA graph (TrainConfig::cuda_graph).
};

/// A GPT, its AdamW optimiser, the batch samplers and the step count.
class Trainer {
 public:
  /// Builds the model from `config` (its vocab_size must cover the data's ids) on
  /// `device`, the optimiser, and samplers over `data` seeded from `config.seed`.
  /// @throws zero::Error if a split is too short for one block.
  Trainer(const TrainConfig& config, TokenData data, Device device);

  /// Consecutive steps with a non-finite loss after which `Step` gives up.
  static constexpr int64_t kDivergedAfter = 20;
  /// One optimisation step (see the file comment); increments `step()`.
  /// @throws zero::Error when the loss has not been finite for `kDivergedAfter` steps in
  /// a row: the run has diverged, and nothing more is saved.
  StepResult Step();
  /// Where the time of a few steps went (profiler.h).
  struct Profile {
    std::vector<profiler::Row> rows;  ///< Per op and pass, longest first.
    double total_ms = 0;              ///< Wall time of the profiled steps together.
    int64_t steps = 0;                ///< How many steps were profiled.
    /// A title line, then the rows as a table of per-step times and shares
    /// (profiler::format_table).
    std::string Table() const;
  };
  /// Runs `steps` ordinary training steps (they count and update the model) with the op
  /// profiler recording, and returns the breakdown.
  Profile ProfileSteps(int64_t steps);

  /// Mean loss over `iters` batches of the validation split (the same batches on every
  /// call), in evaluation mode without recording gradients. Data-parallel, a batch means
  /// the global batch of world * batch_size rows, evaluated by this rank alone.
  float Evaluate(int64_t iters);

  /// The state to save now: step, RNG positions, config, paths, best val loss.
  TrainerState State();
  /// Writes a checkpoint of the whole run to `dir` (checkpoint.h). On a data-parallel
  /// rank other than 0 it does nothing: rank 0 writes for all.
  /// @throws zero::Error, writing nothing, when the last step's loss was not finite, so
  /// the checkpoint already in `dir` (from a healthy step) is kept.
  void Save(const std::string& dir);
  /// Continues a run saved by `Save`: weights, moments, step, best val loss, and the
  /// dropout and sampler positions. The model shape must match; the hyper-parameters
  /// of this trainer's config are kept (so a resumed run may change max_steps).
  void Resume(const std::string& dir);
  /// Loads only the weights of the checkpoint in `dir` (fine-tuning from it).
  void LoadWeights(const std::string& dir);

  /// The model.
  nn::GPT& model() { return *model_; }
  /// The optimiser.
  optim::AdamW& optimizer() { return *optimizer_; }
  /// The run's configuration.
  const TrainConfig& config() const { return config_; }
  /// Steps completed.
  int64_t step() const { return step_; }
  /// Where the model lives.
  Device device() const { return device_; }
  /// Steps whose update was skipped for a non-finite gradient norm, over the whole run
  /// (saved in checkpoints).
  int64_t skipped_steps() const { return skipped_; }
  /// The dynamic loss scaler: enabled in F16, a scale of 1 otherwise.
  const LossScaler& loss_scaler() const { return scaler_; }
  /// Lowest validation loss recorded with `RecordValLoss` (+inf before any).
  float best_val_loss() const { return best_val_loss_; }
  /// Records a validation loss; returns true when it is a new best.
  bool RecordValLoss(float loss);
  /// Makes this trainer one rank of data-parallel training over `comm`: its batches become
  /// rank `comm->rank()`'s shard (BatchSampler::SetShard), gradients are averaged over
  /// ranks during backward (dist::DataParallel) and the reported loss is the ranks'
  /// mean. Overwrites the weights with rank 0's. Call it after `Resume`/`LoadWeights`.
  /// Defined in distributed.cpp. @throws zero::Error if `comm` is on another device.
  void EnableDataParallel(std::shared_ptr<dist::Communicator> comm,
                          size_t bucket_cap_bytes = dist::GradBuckets::kDefaultCapBytes);
  /// Whether the step the next `Step()` takes would run as a CUDA graph:
  /// `TrainConfig::cuda_graph` on a GPU, not F16, not data-parallel, not profiling, and no
  /// capture has failed.
  bool graph_allowed() const;
  /// The data-parallel machinery, or null for a single-process run.
  dist::DataParallel* data_parallel() const { return data_parallel_.get(); }
  /// Sets the metrics log path recorded in checkpoints.
  void set_metrics_path(const std::string& path) { metrics_path_ = path; }

 private:
  TrainConfig config_;
  Device device_;
  std::string data_dir_, vocab_path_, metrics_path_;
  std::unique_ptr<nn::GPT> model_;
  std::unique_ptr<optim::AdamW> optimizer_;
  std::unique_ptr<data::BatchSampler> train_sampler_;
  std::unique_ptr<data::BatchSampler> val_sampler_;
  std::vector<Tensor> params_;
  std::shared_ptr<dist::DataParallel> data_parallel_;  // EnableDataParallel
  LossScaler scaler_;
  int64_t step_ = 0;
  int64_t skipped_ = 0;
  int64_t nonfinite_in_a_row_ = 0;  // steps whose loss was NaN or infinite, up to now
  float best_val_loss_;

  // The step's GPU work: its loss and (norm, AdamW factor), both still on the device.
  struct StepTensors {
    Tensor loss, norm_and_factor;
  };
  StepTensors EagerStep(const Tensor& x, const Tensor& y, float loss_scale);
  // Defined in step_graph.cpp (Note [The step as one CUDA graph]).
  StepTensors GraphStep(const Tensor& x, const Tensor& y);
  StepTensors CaptureStep(const Tensor& x, const Tensor& y);
  StepTensors Update(const Tensor& loss, float loss_scale, bool captured);
  void DropGraph();
  std::unique_ptr<cuda::CudaGraph> graph_;  // the captured step, once captured
  Tensor graph_x_, graph_y_;                // its fixed inputs
  StepTensors graph_out_;                   // its outputs, rewritten by each replay
  uint64_t graph_words_ = 0;  // Philox words a step draws, rounded up to 4
  uint64_t graph_start_ = 0;  // the dropout generator's offset when it was captured
  int64_t eager_steps_ = 0;   // steps run kernel by kernel by this trainer
  bool graph_failed_ = false;
  bool profiling_ = false;
};

}  // namespace zero::train
