// The training step, evaluation, and saving / resuming a run (see trainer.h).
#include "zero/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <tuple>

#include "zero/autograd/functional.h"
#include "zero/autograd/grad_mode.h"
#include "zero/autograd/profiler.h"
#include "zero/distributed/data_parallel.h"
#include "zero/optim/grad_clip.h"
#include "zero/optim/lr_schedule.h"
#include "zero/train/budget.h"

namespace zero::train {

namespace {

// Validation batches come from their own stream, so evaluating never moves the
// training sampler, and a fixed one, so every evaluation sees the same batches.
constexpr uint64_t kValSeedOffset = 1;

}  // namespace

Trainer::Trainer(const TrainConfig& config, TokenData data, Device device)
    : config_(config),
      device_(device),
      data_dir_(data.dir),
      vocab_path_(data.vocab_path),
      best_val_loss_(std::numeric_limits<float>::infinity()) {
  const int64_t block = config.model.block_size, batch = config.batch_size;
  ZERO_CHECK(batch > 0 && config.max_steps >= 0 && config.warmup >= 0,
             "Trainer: expected batch_size > 0, max_steps >= 0 and warmup >= 0, got ", batch, ", ",
             config.max_steps, ", ", config.warmup);
  check_fits(training_bytes_lower_bound(config), device,
             detail::str_cat("training a GPT of n_layer = ", config.model.n_layer,
                             ", n_embd = ", config.model.n_embd, ", vocab ",
                             config.model.vocab_size, " on batches of ", batch, " x ", block));
  check_compute_dtype(config.dtype, device);
  model_ = std::make_unique<nn::GPT>(config.model, config.seed);
  model_->To(device);
  model_->SetComputeDtype(config.dtype);
  scaler_ = LossScaler(config.dtype == DataType::F16, config.loss_scaling);
  optim::AdamWOptions options;
  options.lr = config.lr;
  options.beta1 = config.beta1;
  options.beta2 = config.beta2;
  options.weight_decay = config.weight_decay;
  optimizer_ = std::make_unique<optim::AdamW>(model_->NamedParameters(), options);
  params_ = model_->Parameters();
  train_sampler_ = std::make_unique<data::BatchSampler>(std::move(data.train), batch, block,
                                                        config.seed, device);
  val_sampler_ = std::make_unique<data::BatchSampler>(std::move(data.val), batch, block,
                                                      config.seed + kValSeedOffset, device);
}

StepResult Trainer::Step() {
  const auto start = std::chrono::steady_clock::now();
  StepResult r;
  // lr_at needs warmup <= max_steps; a run shorter than its warmup just warms up.
  r.lr = optim::lr_at(step_, std::min(config_.warmup, config_.max_steps),
                      std::max<int64_t>(config_.max_steps, 1), config_.lr, config_.min_lr);
  optimizer_->SetLr(r.lr);

  Tensor x, y;
  {
    profiler::Scope scope("sampler: next batch");
    std::tie(x, y) = train_sampler_->Next();  // (B, T) each
  }
  r.loss_scale = scaler_.scale();
  // The first step runs kernel by kernel (it times the GEMMs and makes the cached casts,
  // which a capture could not); a graph step is empty when its capture failed.
  StepTensors out;
  if (graph_allowed() && eager_steps_ > 0) out = GraphStep(x, y);
  r.replayed = out.loss.defined();
  if (!r.replayed) out = EagerStep(x, y, r.loss_scale);
  const Tensor& loss = out.loss;
  const Tensor& norm_and_factor = out.norm_and_factor;
  // The step's one wait for the device (the loss's mean over ranks when data-parallel);
  // the norm and factor, computed before the update, are then a copy with nothing to wait for.
  r.loss = data_parallel_ ? data_parallel_->AverageOverRanks(loss) : loss.Item();
  const std::vector<float> norm_factor = norm_and_factor.ToVector<float>();
  r.grad_norm = norm_factor[0];
  // The device skipped the update exactly when the factor is not finite. In F16 the scale
  // is then halved; every rank sees the same all-reduced norm and makes the same call.
  r.skipped = !scaler_.Update(std::isfinite(norm_factor[1]));
  if (r.skipped) {
    ++skipped_;                 // this batch is dropped
    optimizer_->UncountStep();  // AdamW counted the step before the device skipped it
  }
  ++step_;
  nonfinite_in_a_row_ = std::isfinite(r.loss) ? 0 : nonfinite_in_a_row_ + 1;
  ZERO_CHECK(nonfinite_in_a_row_ < kDivergedAfter, "training diverged: the loss has not been "
             "finite for ", kDivergedAfter, " steps in a row (up to step ", step_,
             "); stopping without saving, so the last checkpoint is the last healthy one "
             "(a lower --lr may help)");
  r.ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return r;
}

Trainer::StepTensors Trainer::EagerStep(const Tensor& x, const Tensor& y, float loss_scale) {
  ++eager_steps_;
  return Update(model_->Loss(x, y), loss_scale, false);  // () F32 in every dtype
}

// Backward, clip and AdamW from the batch's loss: the part of a step after the forward.
// `captured`: AdamW's constants come from the PrepareStep made before the capture.
Trainer::StepTensors Trainer::Update(const Tensor& loss, float loss_scale, bool captured) {
  // F16: the gradients are those of loss * S, S the loss scale (loss_scaler.h), so that
  // small ones stay above F16's smallest values; the clip factor below divides by S again.
  const Tensor scaled = scaler_.enabled() ? loss * loss_scale : loss;  // ()
  if (data_parallel_) {
    data_parallel_->Backward(scaled);  // gradients averaged over ranks (distributed.h)
  } else {
    scaled.Backward();
  }
  // Clipping (and in F16 unscaling) is decided on the device and applied inside AdamW's
  // pass, so nothing waits for the device between backward and update (Note [The clip
  // factor on the device] in optim/grad_clip.cpp). Same bits as clip_grad_norm + Step().
  StepTensors out{loss, Tensor()};  // norm_and_factor: (2,), the true norm, AdamW's factor
  {
    profiler::Scope scope("clip_grad_norm");
    const float bound = config_.grad_clip > 0 ? config_.grad_clip : INFINITY;
    out.norm_and_factor = optim::clip_factor(params_, bound, loss_scale);  // unscales too
  }
  {
    // A non-finite norm (an F16 overflow, or a real inf/NaN) gives a NaN factor, and the
    // update writes nothing: an inf/NaN gradient would poison the moments.
    profiler::Scope scope("AdamW step");
    const Tensor factor = out.norm_and_factor.Slice(0, 1, 2);
    if (captured) {
      optimizer_->ApplyStep(factor);
    } else {
      optimizer_->Step(factor);
    }
  }
  optimizer_->ZeroGrad();
  return out;
}

Trainer::Profile Trainer::ProfileSteps(int64_t steps) {
  ZERO_CHECK(steps > 0, "Trainer::ProfileSteps: expected steps > 0, got ", steps);
  Profile p;
  p.steps = steps;
  profiling_ = true;  // the profiler times ops one by one: no graph
  profiler::Start(device_);
  try {
    for (int64_t i = 0; i < steps; ++i) p.total_ms += Step().ms;
  } catch (...) {
    profiling_ = false;
    profiler::Stop();
    throw;
  }
  profiling_ = false;
  p.rows = profiler::Stop();
  return p;
}

std::string Trainer::Profile::Table() const {
  char title[128];
  std::snprintf(title, sizeof title,
                "where a step's time goes (%lld steps profiled, %.2f ms/step with the "
                "profiler on):\n",
                static_cast<long long>(steps), steps > 0 ? total_ms / steps : 0.0);
  return title + profiler::format_table(rows, total_ms, steps);
}

float Trainer::Evaluate(int64_t iters) {
  ZERO_CHECK(iters > 0, "Trainer::Evaluate: expected iters > 0, got ", iters);
  nn::EvalGuard eval(*model_);
  NoGradGuard no_grad;
  val_sampler_->SetPosition(0);
  // Data-parallel, rank 0 evaluates alone: N batches of B rows for each global batch of
  // N*B rows, the very windows that one GPU with batch N*B evaluates (distributed.h).
  const int64_t batches = iters * (data_parallel_ ? data_parallel_->communicator().world() : 1);
  double total = 0;
  for (int64_t i = 0; i < batches; ++i) {
    auto [x, y] = val_sampler_->Next();  // (B, T) each
    total += model_->Loss(x, y).Item();
  }
  return static_cast<float>(total / static_cast<double>(batches));
}

bool Trainer::graph_allowed() const {
  return config_.cuda_graph && device_.is_cuda() && !data_parallel_ && !scaler_.enabled() &&
         !profiling_ && !graph_failed_;
}

bool Trainer::RecordValLoss(float loss) {
  if (!(loss < best_val_loss_)) return false;
  best_val_loss_ = loss;
  return true;
}

TrainerState Trainer::State() {
  TrainerState s;
  s.step = step_;
  s.best_val_loss = best_val_loss_;
  s.dropout_seed = model_->dropout_generator().seed();
  s.dropout_offset = model_->dropout_generator().offset();
  s.sampler_seed = train_sampler_->seed();
  s.sampler_position = train_sampler_->position();
  s.skipped_steps = skipped_;
  s.loss_scale = scaler_.scale();
  s.loss_scale_good_steps = scaler_.good_steps();
  s.config = config_;
  s.data_dir = data_dir_;
  s.vocab_path = vocab_path_;
  s.metrics_path = metrics_path_;
  return s;
}

void Trainer::Save(const std::string& dir) {
  if (data_parallel_ && data_parallel_->communicator().rank() != 0) return;  // rank 0 writes
  ZERO_CHECK(nonfinite_in_a_row_ == 0, "not saving a checkpoint to ", dir, " at step ", step_,
             ": the last step's loss was not finite (the checkpoint already there is kept)");
  save_checkpoint(dir, *model_, *optimizer_, State());
}

void Trainer::Resume(const std::string& dir) {
  DropGraph();  // the loaded state is captured afresh
  TrainerState s;
  load_checkpoint(dir, *model_, optimizer_.get(), s);
  ZERO_CHECK(s.sampler_seed == train_sampler_->seed(),
             "Trainer::Resume: the checkpoint's batches "
             "come from sampler seed ",
             s.sampler_seed, ", this run's from ", train_sampler_->seed(),
             " (resume with the checkpoint's --seed)");
  model_->dropout_generator().SetState(s.dropout_seed, s.dropout_offset);
  train_sampler_->SetPosition(s.sampler_position);
  // The scale continues where the F16 run left it; a run that was not F16 had none, and
  // an F16 run resumed from it starts from the initial scale.
  if (scaler_.enabled() && s.config.dtype == DataType::F16) {
    scaler_.SetState(s.loss_scale, s.loss_scale_good_steps);
  }
  step_ = s.step;
  skipped_ = s.skipped_steps;
  best_val_loss_ = s.best_val_loss;
}

void Trainer::LoadWeights(const std::string& dir) {
  DropGraph();
  TrainerState ignored;
  load_checkpoint(dir, *model_, nullptr, ignored);
}

}  // namespace zero::train
