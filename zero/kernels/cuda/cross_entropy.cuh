// The row steps shared by the cross-entropy kernels (cross_entropy.cu, linear_ce.cu):
// one block computes logsumexp of a row of logits and that row's loss, or the row's
// gradient. Private.
#pragma once

#include <cstdint>

#include "zero/kernels/cuda/block_reduce.cuh"
#include "zero/kernels/cuda/cuda_common.cuh"

namespace zero::ops::cuda {

// Whether a row of V elements T at `row` can be read in 16-byte groups (Pack<T>).
template <typename T>
__device__ inline bool packed_row(const T* row, int64_t V) {
  return V % kPack<T> == 0 && reinterpret_cast<uintptr_t>(row) % 16 == 0;
}

// Block-wide: lse = logsumexp(row); loss = lse - row[t], 0 when t == ignore_index,
// NaN when t is outside [0, V) (see Note [Bad indices on the GPU]). Thread 0 writes both.
//
// One read of the row: each thread keeps the largest value m it has seen and the sum s
// of exp(x - m) so far, rescaling s when m grows (the online softmax of flash
// attention). A GPT-2 row is 50304 floats, too long to stay in cache between a pass for
// the maximum and a pass for the sum, so this halves the kernel's memory traffic. The
// row is read 16 bytes a thread at a time where it can be: 2-byte loads of a BF16 row
// would move a warp's 64 bytes per instruction, half a cache line.
// The row may be f32, bf16 or f16: every value is loaded into float, and m, s, lse and
// the loss are FP32.
template <typename T>
__device__ inline void cross_entropy_row(const T* row, int32_t t, int ignore_index, int64_t V,
                                         float* lse, float* loss) {
  __shared__ float scratch[2][32];
  float m = -INFINITY, s = 0.0f;
  const auto add = [&](float x) {
    if (x > m) {
      s = s * __expf(m - x) + 1.0f;  // exp(-inf) = 0 on the first value
      m = x;
    } else if (m > -INFINITY) {  // while m = -inf, x is -inf too and adds nothing
      s += __expf(x - m);
    }
  };
  if (packed_row(row, V)) {
    const Pack<T>* packs = reinterpret_cast<const Pack<T>*>(row);
    for (int64_t i = threadIdx.x; i < V / kPack<T>; i += blockDim.x) {
      const Pack<T> p = packs[i];
#pragma unroll
      for (int e = 0; e < kPack<T>; ++e) add(static_cast<float>(p.v[e]));
    }
  } else {
    for (int64_t i = threadIdx.x; i < V; i += blockDim.x) add(static_cast<float>(row[i]));
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

// Block-wide: grad[j] = scale * (exp(row[j] - lse) - (j == t)), the gradient of a row's
// loss times `scale`, each value rounded once to T. `grad` may be `row` itself (in place).
// 16 bytes a thread at a time where both rows allow it, as cross_entropy_row.
template <typename T>
__device__ inline void cross_entropy_grad_row(const T* row, T* grad, int32_t t, float lse,
                                              float scale, int64_t V) {
  const auto value = [&](float x, int64_t j) {
    return static_cast<T>(scale * (__expf(x - lse) - (j == t ? 1.0f : 0.0f)));
  };
  if (packed_row(row, V) && packed_row<T>(grad, V)) {
    const Pack<T>* in = reinterpret_cast<const Pack<T>*>(row);
    Pack<T>* out = reinterpret_cast<Pack<T>*>(grad);
    for (int64_t i = threadIdx.x; i < V / kPack<T>; i += blockDim.x) {
      Pack<T> p = in[i];
#pragma unroll
      for (int e = 0; e < kPack<T>; ++e) {
        p.v[e] = value(static_cast<float>(p.v[e]), i * kPack<T> + e);
      }
      out[i] = p;
    }
    return;
  }
  for (int64_t j = threadIdx.x; j < V; j += blockDim.x) {
    grad[j] = value(static_cast<float>(row[j]), j);
  }
}

}  // namespace zero::ops::cuda
