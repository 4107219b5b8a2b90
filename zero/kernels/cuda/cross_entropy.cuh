// The row step shared by the cross-entropy kernels (cross_entropy.cu, linear_ce.cu):
// one block computes logsumexp of a row of logits and that row's loss. Private.
#pragma once

#include "zero/kernels/cuda/block_reduce.cuh"

namespace zero::ops::cuda {

// Block-wide: lse = logsumexp(row); loss = lse - row[t], 0 when t == ignore_index,
// NaN when t is outside [0, V) (see Note [Bad indices on the GPU]). Thread 0 writes both.
//
// One read of the row: each thread keeps the largest value m it has seen and the sum s
// of exp(x - m) so far, rescaling s when m grows (the online softmax of flash
// attention). A GPT-2 row is 50304 floats, too long to stay in cache between a pass for
// the maximum and a pass for the sum, so this halves the kernel's memory traffic.
// The row may be f32, bf16 or f16: every value is loaded into float, and m, s, lse and
// the loss are FP32.
template <typename T>
__device__ inline void cross_entropy_row(const T* row, int32_t t, int ignore_index, int64_t V,
                                         float* lse, float* loss) {
  __shared__ float scratch[2][32];
  float m = -INFINITY, s = 0.0f;
  for (int64_t i = threadIdx.x; i < V; i += blockDim.x) {
    const float x = static_cast<float>(row[i]);
    if (x > m) {
      s = s * __expf(m - x) + 1.0f;  // exp(-inf) = 0 on the first value
      m = x;
    } else if (m > -INFINITY) {  // while m = -inf, x is -inf too and adds nothing
      s += __expf(x - m);
    }
  }
  const float row_max = block_max(m, scratch[0]);
  s = m > -INFINITY ? s * __expf(m - row_max) : 0.0f;
  s = block_sum(s, scratch[1]);
  m = row_max;
  if (threadIdx.x == 0) {
    const float l = m + __logf(s);
    *lse = l;
    const bool valid = t >= 0 && t < V;
    *loss = t == ignore_index ? 0.0f : (valid ? l - static_cast<float>(row[t]) : NAN);
  }
}

}  // namespace zero::ops::cuda
