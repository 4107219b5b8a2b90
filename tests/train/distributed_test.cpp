// Tests of multi-GPU training (zero/train/distributed.h): a group of one trains exactly
// like a plain trainer (one GPU); and, on a machine with two GPUs, two ranks with batch B
// follow the loss curve of one GPU with batch 2B (train_gpt end to end, through chapter 10's
// launcher, chapters/10_multi_gpu/launcher.h, whose flags GptCliTest checks on any machine).
#include "zero/train/distributed.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "tests/support/test_support.h"
#include "zero/core/philox.h"
#include "zero/train/metrics.h"

namespace zero::train {
namespace {

namespace fs = std::filesystem;

TrainConfig small_config() {
  TrainConfig c;
  c.model = nn::GPTConfig{13, 16, 2, 2, 32, 0.0f};
  c.batch_size = 4, c.lr = 1e-2f, c.min_lr = 1e-3f, c.warmup = 2, c.max_steps = 5, c.seed = 9;
  return c;
}

TokenData random_tokens() {
  TokenData d;
  for (int64_t i = 0; i < 2000; ++i) d.train.push_back(static_cast<int32_t>(philox_word(3, i) % 13));
  d.val = std::vector<int32_t>(d.train.begin(), d.train.begin() + 200);
  return d;
}

TEST(DistributedTest, GroupOfOneTrainsLikeAPlainTrainerCuda) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device visible";
  if (!dist::Communicator::available()) GTEST_SKIP() << "Zero was built without NCCL";
  const fs::path dir = fs::temp_directory_path() / "zero_distributed_test_group_of_one";
  fs::create_directories(dir);
  Trainer plain(small_config(), random_tokens(), Device::Cuda(0));
  Trainer ranked(small_config(), random_tokens(), Device::Cuda(0));
  EXPECT_EQ(join_group(ranked, {0, 1, (dir / "nccl_id").string()}), 0);
  ASSERT_NE(ranked.data_parallel(), nullptr);
  for (int step = 0; step < 5; ++step) {
    // Averaging over one rank changes nothing; the embedding backward's atomics may
    // reorder additions between two runs, hence a tolerance rather than equality.
    EXPECT_NEAR(ranked.Step().loss, plain.Step().loss, 1e-5) << "step " << step;
  }
  fs::remove_all(dir);
}

TEST(DistributedTest, TwoRanksEqualOneGpuWithDoubleBatchMultiGpuCuda) {
#ifndef ZERO_TRAIN_GPT
  GTEST_SKIP() << "train_gpt was not built";
#else
  const int gpus = cuda_device_count();
  if (gpus < 2) {
    GTEST_SKIP() << "needs 2 GPUs, " << gpus << " visible: the 2-rank vs 1-rank equality "
                 << "check runs on a multi-GPU machine (tools/gpu_multi.sh)";
  }
  if (!dist::Communicator::available()) GTEST_SKIP() << "Zero was built without NCCL";
  const fs::path dir = fs::temp_directory_path() / "zero_distributed_test_two_ranks";
  fs::remove_all(dir);
  fs::create_directories(dir);
  // Dropout off (each rank would draw its own masks); 6 steps, every one logged.
  const std::string common =
      " --max-steps 6 --log-every 1 --eval-every 0 --eval-iters 2 --dropout 0 --n-layer 2"
      " --n-head 2 --n-embd 64 --block-size 64 --warmup 2 --samples 0 --sample-every 0";
  const std::string one = (dir / "one").string(), two = (dir / "two").string();
  const std::string train_gpt = ZERO_TRAIN_GPT;
  ASSERT_EQ(std::system((train_gpt + " --device cuda:0 --batch-size 16 --out-dir " + one + common +
                         " > " + (dir / "one.log").string() + " 2>&1").c_str()), 0)
      << "see " << (dir / "one.log");
  ASSERT_EQ(std::system((train_gpt + " --nproc 2 --batch-size 8 --out-dir " + two + common +
                         " > " + (dir / "two.log").string() + " 2>&1").c_str()), 0)
      << "see " << (dir / "two.log") << " and " << two << "/rank1.log";
  const auto a = read_metrics(one + "/metrics.jsonl"), b = read_metrics(two + "/metrics.jsonl");
  ASSERT_EQ(a.size(), b.size());
  ASSERT_GE(a.size(), 6u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].step, b[i].step);
    if (!std::isnan(a[i].loss)) {
      EXPECT_NEAR(a[i].loss, b[i].loss, 1e-5) << "step " << a[i].step;
    }
    EXPECT_EQ(a[i].val_loss.has_value(), b[i].val_loss.has_value());
    if (a[i].val_loss) {
      EXPECT_NEAR(*a[i].val_loss, *b[i].val_loss, 1e-5) << "val, step " << a[i].step;
    }
  }
  std::printf("1 GPU, batch 16 vs 2 ranks, batch 8 each: %zu records agree within 1e-5\n",
              a.size());
#endif
}

}  // namespace
}  // namespace zero::train
