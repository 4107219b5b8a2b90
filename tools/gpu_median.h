// The median time of a piece of work, for the benchmark programs in tools/ and the
// chapters' timing tables (both include it from the repository root, which the `zero`
// target puts on their include path): a few untimed runs first (cuBLASLt tunes a shape
// on its first call, caches warm up, the caching allocator fills), then each run timed
// alone; the median ignores an occasional slow run.
//   median_gpu_ms  GPU work, between two CUDA events on the legacy default stream, where
//                  Zero's kernels run unless a stream is set: the GPU stamps the events,
//                  so they time its work, not the host's launch overhead.
//   median_cpu_ms  CPU work, on the host's steady clock.
// Chapter 08 shows why a host clock cannot time GPU work (and has you write the timer).
#pragma once

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include "zero/core/error.h"
#include "zero/core/stream.h"

namespace zero::tools {

// The middle element of `values` (the upper of the middle two for an even count).
template <typename T>
T median(std::vector<T> values) {
  ZERO_CHECK(!values.empty(), "expected at least one value for a median, got none");
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// Median milliseconds of `f` over `reps` runs after `warmup` untimed ones, timed with
// CUDA events on the legacy default stream of GPU `device`.
template <typename F>
float median_gpu_ms(F&& f, int warmup = 3, int reps = 15, int device = 0) {
  for (int i = 0; i < warmup; ++i) f();
  std::vector<float> ms;
  cuda::EventTimer timer(device);
  for (int i = 0; i < reps; ++i) {
    timer.Start();
    f();
    ms.push_back(timer.Stop());
  }
  return median(std::move(ms));
}

// Median milliseconds of `f` over `reps` runs after `warmup` untimed ones, timed with
// std::chrono::steady_clock.
template <typename F>
double median_cpu_ms(F&& f, int warmup = 1, int reps = 15) {
  using Clock = std::chrono::steady_clock;
  for (int i = 0; i < warmup; ++i) f();
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    const Clock::time_point t0 = Clock::now();
    f();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  return median(std::move(ms));
}

}  // namespace zero::tools
