// Tests of the training loop (zero/train/trainer.h): stopping, saving and resuming
// gives the very same losses as running straight through (to the bit on the CPU, in
// FP32, BF16 and F16 with its loss scale; within 1e-5 on CUDA, where the embedding
// backward's atomics may reorder additions), training on learnable data lowers the
// loss, and (on a GPU) BF16 and F16 training follow FP32's loss curve.
#include "zero/train/trainer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <vector>

#include "zero/autograd/functional.h"
#include "zero/autograd/grad_mode.h"
#include "zero/core/philox.h"
#include "zero/optim/grad_clip.h"
#include "zero/optim/lr_schedule.h"

namespace zero::train {
namespace {

// Random tokens over `vocab` ids, or a repeating pattern when `pattern` is true.
std::vector<int32_t> tokens(int64_t n, int64_t vocab, uint64_t seed, bool pattern = false) {
  std::vector<int32_t> out(n);
  for (int64_t i = 0; i < n; ++i) {
    out[i] =
        pattern ? static_cast<int32_t>(i % 5) : static_cast<int32_t>(philox_word(seed, i) % vocab);
  }
  return out;
}

TrainConfig tiny_config() {
  TrainConfig c;
  c.model = nn::GPTConfig{11, 8, 2, 2, 16, 0.1f};  // dropout on: its stream must resume too
  c.batch_size = 4;
  c.lr = 1e-2f;
  c.min_lr = 1e-3f;
  c.warmup = 2;
  c.max_steps = 6;
  c.seed = 5;
  return c;
}

TokenData data(bool pattern = false) {
  return TokenData{tokens(600, 11, 1, pattern), tokens(200, 11, 2, pattern), "", ""};
}

TEST(TrainerTest, ResumedRunRepeatsTheUninterruptedOneBitForBit) {
  Trainer straight(tiny_config(), data(), Device::Cpu());
  std::vector<float> expected;
  for (int i = 0; i < 6; ++i) expected.push_back(straight.Step().loss);

  const std::string dir =
      (std::filesystem::path(::testing::TempDir()) / "zero_trainer_test_ckpt").string();
  std::vector<float> got;
  {
    Trainer first(tiny_config(), data(), Device::Cpu());
    for (int i = 0; i < 3; ++i) got.push_back(first.Step().loss);
    first.RecordValLoss(first.Evaluate(2));  // evaluating must not disturb what follows
    first.Save(dir);
  }
  Trainer second(tiny_config(), data(), Device::Cpu());
  second.Resume(dir);
  EXPECT_EQ(second.step(), 3);
  EXPECT_TRUE(std::isfinite(second.best_val_loss()));
  for (int i = 0; i < 3; ++i) got.push_back(second.Step().loss);

  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], expected[i]) << "step " << i;
  const auto a = straight.model().Parameters(), b = second.model().Parameters();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].ToVector<float>(), b[i].ToVector<float>());
  std::filesystem::remove_all(dir);
}

