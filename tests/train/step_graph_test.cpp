// Tests of the training step replayed as a CUDA graph (Note [The step as one CUDA graph]
// in zero/train/step_graph.cpp): a run whose steps after the first are graph replays
// follows the run made kernel by kernel, loss for loss, norm for norm, parameter for
// parameter, with dropout on (each replay draws new masks), a learning rate that moves
// every step (read on the device), evaluation and a checkpoint between steps.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "zero/core/philox.h"
#include "zero/train/trainer.h"

namespace zero::train {
namespace {

std::vector<int32_t> tokens(int64_t n, int64_t vocab, uint64_t seed) {
  std::vector<int32_t> out(n);
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<int32_t>(philox_word(seed, i) % vocab);
  return out;
}

// The tiny model of trainer_test.cpp (attention's SIMT kernels), or one wide enough for
// the Tensor-Core attention kernels, both with dropout.
TrainConfig config(bool wide, DataType dtype) {
  TrainConfig c;
  c.model = wide ? nn::GPTConfig{65, 128, 2, 2, 128, 0.1f} : nn::GPTConfig{11, 8, 2, 2, 16, 0.1f};
  c.batch_size = 4;
  c.lr = 1e-2f;
  c.min_lr = 1e-3f;
  c.warmup = 2;
  c.max_steps = 8;
  c.seed = 5;
  c.dtype = dtype;
  return c;
}

struct RunResult {
  std::vector<float> losses, norms;
  std::vector<bool> replayed;
  std::vector<std::vector<float>> params;
  float val_loss = 0;
  uint64_t dropout_offset = 0;
};

// Eight steps, with an evaluation after the fourth; the last two on a trainer resumed
// from a checkpoint saved after the sixth.
RunResult run(TrainConfig c, bool graph, const std::string& dir) {
  c.cuda_graph = graph;
  const int64_t vocab = c.model.vocab_size;
  auto data = [&] { return TokenData{tokens(4000, vocab, 1), tokens(1000, vocab, 2), "", ""}; };
  RunResult out;
  auto record = [&](const StepResult& r) {
    out.losses.push_back(r.loss);
    out.norms.push_back(r.grad_norm);
    out.replayed.push_back(r.replayed);
  };
  {
    Trainer trainer(c, data(), Device::Cuda(0));
    for (int i = 0; i < 6; ++i) {
      record(trainer.Step());
      if (i == 3) out.val_loss = trainer.Evaluate(2);
    }
    trainer.Save(dir);
  }
  Trainer resumed(c, data(), Device::Cuda(0));
  resumed.Resume(dir);
  for (int i = 0; i < 2; ++i) record(resumed.Step());
  for (const Tensor& p : resumed.model().Parameters()) out.params.push_back(p.ToVector<float>());
  out.dropout_offset = resumed.model().dropout_generator().offset();
  return out;
}

void expect_close(float got, float want, float tol, const std::string& what) {
  EXPECT_NEAR(got, want, tol * std::max(1.0f, std::fabs(want))) << what;
}

TEST(StepGraphTest, ReplayedStepsFollowTheStepsRunKernelByKernel) {
  if (!cuda_available()) GTEST_SKIP() << "needs a CUDA device";
  const std::string dir =
      (std::filesystem::path(::testing::TempDir()) / "zero_step_graph_test").string();
  for (bool wide : {false, true}) {
    for (DataType dtype : {DataType::F32, DataType::BF16}) {
      if (dtype == DataType::BF16 && cuda_compute_capability(0) < 80) continue;
      const std::string what = std::string(wide ? "wide " : "tiny ") + dtype_flag_name(dtype);
      const RunResult eager = run(config(wide, dtype), false, dir);
      const RunResult graph = run(config(wide, dtype), true, dir);
      // Replays from each trainer's second step: steps 1..5, then 7 after the resume.
      const std::vector<bool> replays{false, true, true, true, true, true, false, true};
      EXPECT_EQ(graph.replayed, replays) << what;
      EXPECT_EQ(eager.replayed, std::vector<bool>(8, false)) << what;
      // Every step draws a multiple of 4 Philox words here, so the graph's draws, which
      // start each step at such a multiple, are the eager run's.
      EXPECT_EQ(graph.dropout_offset, eager.dropout_offset) << what;
      // Atomic adds (the embedding backward) may sum in another order: see the CUDA
      // resume test in trainer_test.cpp for these tolerances.
      for (size_t i = 0; i < eager.losses.size(); ++i) {
        expect_close(graph.losses[i], eager.losses[i], 1e-5f, what + " loss " + std::to_string(i));
        expect_close(graph.norms[i], eager.norms[i], 1e-4f, what + " norm " + std::to_string(i));
      }
      expect_close(graph.val_loss, eager.val_loss, 1e-5f, what + " validation loss");
      ASSERT_EQ(graph.params.size(), eager.params.size());
      for (size_t i = 0; i < eager.params.size(); ++i) {
        for (size_t j = 0; j < eager.params[i].size(); ++j) {
          ASSERT_NEAR(graph.params[i][j], eager.params[i][j], 1e-4f) << what << " param " << i;
        }
      }
    }
  }
  std::filesystem::remove_all(dir);
}

// The graph is what makes a step fast only if it really replays the captured work with
// each step's inputs: without dropout, a replay on the batch of another step must give
// that step's loss, not the captured one's.
TEST(StepGraphTest, EachReplayReadsItsOwnBatch) {
  if (!cuda_available()) GTEST_SKIP() << "needs a CUDA device";
  TrainConfig c = config(true, DataType::F32);
  c.model.dropout = 0.0f;
  c.lr = c.min_lr = 0.0f;  // no update: every step evaluates the same weights
  const TokenData data{tokens(4000, 65, 1), tokens(1000, 65, 2), "", ""};
  Trainer eager_trainer([&] { TrainConfig e = c; e.cuda_graph = false; return e; }(), data,
                        Device::Cuda(0));
  Trainer graph_trainer(c, data, Device::Cuda(0));
  std::vector<float> eager, graph;
  for (int i = 0; i < 5; ++i) {
    eager.push_back(eager_trainer.Step().loss);
    const StepResult r = graph_trainer.Step();
    graph.push_back(r.loss);
    EXPECT_EQ(r.replayed, i > 0) << "step " << i;
  }
  for (int i = 0; i < 5; ++i) expect_close(graph[i], eager[i], 1e-5f, "step " + std::to_string(i));
  EXPECT_NE(graph[1], graph[2]) << "two batches gave one loss: the replay kept its inputs";
}

}  // namespace
}  // namespace zero::train
