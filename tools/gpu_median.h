// The median GPU time of a piece of work, shared by the benchmark programs in tools/:
// a few untimed runs first (cuBLASLt tunes a shape on its first call, caches warm up),
// then each run between two CUDA events on the legacy default stream, where Zero's
// kernels run unless a stream is set, so the host never waits inside a run.
#pragma once

#include <algorithm>
#include <vector>

#include "zero/core/stream.h"

namespace zero::tools {

// Median milliseconds of `f` over `reps` runs after `warmup` untimed ones.
template <typename F>
float median_gpu_ms(F&& f, int warmup = 3, int reps = 15) {
  for (int i = 0; i < warmup; ++i) f();
  std::vector<float> ms;
  cuda::EventTimer timer;
  for (int i = 0; i < reps; ++i) {
    timer.Start();
    f();
    ms.push_back(timer.Stop());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace zero::tools
