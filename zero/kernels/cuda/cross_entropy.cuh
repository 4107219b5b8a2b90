// The row step shared by the cross-entropy kernels (cross_entropy.cu, linear_ce.cu):
// one block computes logsumexp of a row of logits and that row's loss. Private.
#pragma once

#include "zero/kernels/cuda/block_reduce.cuh"

namespace zero::ops::cuda {

// Block-wide: lse = logsumexp(row); loss = lse - row[t], 0 when t == ignore_index,
// NaN when t is outside [0, V) (see Note [Bad indices on the GPU]). Thread 0 writes both.
__device__ inline void cross_entropy_row(const float* row, int32_t t, int ignore_index, int64_t V,
                                         float* lse, float* loss) {
  __shared__ float scratch[2][32];
  float m = -INFINITY;
  for (int64_t i = threadIdx.x; i < V; i += blockDim.x) m = fmaxf(m, row[i]);
  m = block_max(m, scratch[0]);
  float s = 0.0f;
  for (int64_t i = threadIdx.x; i < V; i += blockDim.x) s += __expf(row[i] - m);
  s = block_sum(s, scratch[1]);
  if (threadIdx.x == 0) {
    const float l = m + __logf(s);
    *lse = l;
    *loss = t == ignore_index ? 0.0f : (t >= 0 && t < V ? l - row[t] : NAN);
  }
}

}  // namespace zero::ops::cuda
