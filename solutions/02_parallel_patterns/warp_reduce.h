// Exercise 02: the warp-level tree reduction, the butterfly.
// A warp's 32 lanes sum their values in five steps: at each step every lane adds
// the value of its partner lane (lane ^ offset, offsets 16, 8, 4, 2, 1), so after
// step k each lane holds the sum of a group of 2^k lanes, and after five steps
// every lane holds the sum of all 32. tree_reduce() is that schedule on 32 values
// in an array (the CPU model, checked by tests/exercises/02_parallel_patterns/);
// warp_sum() is the same schedule on a real warp, with __shfl_xor_sync. The
// chapter's reduce_v3_warp_shuffle (chapters/02_parallel_patterns/gpu.cu) uses it.
#pragma once

#include "zero/core/error.h"
#include "zero/core/philox.h"  // ZERO_HOST_DEVICE

namespace ch02 {

constexpr int kWarpSize = 32;
constexpr int kWarpSteps = 5;  // log2(kWarpSize)

// Distance to the partner lane at step `step` (0-based) of the butterfly: 16, 8, 4, 2, 1.
ZERO_HOST_DEVICE constexpr int butterfly_offset(int step) { return (kWarpSize / 2) >> step; }

// The CPU model of a warp summing with shuffles: `lanes[l]` is the value lane l holds.
// Runs the first `steps` steps of the butterfly. In one step all lanes move at once,
// as in a warp: lane l's new value is its old value plus the old value of lane
// l ^ butterfly_offset(step), in that order (own + partner), as warp_sum() adds.
template <typename T>
ZERO_HOST_DEVICE void tree_reduce(T (&lanes)[kWarpSize], int steps = kWarpSteps) {
  // BEGIN SOLUTION ex02.1: run `steps` butterfly steps; read every partner's value before any lane changes.
  for (int step = 0; step < steps; ++step) {
    const int offset = butterfly_offset(step);
    T before[kWarpSize];
    for (int lane = 0; lane < kWarpSize; ++lane) before[lane] = lanes[lane];
    for (int lane = 0; lane < kWarpSize; ++lane) lanes[lane] = before[lane] + before[lane ^ offset];
  }
  // END SOLUTION
}

#if defined(__CUDACC__)
// Sum of `v` over the 32 lanes of the calling warp; every lane gets the total.
// All 32 lanes must call it together (the full mask 0xffffffff says so):
// __shfl_xor_sync(mask, v, offset) returns `v` as held by lane (this lane ^ offset).
__device__ inline float warp_sum(float v) {
  // BEGIN SOLUTION ex02.2: the five butterfly steps of tree_reduce, with __shfl_xor_sync.
  for (int step = 0; step < kWarpSteps; ++step) {
    v += __shfl_xor_sync(0xffffffffu, v, butterfly_offset(step));
  }
  return v;
  // END SOLUTION
}
#endif

}  // namespace ch02
