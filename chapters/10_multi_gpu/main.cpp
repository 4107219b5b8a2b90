// Chapter 10 · Data-parallel training on several GPUs: the CPU half and the launcher.
//
// 1. The ring all-reduce, simulated on the CPU by your exercise (ring_allreduce.h):
//    checked against a plain sum, and its traffic against the 2(N-1)/N formula.
// 2. How GPT-2 124M's gradients are grouped into buckets (zero/distributed/grad_buckets.h).
// 3. With a GPU: all-reduce bandwidth through NCCL over a sweep of sizes, against the
//    link the driver reports (one GPU: against a plain copy, since nothing moves).
// 4. Tokens/s of GPT-2 124M training on 1 GPU, then on N, and the scaling efficiency.
// Sections 3 and 4 on N GPUs start N copies of this program, one per GPU (ranks), with
// this chapter's launcher (launcher.h); rank 0 prints. Run: ch10_multi_gpu
// [--quick] [--gpus N]. Read next: gpu.cpp, zero/distributed/data_parallel.cpp, the README.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "launcher.h"  // one process per GPU, as for train_gpt --nproc
#include "gpu.h"
#include "ring_allreduce.h"  // your exercise: solutions/ or exercises/10_multi_gpu
#include "zero/core/device.h"
#include "zero/core/error.h"
#include "zero/core/tensor_context.h"
#include "zero/distributed/grad_buckets.h"
#include "zero/nn/gpt.h"
#include "zero/train/distributed.h"

namespace {

int ring_section(bool quick) {
  std::printf("\n== 1. The ring all-reduce on paper (your exercise ex10.1, ex10.2)\n");
  const int64_t n = quick ? 4096 : 1 << 20;
  std::printf("Each of N ranks holds %lld floats; afterwards each must hold the sum.\n",
              static_cast<long long>(n));
  std::printf("  %5s %7s %22s %22s %8s\n", "ranks", "steps", "sent per rank (elems)",
              "2(N-1)/N x n (formula)", "result");
  int failures = 0;
  for (const int ranks : {1, 2, 4, 8}) {
    std::vector<std::vector<float>> buffers(ranks, std::vector<float>(n));
    std::vector<float> expected(n, 0.0f);
    for (int r = 0; r < ranks; ++r) {
      for (int64_t i = 0; i < n; ++i) {
        buffers[r][i] = static_cast<float>((r + 1) * (i % 13));  // small integers: exact sums
        expected[i] += buffers[r][i];
      }
    }
    const zero::ex10::RingStats stats = zero::ex10::ring_allreduce(buffers);
    bool ok = true;
    for (const auto& b : buffers) ok = ok && b == expected;
    int64_t most = 0;
    for (const int64_t sent : stats.elements_sent) most = std::max(most, sent);
    const double formula = zero::ex10::ring_traffic_factor(ranks) * static_cast<double>(n);
    ok = ok && std::fabs(static_cast<double>(most) - formula) <= ranks;  // chunks round
    failures += ok ? 0 : 1;
    std::printf("  %5d %7lld %22lld %22.0f %8s\n", ranks, static_cast<long long>(stats.steps),
                static_cast<long long>(most), formula, ok ? "ok" : "WRONG");
  }
  std::printf("Each rank sends at most 2x its buffer, however many GPUs: the time of a ring\n"
              "all-reduce is set by one link's bandwidth, not by the number of GPUs.\n");
  return failures;
}

void bucket_section(bool quick) {
  const zero::nn::GPTConfig cfg = quick ? zero::nn::GPTConfig{512, 128, 2, 4, 128, 0.0f}
                                        : zero::nn::GPTConfig{50304, 1024, 12, 12, 768, 0.0f};
  std::printf("\n== 2. Gradient buckets of %s (25 MiB each, filled from the last layer)\n",
              quick ? "a tiny GPT" : "GPT-2 124M");
  const zero::nn::GPT model(cfg, 1);  // on the CPU: only the names and sizes are used
  std::vector<std::pair<std::string, int64_t>> sizes;
  for (const auto& [name, t] : model.NamedParameters()) sizes.emplace_back(name, t.numel());
  const zero::dist::GradBuckets buckets(sizes);
  std::printf("%zu parameter tensors, %.1fM floats, in %zu buckets:\n", sizes.size(),
              model.NumParameters() / 1e6, buckets.num_buckets());
  for (size_t b = 0; b < buckets.num_buckets(); ++b) {
    const auto& members = buckets.bucket(b);
    std::printf("  bucket %2zu: %6.2f MiB, %3zu tensors, %s ... %s\n", b,
                buckets.bucket_numel(b) * 4.0 / (1 << 20), members.size(),
                sizes[members.front()].first.c_str(), sizes[members.back()].first.c_str());
  }
  std::printf("Bucket 0 can travel while backward still computes the earlier layers.\n");
}

// What the driver says about the link between GPUs: NVLink links and their speed, or the
// PCIe generation and width. Returns GB/s in one direction (0 when unknown).
double link_report() {
  double nvlink = 0;
  int links = 0;
  if (FILE* p = popen("nvidia-smi nvlink -s -i 0 2>/dev/null", "r")) {
    char line[512];
    while (std::fgets(line, sizeof(line), p)) {
      const char* at = std::strstr(line, "Link ");
      const char* colon = at ? std::strchr(at, ':') : nullptr;
      const double gbs = colon ? std::atof(colon + 1) : 0;
      if (gbs > 0 && std::strstr(line, "GB/s")) nvlink += gbs, ++links;
    }
    pclose(p);
  }
  if (links > 0) {
    std::printf("link (nvidia-smi): NVLink, %d links x %.1f GB/s = %.0f GB/s per direction\n",
                links, nvlink / links, nvlink);
    return nvlink;
  }
  int gen = 0, width = 0;
  if (FILE* p = popen("nvidia-smi -i 0 --query-gpu=pcie.link.gen.max,pcie.link.width.max "
                      "--format=csv,noheader,nounits 2>/dev/null", "r")) {
    if (std::fscanf(p, "%d, %d", &gen, &width) != 2) gen = width = 0;
    pclose(p);
  }
  const double per_lane[] = {0, 0.25, 0.5, 0.985, 1.969, 3.938, 7.563};  // GB/s, gen 1..6
  if (gen >= 1 && gen <= 6 && width > 0) {
    std::printf("link (nvidia-smi): no NVLink; PCIe gen %d x%d = %.0f GB/s per direction\n", gen,
                width, per_lane[gen] * width);
    return per_lane[gen] * width;
  }
  std::printf("link: unknown (nvidia-smi gave no NVLink or PCIe figures)\n");
  return 0;
}

// The body of one rank (a process started by the launcher below).
int run_rank(const zero::train::DistributedOptions& rank, const ch10::Options& options) {
  auto comm = zero::train::join_group(rank);
  bool failed = false;
  if (options.mode == "bandwidth") {
    const double link = rank.rank == 0 ? link_report() : 0;
    failed = ch10::bandwidth_sweep(*comm, options, link) != 0;
  } else {
    ch10::training_rate(comm, options, &failed);
  }
  return failed ? 1 : 0;
}

// Starts `gpus` ranks of this program in `mode`; returns the launcher's result.
int launch(int gpus, const ch10::Options& options, const std::string& mode) {
  std::vector<std::string> args = {"--mode", mode, "--baseline-tps",
                                   std::to_string(options.baseline_tps)};
  if (options.quick) args.push_back("--quick");
  const std::string logs = (std::filesystem::temp_directory_path() / "zero_ch10_ranks").string();
  return ch10::launch_ranks(args, gpus, logs);
}

}  // namespace