// In BF16 and in F16 too, and the F16 loss scale with them. The F16 run starts from a
// scale of 2^18 and doubles it after every 2 good steps; at 2^19 this tiny model's
// F16 weight gradients overflow (a skipped update, the scale halved). So the scaler's
// state changes all through the run, a skip falls before the checkpoint, and the
// resumed half must continue it exactly.
TEST(TrainerTest, ResumedMixedPrecisionRunsRepeatTheUninterruptedOnesBitForBit) {
  for (DataType dtype : {DataType::BF16, DataType::F16}) {
    TrainConfig c = tiny_config();
    c.dtype = dtype;
    c.loss_scaling.init_scale = 262144.0f;
    c.loss_scaling.growth_interval = 2;
    Trainer straight(c, data(), Device::Cpu());
    std::vector<float> expected, scales;
    for (int i = 0; i < 6; ++i) {
      const StepResult r = straight.Step();
      expected.push_back(r.loss);
      scales.push_back(r.loss_scale);
    }
    const std::string dir =
        (std::filesystem::path(::testing::TempDir()) / "zero_trainer_test_amp_ckpt").string();
    std::vector<float> got, got_scales;
    {
      Trainer first(c, data(), Device::Cpu());
      for (int i = 0; i < 3; ++i) {
        const StepResult r = first.Step();
        got.push_back(r.loss);
        got_scales.push_back(r.loss_scale);
      }
      first.Save(dir);
    }
    Trainer second(c, data(), Device::Cpu());
    second.Resume(dir);
    for (int i = 0; i < 3; ++i) {
      const StepResult r = second.Step();
      got.push_back(r.loss);
      got_scales.push_back(r.loss_scale);
    }
    const char* name = to_string(dtype);
    EXPECT_EQ(got, expected) << name;
    EXPECT_EQ(got_scales, scales) << name;
    EXPECT_EQ(second.loss_scaler().scale(), straight.loss_scaler().scale()) << name;
    EXPECT_EQ(second.loss_scaler().good_steps(), straight.loss_scaler().good_steps()) << name;
    EXPECT_EQ(second.skipped_steps(), straight.skipped_steps()) << name;
    const auto a = straight.model().Parameters(), b = second.model().Parameters();
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].dtype(), DataType::F32) << name << ": master weights";
      EXPECT_EQ(a[i].ToVector<float>(), b[i].ToVector<float>()) << name << " parameter " << i;
    }
    if (dtype == DataType::F16) {
      EXPECT_GT(straight.skipped_steps(), 0) << "2^19 should overflow F16 gradients";
      EXPECT_LT(straight.skipped_steps(), 6) << "the halved scale should fit at last";
      EXPECT_NE(scales.front(), scales.back());
    } else {
      EXPECT_EQ(straight.skipped_steps(), 0);
      EXPECT_EQ(scales, std::vector<float>(6, 1.0f)) << "BF16 is never scaled";
    }
    std::filesystem::remove_all(dir);
  }
}

TEST(TrainerTest, ResumedCudaRunMatchesTheUninterruptedOneWithin1e5) {
  if (!cuda_available()) GTEST_SKIP() << "needs a CUDA device";
  const Device gpu = Device::Cuda(0);
  Trainer straight(tiny_config(), data(), gpu);
  std::vector<float> expected;
  for (int i = 0; i < 6; ++i) expected.push_back(straight.Step().loss);

  const std::string dir =
      (std::filesystem::path(::testing::TempDir()) / "zero_trainer_test_cuda_ckpt").string();
  std::vector<float> got;
  {
    Trainer first(tiny_config(), data(), gpu);
    for (int i = 0; i < 3; ++i) got.push_back(first.Step().loss);
    first.Save(dir);
  }
  Trainer second(tiny_config(), data(), gpu);
  second.Resume(dir);
  EXPECT_EQ(second.step(), 3);
  for (int i = 0; i < 3; ++i) got.push_back(second.Step().loss);

  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], expected[i], 1e-5 * std::max(1.0f, std::fabs(expected[i]))) << "step " << i;
  }
  const auto a = straight.model().Parameters(), b = second.model().Parameters();
  for (size_t i = 0; i < a.size(); ++i) {
    const std::vector<float> x = a[i].ToVector<float>(), y = b[i].ToVector<float>();
    // Atomic adds on the GPU (the embedding backward) sum in a varying order, so a
    // gradient entry that is almost zero can differ in its last bits, and AdamW's
    // m / sqrt(v) turns that into an update of up to lr = 1e-2: parameters are compared
    // at 1e-4, still 100 times finer than one such step (the H200 showed 1.06e-5).
    for (size_t j = 0; j < x.size(); ++j) ASSERT_NEAR(x[j], y[j], 1e-4f) << "parameter " << i;
  }
  std::filesystem::remove_all(dir);
}

// Each float's bits, so that tensors holding NaN compare too.
std::vector<uint32_t> bits(const Tensor& t) {
  const std::vector<float> v = t.ToVector<float>();
  std::vector<uint32_t> out(v.size());
  std::memcpy(out.data(), v.data(), v.size() * sizeof(float));
  return out;
}

// Expects the two lists of tensors to hold the same bits, entry by entry.
void expect_same_bits(const std::vector<Tensor>& a, const std::vector<Tensor>& b,
                      const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(bits(a[i]), bits(b[i])) << what << " " << i;
}

std::vector<Tensor> moments(const optim::AdamW& adamw) {
  std::vector<Tensor> out;
  for (const auto& [name, t] : adamw.NamedState()) out.push_back(t);
  return out;
}

