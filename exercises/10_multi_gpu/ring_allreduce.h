// Exercise 10: the ring all-reduce, simulated on the CPU, and the arithmetic behind
// NCCL's "bus bandwidth".
//
// N ranks each hold a buffer of n numbers; afterwards every rank must hold the element-
// wise sum. The ring does it in 2(N-1) steps in which every rank sends one chunk (n/N
// elements) to its right-hand neighbour and receives one from its left:
//   reduce-scatter, N-1 steps: each chunk travels once around the ring, collecting one
//     rank's contribution per hop; afterwards rank r owns the full sum of chunk (r+1) % N;
//   all-gather, N-1 steps: the finished chunks travel around again, overwriting.
// So each rank sends 2(N-1)/N * n elements, whatever N: the ring uses every link at
// once, and its time hardly grows with the number of GPUs. chapters/10_multi_gpu prints
// what your code sends, then measures NCCL doing it for real. Tests: ex10_test.cpp.
#pragma once

#include <cstdint>
#include <vector>

#include "zero/core/error.h"

namespace zero::ex10 {

/// What a simulated ring all-reduce did.
struct RingStats {
  int64_t steps = 0;                   ///< Communication steps (each rank sends once per step).
  std::vector<int64_t> elements_sent;  ///< Per rank: elements sent in all steps.
};

/// Start of chunk `c` of `n` elements split into `ranks` chunks (sizes differ by at most one).
inline int64_t chunk_begin(int64_t n, int ranks, int c) { return n * c / ranks; }

/// The traffic factor of a ring all-reduce: each rank sends (and receives) this fraction of
/// the buffer, 2(N-1)/N: 0 for one rank, 1 for two, approaching 2 for many.
inline double ring_traffic_factor(int ranks) {
  ZERO_CHECK(ranks >= 1, "expected at least one rank, got ", ranks);
  // TODO(ex10.2): the fraction each rank sends: N-1 chunks of 1/N in each of two phases
  ZERO_NOT_IMPLEMENTED("ex10.2");
}

/// NCCL's bus bandwidth of an all-reduce of `bytes` that took `seconds` over `ranks`: the
/// algorithm bandwidth bytes / seconds times the traffic factor, so it is comparable with
/// the bandwidth of one link whatever the number of GPUs (NCCL's doc/PERFORMANCE.md).
inline double bus_bandwidth(double bytes, double seconds, int ranks) {
  return bytes / seconds * ring_traffic_factor(ranks);
}

/// Sums `buffers` (one per rank, all the same length) element-wise in place with the ring
/// algorithm described at the top of this file, and counts what each rank sends.
/// @throws zero::Error if there are no buffers or their lengths differ.
inline RingStats ring_allreduce(std::vector<std::vector<float>>& buffers) {
  const int N = static_cast<int>(buffers.size());
  ZERO_CHECK(N >= 1, "expected at least one rank's buffer, got none");
  const int64_t n = static_cast<int64_t>(buffers[0].size());
  for (const auto& b : buffers) {
    ZERO_CHECK(static_cast<int64_t>(b.size()) == n, "expected equal buffers of ", n,
               " elements, got one of ", b.size());
  }
  RingStats stats;
  stats.elements_sent.assign(N, 0);
  // Rank r sends chunk c to rank (r + 1) % N, which adds it into (or, in the all-gather,
  // copies it over) its own chunk c. Within one step no rank sends the chunk it receives,
  // so the simulation may update the buffers in place, one rank after the other.
  [[maybe_unused]] auto send = [&](int r, int c, bool add) {  // (unused until you write ex10.1)
    // A chunk index outside [0, N) would write outside the buffers: stop with its value.
    ZERO_CHECK(c >= 0 && c < N, "send: rank ", r, " asked to send chunk ", c,
               ", expected a chunk in [0, ", N, ")");
    std::vector<float>& to = buffers[(r + 1) % N];
    const std::vector<float>& from = buffers[r];
    const int64_t begin = chunk_begin(n, N, c), end = chunk_begin(n, N, c + 1);
    for (int64_t i = begin; i < end; ++i) to[i] = add ? to[i] + from[i] : from[i];
    stats.elements_sent[r] += end - begin;
  };
  // TODO(ex10.1): reduce-scatter, then all-gather: N-1 steps each, one chunk per rank a step
  ZERO_NOT_IMPLEMENTED("ex10.1");
  return stats;
}

}  // namespace zero::ex10
