// Chapter 10 · the GPU measurements: all-reduce bandwidth through Zero's NCCL
// Communicator, and the training rate of GPT-2 124M with and without data parallelism.
// Every result is checked before it is timed; times come from CUDA events (all-reduce)
// or from Trainer::Step, which ends with the step's one synchronisation (training).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "gpu.h"
#include "ring_allreduce.h"  // your exercise: bus_bandwidth uses your traffic factor
#include "tools/gpu_median.h"
#include "zero/core/philox.h"
#include "zero/core/stream.h"
#include "zero/distributed/data_parallel.h"
#include "zero/train/trainer.h"

namespace ch10 {
namespace {

using zero::Tensor;
using zero::tools::median;
using zero::tools::median_gpu_ms;  // CUDA events on the default stream, after a warm-up

// Every element of `t` equals `value` (read back to the host: the CPU check).
bool all_equal(const Tensor& t, float value) {
  const std::vector<float> v = t.ToVector<float>();
  return std::all_of(v.begin(), v.end(), [&](float x) { return x == value; });
}

}  // namespace

int bandwidth_sweep(zero::dist::Communicator& comm, const Options& options, double link_gbs) {
  const int world = comm.world(), rank = comm.rank(), dev = comm.device();
  const bool print = rank == 0;
  const zero::cuda::Stream compute = zero::cuda::Stream::Default(dev);
  const std::vector<double> mib = options.quick ? std::vector<double>{1, 4}
                                                : std::vector<double>{1, 4, 16, 64, 256, 1024};
  const int warmup = options.quick ? 1 : 5, reps = options.quick ? 3 : 20;
  if (print) {
    std::printf("  %9s %10s %12s %12s   %s\n", "size", "time (us)", "algbw GB/s", "busbw GB/s",
                world == 1 ? "vs copy" : "vs link");
  }
  int failures = 0;
  const zero::TensorOption opt = zero::TensorOption().OnDevice(zero::Device::Cuda(dev));
  for (double m : mib) {
    const int64_t n = static_cast<int64_t>(m * (1 << 20) / sizeof(float));
    const double bytes = static_cast<double>(n) * sizeof(float);
    Tensor t = Tensor::Empty({n}, opt);
    // Check: rank r contributes r + 1, so the sum is N (N + 1) / 2 everywhere.
    const float sum = world * (world + 1) / 2.0f;
    t.Fill_(static_cast<float>(rank + 1));
    comm.AllReduceSum(t, compute);
    bool ok = all_equal(t, sum);
    // Timed: the average of equal buffers leaves them unchanged, so the check holds after.
    const double ms =
        median_gpu_ms([&] { comm.AllReduceAverage(t, compute); }, warmup, reps, dev);
    ok = ok && all_equal(t, sum);
    failures += ok ? 0 : 1;
    const double algbw = bytes / (ms / 1e3) / 1e9;
    const double busbw = zero::ex10::bus_bandwidth(bytes, ms / 1e3, world) / 1e9;
    char versus[64] = "";
    if (world == 1) {  // nothing to exchange: compare with copying the same buffer once
      Tensor copy = Tensor::Empty({n}, opt);
      const double copy_ms = median_gpu_ms([&] { copy.CopyFrom_(t); }, warmup, reps, dev);
      std::snprintf(versus, sizeof(versus), "copy %.1f us: all-reduce at %.0f%% of its speed",
                    copy_ms * 1e3, 100.0 * copy_ms / ms);
    } else if (link_gbs > 0) {
      std::snprintf(versus, sizeof(versus), "%5.1f%% of %.0f GB/s", 100.0 * busbw / link_gbs,
                    link_gbs);
    }
    if (print) {
      std::printf("  %5.0f MiB %10.1f %12.1f %12.1f   %s%s\n", m, ms * 1e3, algbw, busbw, versus,
                  ok ? "" : "  WRONG RESULT");
    }
  }
  return failures;
}

double training_rate(std::shared_ptr<zero::dist::Communicator> comm, const Options& options,
                     bool* failed) {
  const int rank = comm ? comm->rank() : 0, world = comm ? comm->world() : 1;
  zero::train::TrainConfig cfg;
  cfg.model = options.quick ? zero::nn::GPTConfig{512, 128, 2, 4, 128, 0.0f}
                            : zero::nn::GPTConfig{50304, 1024, 12, 12, 768, 0.0f};  // GPT-2 124M
  cfg.batch_size = options.quick ? 4 : 8;
  cfg.warmup = 0, cfg.max_steps = 1000;
  zero::train::TokenData data;  // random tokens: the rate does not depend on the text
  for (int64_t i = 0; i < (1 << 20); ++i) {
    data.train.push_back(static_cast<int32_t>(zero::philox_word(11, i) % cfg.model.vocab_size));
  }
  data.val.assign(data.train.begin(), data.train.begin() + 4 * cfg.model.block_size);
  zero::train::Trainer trainer(cfg, std::move(data), zero::Device::Cuda(rank));
  if (comm) trainer.EnableDataParallel(comm);

  const int warmup = options.quick ? 1 : 3, steps = options.quick ? 3 : 10;
  std::vector<double> ms;
  for (int i = 0; i < warmup + steps; ++i) {
    const zero::train::StepResult r = trainer.Step();
    if (i == 0) {  // random weights predict every token about equally: ln(vocab)
      const double expected = std::log(static_cast<double>(cfg.model.vocab_size));
      *failed = !(std::fabs(r.loss - expected) < 0.5);
      if (rank == 0) {
        std::printf("  first loss %.3f (ln %lld = %.3f)%s\n", r.loss,
                    static_cast<long long>(cfg.model.vocab_size), expected,
                    *failed ? "  WRONG: expected within 0.5" : "");
      }
    }
    if (i >= warmup) ms.push_back(r.ms);
  }
  const double step_ms = median(ms);
  const double tokens = static_cast<double>(world * cfg.batch_size * cfg.model.block_size);
  const double tps = tokens / (step_ms / 1e3);
  if (rank == 0) {
    std::printf("  %d GPU%s: batch %d x %lld per GPU, %.1f ms/step (median of %d), %.0f tok/s",
                world, world > 1 ? "s" : "", static_cast<int>(cfg.batch_size),
                static_cast<long long>(cfg.model.block_size), step_ms, steps, tps);
    if (trainer.data_parallel()) {
      std::printf(", %zu gradient buckets", trainer.data_parallel()->buckets().num_buckets());
    }
    std::printf("\n");
    if (world > 1 && options.baseline_tps > 0) {
      std::printf("  scaling efficiency: %.0f tok/s / (%d x %.0f tok/s) = %.1f%%\n", tps, world,
                  options.baseline_tps, 100.0 * tps / (world * options.baseline_tps));
    }
  }
  return tps;
}

}  // namespace ch10