// Trainer::Step, which clips through a factor left on the device (optim::clip_factor),
// against the loop it replaced, written out here as the trainer builds itself: the
// host reads clip_grad_norm's norm, skips a non-finite one, else AdamW::Step(). The
// same losses, norms, skips, loss scales, parameters and moments to the bit, in FP32
// (a bound low enough that most steps clip) and in F16 with a loss scale that overflows
// now and then (as in the resume test above), where the loss scale also unscales.
TEST(TrainerTest, StepEqualsTheLoopWithClipGradNormBitForBit) {
  for (DataType dtype : {DataType::F32, DataType::F16}) {
    TrainConfig c = tiny_config();
    c.dtype = dtype;
    c.grad_clip = 0.5f;
    c.loss_scaling.init_scale = 262144.0f;
    c.loss_scaling.growth_interval = 2;
    const Device cpu = Device::Cpu();
    Trainer trainer(c, data(), cpu);

    nn::GPT model(c.model, c.seed);
    model.To(cpu);
    model.SetComputeDtype(c.dtype);
    LossScaler scaler(c.dtype == DataType::F16, c.loss_scaling);
    optim::AdamWOptions options;
    options.lr = c.lr;
    options.beta1 = c.beta1;
    options.beta2 = c.beta2;
    options.weight_decay = c.weight_decay;
    optim::AdamW adamw(model.NamedParameters(), options);
    data::BatchSampler sampler(data().train, c.batch_size, c.model.block_size, c.seed, cpu);
    const std::vector<Tensor> params = model.Parameters();
    int64_t skipped = 0, clipped = 0;
    const char* name = to_string(dtype);
    for (int64_t step = 0; step < c.max_steps; ++step) {
      const StepResult r = trainer.Step();
      adamw.SetLr(optim::lr_at(step, c.warmup, c.max_steps, c.lr, c.min_lr));
      const auto [x, y] = sampler.Next();
      const Tensor loss = model.Loss(x, y);
      const float scale = scaler.scale();
      (scaler.enabled() ? loss * scale : loss).Backward();
      const float norm = optim::clip_grad_norm(params, c.grad_clip, scale);
      const bool finite = scaler.Update(std::isfinite(norm));
      if (finite) {
        adamw.Step();
      } else {
        ++skipped;
      }
      adamw.ZeroGrad();
      clipped += finite && norm > c.grad_clip;
      EXPECT_EQ(r.loss, loss.Item()) << name << " step " << step;
      EXPECT_EQ(bits(Tensor::From({r.grad_norm}, {1})), bits(Tensor::From({norm}, {1})))
          << name << " step " << step << ": norm " << r.grad_norm << " vs " << norm;
      EXPECT_EQ(r.skipped, !finite) << name << " step " << step;
      EXPECT_EQ(r.loss_scale, scale) << name << " step " << step;
    }
    expect_same_bits(trainer.model().Parameters(), params, std::string(name) + " parameter");
    expect_same_bits(moments(trainer.optimizer()), moments(adamw), std::string(name) + " moment");
    EXPECT_EQ(trainer.skipped_steps(), skipped) << name;
    EXPECT_EQ(trainer.optimizer().step(), adamw.step()) << name;
    EXPECT_EQ(trainer.optimizer().step(), c.max_steps - skipped) << name;
    EXPECT_GT(clipped, 0) << name << ": no step was clipped, so clipping went untested";
    if (dtype == DataType::F16) {
      EXPECT_GT(skipped, 0) << "2^19 should overflow F16 gradients";
    }
  }
}

