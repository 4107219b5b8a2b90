// Chapter 04, GPU half: what the cache saves. Replays GPT training steps (gpt_trace.h)
// through raw cudaMalloc/cudaFree, through your FreeList (exercise 04) over cudaMalloc,
// and through Zero's CUDA context, and prints the time per allocate+free pair and the
// cudaMalloc calls made. Allocation is host work (the driver's bookkeeping), so it is
// timed with the host clock; then a kernel shows why cudaFree is worse than slow: it
// waits for the GPU to finish. Every replay first checks its blocks do not overlap.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "best_fit.h"
#include "gpt_trace.h"
#include "zero/core/cuda/cuda_check.cuh"
#include "zero/core/tensor_context.h"

namespace ch04 {
namespace {

// ---------------------------------------------------------------- kernels

// Busy-waits `cycles` GPU clock cycles: a stand-in for a long kernel still running.
__global__ void spin_kernel(long long cycles, long long* elapsed) {
  const long long start = clock64();
  long long now = start;
  while (now - start < cycles) now = clock64();
  *elapsed = now - start;
}

// ---------------------------------------------------------------- helpers

class CudaRaw : public zero::RawAllocator {
 public:
  void* Allocate(size_t bytes) override {
    void* p = nullptr;
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
      cudaGetLastError();  // out of memory is not sticky: report it as nullptr
      return nullptr;
    }
    return p;
  }
  void Free(void* p, size_t) override { ZERO_CUDA_CHECK(cudaFree(p)); }
  std::string Name() const override { return "cudaMalloc"; }
};

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Writes a different byte into every live block, then reads back each block's first
// and last byte: a block shared by two tensors would show the other's byte.
bool blocks_are_disjoint(const std::vector<void*>& blocks, const std::vector<size_t>& sizes) {
  for (size_t i = 0; i < blocks.size(); ++i) {
    ZERO_CUDA_CHECK(cudaMemset(blocks[i], static_cast<int>(i * 37 + 1) & 0xff, sizes[i]));
  }
  for (size_t i = 0; i < blocks.size(); ++i) {
    unsigned char first = 0, last = 0;
    char* p = static_cast<char*>(blocks[i]);
    ZERO_CUDA_CHECK(cudaMemcpy(&first, p, 1, cudaMemcpyDeviceToHost));
    ZERO_CUDA_CHECK(cudaMemcpy(&last, p + sizes[i] - 1, 1, cudaMemcpyDeviceToHost));
    const unsigned char want = static_cast<unsigned char>((i * 37 + 1) & 0xff);
    if (first != want || last != want) return false;
  }
  return true;
}

struct Timing {
  double first_step_us = 0;   // per pair, step 1 (the cache is cold)
  double steady_us = 0;       // per pair, median of the later steps
  uint64_t cuda_mallocs = 0;  // over all steps
  bool ok = true;
};

// Replays `steps` steps; checks the blocks of step 1 at its peak (untimed: the
// check runs between two timed halves of the replay).
template <typename Take, typename Give>
Timing time_replay(const std::vector<Event>& trace, int steps, Take&& take, Give&& give) {
  Timing timing;
  std::vector<double> steady;
  for (int step = 1; step <= steps; ++step) {
    double paused = 0;
    const double t0 = now_seconds();
    const size_t allocs = replay(trace, take, give, [&](const std::vector<void*>& blocks,
                                                        const std::vector<size_t>& sizes) {
      if (step != 1) return;
      const double c0 = now_seconds();
      timing.ok = blocks_are_disjoint(blocks, sizes);
      ZERO_CUDA_CHECK(cudaDeviceSynchronize());
      paused = now_seconds() - c0;
    });
    const double per_pair_us = (now_seconds() - t0 - paused) / allocs * 1e6;
    if (step == 1) timing.first_step_us = per_pair_us;
    else steady.push_back(per_pair_us);
  }
  std::sort(steady.begin(), steady.end());
  timing.steady_us = steady.empty() ? timing.first_step_us : steady[steady.size() / 2];
  return timing;
}

void print_row(const char* name, const Timing& t, double baseline_us) {
  std::printf("%-30s %12.2f %12.2f %10.1fx %14llu %s\n", name, t.first_step_us, t.steady_us,
              baseline_us / t.steady_us, static_cast<unsigned long long>(t.cuda_mallocs),
              t.ok ? "" : "  MISMATCH: overlapping blocks");
}

// cudaFree must not release memory a running kernel may still use, so it waits for
// the device; the cache's DeleteMem only updates a map (Note [Blocks and streams]).
bool show_free_synchronises() {
  std::printf("\n== 5. cudaFree waits for the GPU; the cache does not\n");
  int khz = 0;
  ZERO_CUDA_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
  const long long cycles = static_cast<long long>(khz) * 20;  // about 20 ms
  long long* elapsed = nullptr;
  ZERO_CUDA_CHECK(cudaMalloc(&elapsed, sizeof(long long)));
  zero::TensorContext& ctx = zero::DefaultTensorContext::Get(zero::Device::Cuda(0));
  bool ok = true;
  for (int cached = 0; cached < 2; ++cached) {
    void* block = nullptr;
    if (cached) block = ctx.NewMem(1 << 20);
    else ZERO_CUDA_CHECK(cudaMalloc(&block, 1 << 20));
    spin_kernel<<<1, 1>>>(cycles, elapsed);
    ZERO_CUDA_LAUNCH_CHECK();
    const double t0 = now_seconds();
    if (cached) ctx.DeleteMem(block);
    else ZERO_CUDA_CHECK(cudaFree(block));
    const double t1 = now_seconds();
    ZERO_CUDA_CHECK(cudaDeviceSynchronize());
    long long spun = 0;
    ZERO_CUDA_CHECK(cudaMemcpy(&spun, elapsed, sizeof(spun), cudaMemcpyDeviceToHost));
    ok &= spun >= cycles;
    std::printf("%-44s %10.1f us  (kernel spun %.1f ms at the rated clock)\n",
                cached ? "DeleteMem while a 20 ms kernel runs:" : "cudaFree while a 20 ms kernel runs:",
                (t1 - t0) * 1e6, spun / (khz * 1.0));
  }
  ZERO_CUDA_CHECK(cudaFree(elapsed));
  if (!ok) std::printf("MISMATCH: the spin kernel did not run its cycles\n");
  return ok;
}

}  // namespace

