// Chapter 01 · CUDA kernels. This file is the CPU half, which any machine can run:
//   1. launch arithmetic: how many blocks cover n elements (your launch_math.h);
//   2. a launch of scale_kernel simulated thread by thread on the CPU, with and
//      without the `i < n` guard;
//   3. arithmetic intensity: FLOPs per byte of scale and add.
// Sections 4 and 5 (device query, measured bandwidth) are in gpu.cu, read it next.
//
//   ch01_cuda_kernels [--quick]
#include <cstdio>
#include <cstring>
#include <vector>

#include "launch_math.h"
#include "zero/core/device.h"
#include "zero/core/error.h"
#ifdef ZERO_CHAPTER_HAS_CUDA
#include "gpu.h"
#endif

namespace {

using ch01::blocks_for;
using ch01::global_index;
using ch01::kThreadsPerBlock;

void section(const char* title) { std::printf("\n== %s ==\n", title); }

// Section 1: for a few sizes, the blocks a launch needs and the threads it wastes.
void show_launch_arithmetic() {
  section("1. Launch arithmetic: one thread per element, 256 threads a block");
  std::printf("%12s %10s %14s %14s\n", "elements n", "blocks", "threads", "idle (guarded)");
  const int64_t sizes[] = {0, 1, 255, 256, 257, 1000, int64_t{1} << 20, int64_t{1} << 28};
  for (int64_t n : sizes) {
    const int64_t blocks = blocks_for(n, kThreadsPerBlock);
    const int64_t threads = blocks * kThreadsPerBlock;
    std::printf("%12lld %10lld %14lld %14lld\n", static_cast<long long>(n),
                static_cast<long long>(blocks), static_cast<long long>(threads),
                static_cast<long long>(threads - n));
  }
  std::printf("blocks = ceil(n / 256); the last block is partly idle unless 256 divides n.\n"
              "n = 0 needs no blocks at all, and a launch must be skipped: CUDA rejects a\n"
              "grid of zero blocks as an invalid configuration.\n");
}

// Section 2: runs scale_kernel's body for every (block, thread) of a launch, the way
// the GPU would (in some order, all independent), and counts the writes.
// Returns the number of problems found.
int simulate_scale_launch(int64_t n) {
  section("2. A launch simulated on the CPU: y[i] = 2 * x[i], n = 1000");
  std::vector<float> x(static_cast<size_t>(n)), y(static_cast<size_t>(n), 0.0f);
  for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = 0.5f * static_cast<float>(i);
  std::vector<int> writes(static_cast<size_t>(n), 0);
  const int64_t blocks = blocks_for(n, kThreadsPerBlock);
  int64_t guarded = 0;
  for (int64_t block = 0; block < blocks; ++block) {      // blockIdx.x
    for (int64_t t = 0; t < kThreadsPerBlock; ++t) {      // threadIdx.x
      const int64_t i = global_index(block, kThreadsPerBlock, t);
      if (i >= n) {  // the guard: without it this thread would write past the end
        ++guarded;
        continue;
      }
      y[static_cast<size_t>(i)] = 2.0f * x[static_cast<size_t>(i)];
      ++writes[static_cast<size_t>(i)];
    }
  }
  int problems = 0;
  for (int64_t i = 0; i < n; ++i) {
    const size_t k = static_cast<size_t>(i);
    if (writes[k] != 1 || y[k] != 2.0f * x[k]) {
      if (problems++ == 0) {
        std::printf("MISMATCH at element %lld: written %d times, y = %g, expected %g\n",
                    static_cast<long long>(i), writes[k], y[k], 2.0f * x[k]);
      }
    }
  }
  std::printf("%lld blocks x %d threads = %lld threads for %lld elements\n",
              static_cast<long long>(blocks), kThreadsPerBlock,
              static_cast<long long>(blocks * kThreadsPerBlock), static_cast<long long>(n));
  std::printf("threads stopped by the guard `i < n`: %lld (each would have written past the "
              "end of y)\n",
              static_cast<long long>(guarded));
  std::printf("every element written exactly once with the right value: %s\n",
              problems == 0 ? "yes" : "NO");
  return problems;
}

// Section 3: FLOPs and bytes per element, counted by hand.
void show_arithmetic_intensity() {
  section("3. Arithmetic intensity: FLOPs per byte of DRAM traffic");
  struct Row {
    const char* kernel;
    int flops, bytes_read, bytes_written;
  };
  const Row rows[] = {{"scale_kernel  y = a * x", 1, 4, 4}, {"add_kernel    c = a + b", 1, 8, 4}};
  std::printf("%-26s %6s %11s %14s %10s\n", "kernel", "FLOPs", "bytes read", "bytes written",
              "FLOP/byte");
  for (const Row& r : rows) {
    std::printf("%-26s %6d %11d %14d %10.3f\n", r.kernel, r.flops, r.bytes_read, r.bytes_written,
                static_cast<double>(r.flops) / (r.bytes_read + r.bytes_written));
  }
  std::printf("A GPU does tens of FLOPs in the time it moves one byte from DRAM (its 'ridge\n"
              "point', measured in section 5), so at 0.1 FLOP/byte these kernels wait on memory:\n"
              "they are memory-bound, and their speed limit is the copy bandwidth.\n");
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else {
      std::fprintf(stderr, "usage: %s [--quick]\n", argv[0]);
      return 2;
    }
  }
  try {
    std::printf("Chapter 01 · CUDA kernels%s\n", quick ? " (--quick)" : "");
    show_launch_arithmetic();
    int problems = simulate_scale_launch(1000);
    show_arithmetic_intensity();
#ifdef ZERO_CHAPTER_HAS_CUDA
    if (zero::cuda_available()) {
      problems += ch01::run_gpu_part(quick);
    } else {
      std::printf("\n[skipped] GPU part (sections 4-5): no CUDA device visible\n");
    }
#else
    std::printf("\n[skipped] GPU part (sections 4-5): this build has no CUDA backend (configured with ZERO_CUDA=OFF, or no toolkit was found)\n");
#endif
    if (problems != 0) {
      std::printf("\nFAILED: %d result(s) did not match the CPU reference\n", problems);
      return 1;
    }
    return 0;
  } catch (const zero::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