// A step whose gradients are not finite is skipped: the parameters and moments stay as
// they were, and AdamW's step count (the bias correction) does not advance; the trainer's
// own count does. Two causes: an F16 backward at a loss scale of 2^30, which overflows
// (the scale is halved), and a NaN weight in FP32.
TEST(TrainerTest, StepWithNonFiniteGradientsIsSkippedAndNotCounted) {
  TrainConfig c = tiny_config();
  c.dtype = DataType::F16;
  c.loss_scaling.init_scale = 1073741824.0f;  // 2^30
  Trainer f16(c, data(), Device::Cpu());
  const std::vector<Tensor> before = f16.model().Parameters();
  std::vector<Tensor> copies;
  for (const Tensor& p : before) copies.push_back(p.Clone());
  StepResult r = f16.Step();
  EXPECT_TRUE(r.skipped);
  EXPECT_FALSE(std::isfinite(r.grad_norm));
  EXPECT_TRUE(std::isfinite(r.loss)) << "the loss is FP32 and finite; its F16 gradients are not";
  EXPECT_EQ(f16.step(), 1);
  EXPECT_EQ(f16.skipped_steps(), 1);
  EXPECT_EQ(f16.optimizer().step(), 0);
  EXPECT_EQ(f16.loss_scaler().scale(), 536870912.0f) << "halved";
  expect_same_bits(f16.model().Parameters(), copies, "F16 parameter");
  for (const Tensor& m : moments(f16.optimizer())) {
    EXPECT_EQ(bits(m), bits(Tensor::Zeros(m.sizes()))) << "a moment changed";
  }
  // Halving until the gradients fit: the first update is then AdamW's step 1.
  for (int i = 0; i < 30 && r.skipped; ++i) r = f16.Step();
  ASSERT_FALSE(r.skipped) << "the scale never came down far enough";
  EXPECT_EQ(f16.optimizer().step(), 1);
  EXPECT_EQ(f16.optimizer().step(), f16.step() - f16.skipped_steps());

  Trainer f32(tiny_config(), data(), Device::Cpu());
  f32.Step();
  {
    NoGradGuard no_grad;
    f32.model().Parameters()[1].Fill_(NAN);
  }
  std::vector<Tensor> snapshot, state;
  for (const Tensor& p : f32.model().Parameters()) snapshot.push_back(p.Clone());
  for (const Tensor& m : moments(f32.optimizer())) state.push_back(m.Clone());
  r = f32.Step();
  EXPECT_TRUE(r.skipped);
  EXPECT_TRUE(std::isnan(r.grad_norm));
  EXPECT_EQ(f32.skipped_steps(), 1);
  EXPECT_EQ(f32.optimizer().step(), 1);
  EXPECT_EQ(f32.step(), 2);
  expect_same_bits(f32.model().Parameters(), snapshot, "FP32 parameter");
  expect_same_bits(moments(f32.optimizer()), state, "FP32 moment");
}

TEST(TrainerTest, LearnsARepeatingPattern) {
  TrainConfig c = tiny_config();
  c.max_steps = 40;
  c.model.dropout = 0.0f;
  Trainer trainer(c, data(true), Device::Cpu());
  const float before = trainer.Evaluate(2);
  StepResult r;
  for (int i = 0; i < 40; ++i) r = trainer.Step();
  EXPECT_NEAR(before, std::log(11.0f), 0.3f) << "an untrained model guesses uniformly";
  EXPECT_LT(trainer.Evaluate(2), 0.5f) << "every next token is determined by the last";
  EXPECT_EQ(trainer.Evaluate(2), trainer.Evaluate(2)) << "evaluation uses fixed batches";
  EXPECT_FLOAT_EQ(r.lr, optim::lr_at(39, 2, 40, 1e-2f, 1e-3f));
  EXPECT_GT(r.grad_norm, 0.0f);
  EXPECT_EQ(trainer.step(), 40);
}

// A model whose weights are NaN has a NaN loss on every step: after kDivergedAfter of
// them Step() stops the run, and no step in between may overwrite a saved checkpoint.
TEST(TrainerTest, DivergedRunStopsAndNeverSavesANonFiniteModel) {
  const std::string dir =
      (std::filesystem::path(::testing::TempDir()) / "zero_trainer_test_diverged").string();
  std::filesystem::remove_all(dir);
  Trainer trainer(tiny_config(), data(), Device::Cpu());
  trainer.Step();
  trainer.Save(dir);  // a healthy checkpoint
  {
    NoGradGuard no_grad;
    trainer.model().Parameters()[0].Fill_(NAN);
  }
  trainer.Step();
  EXPECT_THROW(trainer.Save(dir), Error);  // the last loss was NaN: keep the healthy one
  bool stopped = false;
  for (int64_t i = 1; i < Trainer::kDivergedAfter && !stopped; ++i) {
    try {
      trainer.Step();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("training diverged"), std::string::npos) << e.what();
      stopped = true;
    }
  }
  EXPECT_TRUE(stopped) << "Step() must throw after " << Trainer::kDivergedAfter
                       << " non-finite losses in a row";
  EXPECT_EQ(read_trainer_state(dir).step, 1);  // still the healthy checkpoint
}

