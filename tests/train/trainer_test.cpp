// Tests of the training loop (zero/train/trainer.h): stopping, saving and resuming
// gives the very same losses as running straight through (to the bit on the CPU; within
// 1e-5 on CUDA, where the embedding backward's atomics may reorder additions), and
// training on learnable data lowers the loss.
#include "zero/train/trainer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "zero/autograd/grad_mode.h"
#include "zero/core/philox.h"
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

}  // namespace
}  // namespace zero::train
