// The attention backward's two passes over rows, before and after the dK, dV kernel of
// attention_backward.cu: each query row's lse and delta = rowsum(dO * O), and dQ's FP32
// sum scaled and rounded into grad_q. Both are memory-bound: a thread takes eight
// elements of a row at a time, as one or two 16-byte moves where `vectors` promises the
// alignment (vectors_ok in attention.cuh).
#pragma once

#include <cstdint>

#include "zero/kernels/cuda/attention.cuh"

namespace zero::ops::cuda::flash {

// Eight consecutive elements of a row, moved as one or two 16-byte loads or stores
// where `vectors` (vectors_ok in attention.cuh) promises the alignment.
template <typename E>
struct alignas(16) Eight {
  E v[8];
};

// The two numbers the dK, dV kernel needs of each query row = bh * Tq + i, eight lanes
// a row, each taking eight elements at a time: stats[row] = {lse[row] as an exponent of
// kA's base (Note [Exponentials in base 2]), delta = sum_d dO[row][d] * O[row][d]}. Side
// by side, a query tile's 64 pairs are copied with cp.async like its rows. (A warp a
// row, with 2-byte loads, held the kernel to a quarter of the memory bandwidth:
// docs/speed_notes.md, item 43.)
template <Arith kA, typename E = Element<kA>>
__global__ void attention_delta_kernel(HeadView<const E> grad_out, HeadView<const E> out,
                                       const float* lse, float2* stats, int64_t rows, int H,
                                       int Tq, int D, bool vectors) {
  const int64_t row = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 8;
  const int lane = threadIdx.x % 8;
  float s = 0.0f;
  if (row < rows) {
    const int64_t bh = row / Tq, i = row % Tq;
    const E* grad_row = grad_out.slice(bh, H) + i * grad_out.row;
    const E* out_row = out.slice(bh, H) + i * out.row;
    for (int d0 = 8 * lane; d0 < D; d0 += 64) {
      Eight<E> g{}, o{};
      if (vectors && d0 + 8 <= D) {
        g = *reinterpret_cast<const Eight<E>*>(grad_row + d0);
        o = *reinterpret_cast<const Eight<E>*>(out_row + d0);
      } else {
        for (int k = 0; k < 8 && d0 + k < D; ++k) {
          g.v[k] = grad_row[d0 + k];
          o.v[k] = out_row[d0 + k];
        }
      }
#pragma unroll
      for (int k = 0; k < 8; ++k) s += static_cast<float>(g.v[k]) * static_cast<float>(o.v[k]);
    }
  }
  for (int width = 4; width > 0; width /= 2) s += __shfl_xor_sync(0xffffffffu, s, width);
  if (row < rows && lane == 0) stats[row] = make_float2(exponent_of_lse<kA>(lse[row]), s);
}

// grad_q = scale * dq_sum, rounded once into E: one thread per eight elements of a row
// of the [rows, D] result (rows = B * H * Tq), dq_sum's rows kD floats apart. (One
// thread an element, with three 64-bit divisions each, ran at a quarter of the memory
// bandwidth: docs/speed_notes.md, item 43.)
template <int kD, typename E>
__global__ void attention_dq_store_kernel(const float* dq_sum, HeadView<E> grad_q, int64_t rows,
                                          int H, int Tq, int D, float scale, bool vectors) {
  const int groups = (D + 7) / 8;
  const int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= rows * groups) return;
  const int64_t row = e / groups, bh = row / Tq, i = row % Tq;
  const int d0 = static_cast<int>(e % groups) * 8;
  const float* src = dq_sum + row * kD + d0;
  E* dst = grad_q.slice(bh, H) + i * grad_q.row + d0;
  if (vectors && d0 + 8 <= D) {
    const float4 a = reinterpret_cast<const float4*>(src)[0];
    const float4 b = reinterpret_cast<const float4*>(src)[1];
    const float v[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
    Eight<E> r;
#pragma unroll
    for (int k = 0; k < 8; ++k) r.v[k] = convert_value<E>(v[k] * scale);
    *reinterpret_cast<Eight<E>*>(dst) = r;
    return;
  }
  for (int k = 0; k < 8 && d0 + k < D; ++k) dst[k] = convert_value<E>(src[k] * scale);
}


}  // namespace zero::ops::cuda::flash
