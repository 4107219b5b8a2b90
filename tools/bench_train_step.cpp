// One GPT training step of Zero (forward, backward, clip, AdamW), timed: the Zero half
// of tools/bench_train_side_by_side.py, which runs PyTorch on the same shapes.
//
//   bench_train_step --preset char|gpt2|small [--batch B] [--steps 20] [--warmup 5]
//                    [--profile 3] [--device auto|cpu|cuda] [--cuda-graph on|off] [--json]
//                    [--n-layer L --n-head H --n-embd C --block-size T --vocab V --dropout p]
//
// "small" is train_gpt's CPU model (TrainConfig::SmallCpu) with the vocabulary of its
// built-in corpus, 193. The shape flags override the preset's, so that another program
// (tools/bench_cpu_vs_llmc.py, which times llm.c on the same shapes) can ask for any model.
// The tokens are random (speed does not depend on them). Each step is timed on the
// host around Trainer::Step, which ends by reading the loss, so the GPU has finished
// the step when the clock stops. Prints the median over --steps after --warmup steps,
// tokens/s, the allocator's peak live bytes over the warm-up and timed steps (weights,
// gradients and AdamW moments included, as torch.cuda.max_memory_allocated counts them;
// a CUDA graph's blocks are allocated while the warm-up captures it, and a replay
// allocates nothing) and how many cudaMalloc calls the timed steps made (0: every buffer
// came from the cache). On a GPU the steps after the first replay one CUDA graph of the
// step (TrainConfig::cuda_graph) unless --cuda-graph off.
// MX_FAST_MATMUL in the environment selects Tensor-Core GEMMs (chapter 07).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <random>

#ifdef ZERO_BENCH_PROFILER_RANGE
#include <cuda_profiler_api.h>
#endif

#include "zero/core/tensor_context.h"
#include "zero/train/flops.h"
#include "zero/train/trainer.h"

using namespace zero;

