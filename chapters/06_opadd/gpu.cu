// Chapter 06, GPU half: timing with CUDA events. The chapter's Zero calls (a + b,
// Backward) are the same on both devices and live in main.cpp; this file only brackets
// them with events (median_gpu_ms, tools/gpu_median.h), and measures the
// device-to-device copy used as the bandwidth baseline.
#include <cuda_runtime.h>

#include "gpu.h"
#include "tools/gpu_median.h"
#include "zero/core/cuda/cuda_check.cuh"

namespace ch06 {

double cuda_us_per_call(const std::function<void()>& f, int iters, int reps) {
  for (int w = 0; w < 3; ++w) f();  // warm-up: the caching allocator fills, kernels load
  const float ms = zero::tools::median_gpu_ms([&] {
    for (int i = 0; i < iters; ++i) f();
  }, 0, reps);
  return ms * 1e3 / iters;
}

double cuda_copy_gbs(size_t bytes, int reps) {
  void* src = nullptr;
  void* dst = nullptr;
  ZERO_CUDA_CHECK(cudaMalloc(&src, bytes));
  ZERO_CUDA_CHECK(cudaMalloc(&dst, bytes));
  ZERO_CUDA_CHECK(cudaMemset(src, 0, bytes));
  const double us = cuda_us_per_call([&] {
    ZERO_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice));
  }, bytes < (size_t{1} << 24) ? 100 : 10, reps);
  ZERO_CUDA_CHECK(cudaFree(src));
  ZERO_CUDA_CHECK(cudaFree(dst));
  return 2.0 * bytes / us / 1e3;
}

}  // namespace ch06