// A checkpoint holding NaN is refused when loaded, naming the tensor, before the model
// or the optimiser change.
TEST(TrainerTest, CheckpointWithNonFiniteWeightsIsRefused) {
  const std::string dir =
      (std::filesystem::path(::testing::TempDir()) / "zero_trainer_test_nan_ckpt").string();
  Trainer trainer(tiny_config(), data(), Device::Cpu());
  trainer.Step();
  auto named = trainer.model().NamedParameters();
  {
    NoGradGuard no_grad;
    named[1].second.Fill_(INFINITY);
  }
  save_checkpoint(dir, trainer.model(), trainer.optimizer(), trainer.State());
  Trainer other(tiny_config(), data(), Device::Cpu());
  const float before = other.model().Parameters()[0].ToVector<float>()[0];
  try {
    other.Resume(dir);
    FAIL() << "a checkpoint with an infinite weight must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(named[1].first), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("non-finite"), std::string::npos) << e.what();
  }
  EXPECT_EQ(other.model().Parameters()[0].ToVector<float>()[0], before);
  EXPECT_EQ(other.step(), 0);
}


// ---------------------------------------------------------------- mixed precision on a GPU

// Tokens with something to learn: `active` ids spread over the vocabulary, each followed
// by its own successor (a fixed random permutation) 3 times in 4 and by a random active
// id otherwise. The best possible loss is about 2.3 nats, far below the ln(50304) = 10.8
// of an untrained model, so the loss curve falls steeply and then slowly.
std::vector<int32_t> markov_tokens(int64_t n, int64_t vocab, int64_t active, uint64_t seed) {
  std::vector<int32_t> ids(static_cast<size_t>(active)), successor(ids.size());
  for (int64_t i = 0; i < active; ++i) ids[i] = static_cast<int32_t>(i * (vocab / active));
  for (int64_t i = 0; i < active; ++i) successor[i] = static_cast<int32_t>(i);
  for (int64_t i = active - 1; i > 0; --i) {  // Fisher-Yates from Philox words
    std::swap(successor[i], successor[philox_word(seed, 3 * n + i) % (i + 1)]);
  }
  std::vector<int32_t> out(static_cast<size_t>(n));
  int64_t state = 0;
  for (int64_t i = 0; i < n; ++i) {
    const bool follow = philox_word(seed, 2 * i) % 4 != 0;
    state = follow ? successor[state] : philox_word(seed, 2 * i + 1) % active;
    out[i] = ids[state];
  }
  return out;
}

// Mean of each window of `w` consecutive losses: entry i is the mean of steps i..i+w-1.
std::vector<double> smoothed(const std::vector<float>& losses, size_t w) {
  std::vector<double> out;
  for (size_t i = 0; i + w <= losses.size(); ++i) {
    double sum = 0.0;
    for (size_t j = i; j < i + w; ++j) sum += losses[j];
    out.push_back(sum / static_cast<double>(w));
  }
  return out;
}