// ---------------------------------------------------------------- entry point

int run_allocator_benchmark(const GptShape& shape, int steps) {
  std::printf("\n== 4. Time per allocate+free pair over %d GPT training steps (host clock)\n",
              steps);
  cudaDeviceProp prop;
  ZERO_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("GPU: %s\n", prop.name);
  const std::vector<Event> trace = gpt_step_trace(shape);
  ZERO_CUDA_CHECK(cudaFree(nullptr));  // create the CUDA context outside the timings

  Timing raw = time_replay(
      trace, steps,
      [](size_t n) {
        void* p = nullptr;
        ZERO_CUDA_CHECK(cudaMalloc(&p, n));
        return p;
      },
      [](void* p) { ZERO_CUDA_CHECK(cudaFree(p)); });
  raw.cuda_mallocs = 0;
  for (const Event& e : trace) raw.cuda_mallocs += e.alloc ? steps : 0;

  CudaRaw cuda_raw;
  Timing mine;
  {
    FreeList list(cuda_raw, 512);
    mine = time_replay(trace, steps, [&](size_t n) { return list.Take(n); },
                       [&](void* p) { list.Give(p); });
    mine.cuda_mallocs = list.stats().raw_allocs;
  }  // the FreeList gives its blocks back here

  zero::TensorContext& ctx = zero::DefaultTensorContext::Get(zero::Device::Cuda(0));
  ctx.TrimFreePool();
  const zero::MemoryStats before = ctx.Stats();
  Timing zeros = time_replay(trace, steps, [&](size_t n) { return ctx.NewMem(n); },
                             [&](void* p) { ctx.DeleteMem(p); });
  const zero::MemoryStats after = ctx.Stats();
  zeros.cuda_mallocs = after.raw_allocs - before.raw_allocs;

  std::printf("%-30s %12s %12s %11s %14s\n", "allocator", "step 1 us", "steady us",
              "vs raw", "cudaMallocs");
  print_row("cudaMalloc + cudaFree", raw, raw.steady_us);
  print_row("your FreeList (exercise 04)", mine, raw.steady_us);
  print_row("Zero's CUDATensorContext", zeros, raw.steady_us);
  std::printf("cudaMalloc calls saved by the cache: %llu of %llu\n",
              static_cast<unsigned long long>(raw.cuda_mallocs - zeros.cuda_mallocs),
              static_cast<unsigned long long>(raw.cuda_mallocs));
  std::printf("Zero's CUDA context: hits %llu, misses %llu, reserved %.1f MiB\n",
              static_cast<unsigned long long>(after.hits - before.hits),
              static_cast<unsigned long long>(after.misses - before.misses),
              after.reserved_bytes / (1024.0 * 1024.0));
  ctx.TrimFreePool();

  const bool ok = raw.ok && mine.ok && zeros.ok && show_free_synchronises();
  return ok ? 0 : 1;
}

}  // namespace ch04