int main(int argc, char** argv) {
  ch10::Options options;
  zero::train::DistributedOptions rank;  // set in the processes that launch() starts
  CLI::App app{"Chapter 10: data-parallel training on several GPUs"};
  app.add_flag("--quick", options.quick, "small sizes and a tiny GPT (the CTest run)");
  app.add_option("--gpus", options.gpus, "GPUs to use (0: all visible)")
      ->check(CLI::Range(0, 1 << 16));
  // What launch() tells each rank to do, beside the rank flags.
  app.add_option("--mode", options.mode, "the section a rank runs")
      ->group(ch10::kRankGroup)
      ->check(CLI::IsMember({"bandwidth", "scaling"}));
  app.add_option("--baseline-tps", options.baseline_tps, "the 1-GPU tokens/s to compare with")
      ->group(ch10::kRankGroup);
  ch10::add_rank_flags(app, rank);
  CLI11_PARSE(app, argc, argv);
  try {
    if (rank.is_rank()) return run_rank(rank, options);
    std::printf("10 · Data-parallel training on several GPUs%s\n", options.quick ? " (quick)" : "");
    int failures = ring_section(options.quick);
    bucket_section(options.quick);
    const int visible = zero::cuda_device_count();
    const int gpus = options.gpus > 0 ? std::min(options.gpus, visible) : visible;
    if (gpus == 0) {
      std::printf("\n[skipped] GPU part: no CUDA device visible (this machine has none)\n");
    } else if (!zero::dist::Communicator::available()) {
      std::printf("\n[skipped] GPU part: Zero was built without NCCL (see cmake/ZeroNccl.cmake)\n");
    } else {
      std::printf("\n== 3. All-reduce bandwidth on %d GPU%s (NCCL %s)\n", gpus,
                  gpus > 1 ? "s" : "", zero::dist::Communicator::version().c_str());
      if (gpus == 1) {
        std::printf("One GPU: the all-reduce has no one to talk to; NCCL only makes sure the\n"
                    "output holds the input. What it costs is printed, next to a plain copy.\n");
        zero::dist::Communicator comm(0, 1, zero::dist::Communicator::CreateUniqueId(), 0);
        failures += ch10::bandwidth_sweep(comm, options, 0);
      } else {
        failures += launch(gpus, options, "bandwidth");
      }
      std::printf("\n== 4. Training %s: tokens/s on 1 GPU, then on %d\n",
                  options.quick ? "a tiny GPT" : "GPT-2 124M", gpus);
      bool failed = false;
      options.baseline_tps = ch10::training_rate(nullptr, options, &failed);
      // Hand the cached blocks back: rank 0 of the next run shares GPU 0 with us.
      zero::DefaultTensorContext::Get(zero::Device::Cuda(0)).TrimFreePool();
      failures += failed ? 1 : 0;
      if (gpus == 1) {
        std::printf("[skipped] scaling from 1 to N GPUs: only 1 GPU visible\n");
      } else {
        failures += launch(gpus, options, "scaling");
      }
    }
    if (failures != 0) {
      std::printf("\nFAILED: %d result(s) did not match their reference\n", failures);
      return 1;
    }
  } catch (const zero::Error& e) {
    std::printf("error: %s\n", e.what());
    return 1;
  }
  return 0;
}
