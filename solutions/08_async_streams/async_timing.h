// Exercise 08: two tools for reasoning about asynchronous GPU work.
//
// 1. pipelined_time_ms: a model of copy/compute overlap. Data is split into chunks; each
//    chunk is copied host->device, then computed on, both on one stream; chunks take the
//    streams in turn. One copy engine and one kernel at a time, each first come, first
//    served. The chapter compares this prediction with what the GPU does.
// 2. median_time_ms: timing with any timer that has Start() and Stop() -> ms (the
//    chapter passes zero::cuda::EventTimer; the CPU test passes a scripted fake): untimed
//    warm-up runs first, then the median of the timed runs, which ignores the odd slow run.
#pragma once

#include <algorithm>
#include <vector>

#include "zero/core/error.h"

namespace zero::ex08 {

/// Milliseconds until the last chunk's compute ends, when `copy_ms` of copying and
/// `compute_ms` of computing (totals over all the data) are split into `chunks` equal
/// chunks issued round-robin on `streams` streams (copy, then compute, on each).
inline double pipelined_time_ms(double copy_ms, double compute_ms, int chunks, int streams) {
  ZERO_CHECK(copy_ms >= 0 && compute_ms >= 0, "expected non-negative times, got copy ", copy_ms,
             " ms and compute ", compute_ms, " ms");
  ZERO_CHECK(chunks >= 1 && streams >= 1, "expected at least one chunk and one stream, got ",
             chunks, " chunk(s) and ", streams, " stream(s)");
  // BEGIN SOLUTION ex08.1: simulate the copy engine, the compute engine and each stream's order
  const double copy = copy_ms / chunks, compute = compute_ms / chunks;  // one chunk's share
  double copy_engine_free = 0.0, compute_engine_free = 0.0;  // when each engine is next idle
  std::vector<double> stream_free(streams, 0.0);             // when each stream's last op ends
  for (int i = 0; i < chunks; ++i) {
    double& stream = stream_free[i % streams];
    // A stream runs its operations in order: this copy waits for the stream's last compute.
    const double copy_end = std::max(copy_engine_free, stream) + copy;
    copy_engine_free = copy_end;
    const double compute_end = std::max(compute_engine_free, copy_end) + compute;
    compute_engine_free = compute_end;
    stream = compute_end;
  }
  return compute_engine_free;
  // END SOLUTION
}

/// Runs `work` `warmup` times untimed, then `reps` times each between `timer.Start()` and
/// `timer.Stop()` (which returns milliseconds), and returns the median of those times
/// (the mean of the middle two for an even count).
template <typename Timer, typename Work>
float median_time_ms(Timer& timer, Work&& work, int warmup, int reps) {
  ZERO_CHECK(warmup >= 0 && reps >= 1, "expected warmup >= 0 and reps >= 1, got warmup ", warmup,
             " and reps ", reps);
  // BEGIN SOLUTION ex08.2: warm up untimed, time each rep with the timer, return the median
  for (int i = 0; i < warmup; ++i) work();
  std::vector<float> ms(reps);
  for (int i = 0; i < reps; ++i) {
    timer.Start();
    work();
    ms[i] = timer.Stop();
  }
  std::sort(ms.begin(), ms.end());
  return reps % 2 == 1 ? ms[reps / 2] : 0.5f * (ms[reps / 2 - 1] + ms[reps / 2]);
  // END SOLUTION
}

}  // namespace zero::ex08
