// Block-wide sums and maxima for row kernels (softmax, LayerNorm, cross-entropy):
// a warp reduces with shuffles, warp leaders meet in shared memory, and every
// thread of the block gets the result. Private to kernels/cuda/.
#pragma once

#include <cuda_runtime.h>

namespace zero::ops::cuda {

__device__ inline float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ inline float warp_max(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Sum of `v` over the block; every thread returns it. `shared` holds 32 floats.
// Ends with a barrier-free read, so consecutive calls must use different buffers
// or be separated by __syncthreads().
__device__ inline float block_sum(float v, float* shared) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int warps = (blockDim.x + 31) >> 5;
  v = warp_sum(v);
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = lane < warps ? shared[lane] : 0.0f;
  return warp_sum(v);
}

// Maximum of `v` over the block; every thread returns it. Same rules as block_sum.
__device__ inline float block_max(float v, float* shared) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int warps = (blockDim.x + 31) >> 5;
  v = warp_max(v);
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = lane < warps ? shared[lane] : -INFINITY;
  return warp_max(v);
}

}  // namespace zero::ops::cuda