// A GPT-2-shaped model (2 blocks, 12 heads, 768 wide, GPT-2's padded vocabulary of
// 50304, block 256, batch 8: 53M parameters, 2048 tokens a step) trained for 200 steps
// on the same batches from the same weights in FP32, BF16 and F16. The 16-bit runs must
// follow FP32's loss curve: every 20-step mean within 1% of FP32's. Their rounding
// errors, of order u per op (Note [Tolerances of a 16-bit step] in tests/nn/gpt_test.cpp),
// add noise to each step but must not bend the curve. F16 has a second effect: when its
// gradients overflow, the loss scaler skips that update (and halves the scale), and
// each skipped update delays F16's curve by one step. So a 20-step mean of F16 may match
// any of FP32's means from the same window back to as many windows earlier as updates
// were skipped by its end. That allowance holds for a few skips only (the learning rate
// follows the step, not the update, so a run delayed by many updates falls behind for
// good), hence at most 5. BF16 must skip none. Measured on the CPU with this test's data
// and smaller models (lr 3e-3): 2 x 64 wide, BF16 within 0.05% of FP32, and F16, which
// skipped 4 updates in a gradient spike, 1.55% off at the same step and 0.49% with the
// delay allowed; 2 x 32 wide, vocabulary 2048, no skip, BF16 0.014% and F16 0.009%.
TEST(TrainerTest, Bf16AndFp16CudaTrainingFollowsTheFp32LossCurve) {
  if (!cuda_available()) GTEST_SKIP() << "needs a CUDA device";
  if (cuda_compute_capability(0) < 80) GTEST_SKIP() << "BF16 needs sm_80 or newer";
  TrainConfig c;
  c.model = nn::GPTConfig{50304, 256, 2, 12, 768, 0.0f};
  c.batch_size = 8;
  c.lr = 6e-4f;
  c.min_lr = 6e-5f;
  c.warmup = 20;
  c.max_steps = 200;
  c.beta2 = 0.95f;
  c.seed = 7;
  const TokenData tokens{markov_tokens(600000, 50304, 1024, 11),
                         markov_tokens(20000, 50304, 1024, 11), "", ""};
  std::map<DataType, std::vector<float>> curves;
  std::map<DataType, std::vector<int64_t>> skipped_by;  // skipped updates up to each step
  for (DataType dtype : {DataType::F32, DataType::BF16, DataType::F16}) {
    c.dtype = dtype;
    Trainer trainer(c, tokens, Device::Cuda(0));
    double ms = 0.0;
    for (int64_t i = 0; i < c.max_steps; ++i) {
      const StepResult r = trainer.Step();
      curves[dtype].push_back(r.loss);
      skipped_by[dtype].push_back(trainer.skipped_steps());
      if (i > 0) ms += r.ms;  // the first step includes cuBLASLt's algorithm search
    }
    for (const Tensor& p : trainer.model().Parameters()) ASSERT_EQ(p.dtype(), DataType::F32);
    std::printf("%s: loss %.4f -> %.4f, %.1f ms a step, %lld updates skipped, loss scale %g\n",
                dtype_flag_name(dtype), curves[dtype].front(), curves[dtype].back(),
                ms / static_cast<double>(c.max_steps - 1),
                static_cast<long long>(trainer.skipped_steps()), trainer.loss_scaler().scale());
  }
  constexpr size_t kWindow = 20;
  const std::vector<double> ref = smoothed(curves[DataType::F32], kWindow);
  ASSERT_LT(ref.back(), 0.7 * ref.front()) << "the FP32 curve must fall for the comparison to "
                                              "mean anything";
  EXPECT_EQ(skipped_by[DataType::F32].back(), 0);
  EXPECT_EQ(skipped_by[DataType::BF16].back(), 0) << "BF16 has FP32's range";
  EXPECT_LE(skipped_by[DataType::F16].back(), 5) << "fp16's loss scaler skipped too often";
  for (DataType dtype : {DataType::BF16, DataType::F16}) {
    EXPECT_NE(curves[dtype], curves[DataType::F32])
        << dtype_flag_name(dtype) << " gave FP32's losses bit for bit: it did not run in 16 bits";
    const std::vector<double> got = smoothed(curves[dtype], kWindow);
    double worst = 0.0;
    for (size_t i = 0; i < ref.size(); ++i) {
      // FP32's means over windows i - k .. i, k the updates skipped by this window's end.
      const size_t k = static_cast<size_t>(skipped_by[dtype][i + kWindow - 1]);
      const auto first = ref.begin() + static_cast<std::ptrdiff_t>(i - std::min(i, k));
      const auto [lo, hi] = std::minmax_element(first, ref.begin() + i + 1);
      const double off = got[i] < *lo ? *lo - got[i] : got[i] > *hi ? got[i] - *hi : 0.0;
      worst = std::max(worst, off / ref[i]);
      EXPECT_LE(off / ref[i], 0.01)
          << dtype_flag_name(dtype) << ": mean loss of steps " << i << ".." << i + kWindow - 1
          << " is " << got[i] << ", FP32's " << ref[i] << " (" << k << " updates skipped)";
    }
    std::printf("%s: largest difference of a %zu-step mean from FP32's: %.3f%%\n",
                dtype_flag_name(dtype), kWindow, 100 * worst);
  }
}
}  // namespace
}  // namespace zero::train