namespace {

train::TrainConfig preset(const std::string& name) {
  train::TrainConfig c = train::TrainConfig::Reference();  // char GPT: 6L/6H/384, B 64, T 256
  if (name == "gpt2") {  // GPT-2 124M as nanoGPT trains it: no dropout, vocab padded to 50304
    c.model = nn::GPTConfig{50304, 1024, 12, 12, 768, 0.0f};
    c.batch_size = 8;
  } else if (name == "small") {  // the quickstart model: 4L/4H/64, B 16, T 64, no dropout
    c = train::TrainConfig::SmallCpu();
    c.model.vocab_size = 193;  // the characters of train_gpt's built-in corpus
  } else {
    ZERO_CHECK(name == "char", "--preset: expected char, gpt2 or small, got ", name);
    c.model.vocab_size = 65;
  }
  c.warmup = 0;  // the step's cost does not depend on the learning rate
  return c;
}

train::TokenData random_tokens(int64_t vocab, int64_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> id(0, static_cast<int32_t>(vocab - 1));
  train::TokenData d;
  d.train.resize(count);
  d.val.resize(count / 10);
  for (auto& t : d.train) t = id(rng);
  for (auto& t : d.val) t = id(rng);
  return d;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Times Zero's GPT training step"};
  std::string name = "char", device_name = "auto", dtype_name = "fp32";
  int64_t batch = 0, steps = 20, warmup = 5, profile = 0;
  int64_t n_layer = 0, n_head = 0, n_embd = 0, block_size = 0, vocab = 0;  // 0: the preset's
  float dropout = -1;                                                      // < 0: the preset's
  bool json = false;
  std::string graph = "on";
  app.add_option("--preset", name,
                 "char (6L/6H/384, T 256), gpt2 (124M, T 1024) or small (4L/4H/64, T 64)");
  app.add_option("--batch", batch, "sequences per step (default: the preset's)");
  app.add_option("--steps", steps, "timed steps (the median is reported)")
      ->check(CLI::PositiveNumber);
  app.add_option("--warmup", warmup, "untimed steps first")->check(CLI::NonNegativeNumber);
  app.add_option("--profile", profile, "then profile this many steps and print the per-op table");
  app.add_option("--device", device_name, "cpu, cuda, cuda:N or auto");
  app.add_flag("--json", json, "end with one JSON line of the figures");
  app.add_option("--cuda-graph", graph, "on: replay each step as one CUDA graph (on a GPU)")
      ->check(CLI::IsMember({"on", "off"}));
  app.add_option("--dtype", dtype_name, "fp32, bf16, fp16 or auto, as train_gpt's --dtype");
  app.add_option("--n-layer", n_layer, "transformer blocks (default: the preset's)");
  app.add_option("--n-head", n_head, "attention heads (default: the preset's)");
  app.add_option("--n-embd", n_embd, "width of the residual stream (default: the preset's)");
  app.add_option("--block-size", block_size, "sequence length T (default: the preset's)");
  app.add_option("--vocab", vocab, "vocabulary size (default: the preset's)");
  app.add_option("--dropout", dropout, "dropout probability (default: the preset's)");
  CLI11_PARSE(app, argc, argv);

  try {
    train::TrainConfig cfg = preset(name);
    if (batch > 0) cfg.batch_size = batch;
    if (n_layer > 0) cfg.model.n_layer = n_layer;
    if (n_head > 0) cfg.model.n_head = n_head;
    if (n_embd > 0) cfg.model.n_embd = n_embd;
    if (block_size > 0) cfg.model.block_size = block_size;
    if (vocab > 0) cfg.model.vocab_size = vocab;
    if (dropout >= 0) cfg.model.dropout = dropout;
    cfg.max_steps = warmup + steps + profile;
    cfg.cuda_graph = graph == "on";
    const Device device = train::resolve_device(device_name);
    cfg.dtype = train::resolve_dtype(dtype_name, device);
    const int64_t tokens = cfg.batch_size * cfg.model.block_size;
    train::Trainer trainer(cfg, random_tokens(cfg.model.vocab_size, 4 << 20, 1), device);
    TensorContext& memory = DefaultTensorContext::Get(device);
    std::printf("Zero %s: %lld layers, %lld heads, %lld wide, vocab %lld, B %lld, T %lld, %s\n",
                name.c_str(), (long long)cfg.model.n_layer, (long long)cfg.model.n_head,
                (long long)cfg.model.n_embd, (long long)cfg.model.vocab_size,
                (long long)cfg.batch_size, (long long)cfg.model.block_size,
                device.is_cuda() ? "CUDA" : "CPU");
    memory.ResetPeak();
    for (int64_t i = 0; i < warmup; ++i) trainer.Step();
#ifdef ZERO_BENCH_PROFILER_RANGE
    // A profiler started with its collection off (ncu --profile-from-start off, as
    // tools/profile_step.py runs it) records the timed steps only, not the warm-up's GEMM
    // timing (Note [Choosing a GEMM algorithm]), whose choices it hands in from a plain
    // run: attached, the profiler slows the timed candidates even while it records nothing.
    if (device.is_cuda()) (void)cudaProfilerStart();
#endif
    const uint64_t mallocs_before = memory.Stats().raw_allocs;
    std::vector<double> ms;
    float loss = 0;
    int64_t replayed = 0;
    for (int64_t i = 0; i < steps; ++i) {
      const train::StepResult r = trainer.Step();
      ms.push_back(r.ms);
      loss = r.loss;
      replayed += r.replayed ? 1 : 0;
    }
    const MemoryStats stats = memory.Stats();
    std::sort(ms.begin(), ms.end());
    const double median = ms[ms.size() / 2];
    const double flops = train::gpt_train_flops_per_token(cfg.model, cfg.model.block_size) *
                         static_cast<double>(tokens);
    std::printf("median %.2f ms/step (min %.2f, max %.2f), %.0f tokens/s, %.1f TFLOP/s of model "
                "FLOPs, loss %.3f\n",
                median, ms.front(), ms.back(), tokens / (median / 1e3), flops / median / 1e9, loss);
    std::printf("peak live memory %.2f GiB, reserved %.2f GiB, cudaMalloc calls in timed steps: "
                "%llu, steps replayed as a CUDA graph: %lld of %lld\n",
                stats.peak_bytes / 1073741824.0, stats.reserved_bytes / 1073741824.0,
                (unsigned long long)(stats.raw_allocs - mallocs_before), (long long)replayed,
                (long long)steps);
    if (profile > 0) std::printf("\n%s", trainer.ProfileSteps(profile).Table().c_str());
    if (json) {
      std::printf("{\"ms\": %.4f, \"tokens_per_s\": %.1f, \"peak_bytes\": %zu, \"flops\": %.6g, "
                  "\"mallocs\": %llu, \"replayed\": %lld}\n",
                  median, tokens / (median / 1e3), stats.peak_bytes, flops,
                  (unsigned long long)(stats.raw_allocs - mallocs_before), (long long)replayed);
    }
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
