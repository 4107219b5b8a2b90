// The softmax of the fast attention kernels, done in registers: the forward's online
// softmax over one key tile at a time, and the causal mask that both directions apply to
// their scores. Part of the fast kernels (attention.cuh lists the parts); the same
// formulas one row at a time, without tiles, are attention_reference.cu.
//
// Note [Online softmax in registers]
// The forward never holds a query row's scores against all keys, only against the 64
// keys of the current tile, so it keeps per row a running maximum m and a running sum
// l = sum exp(s - m) over the keys seen so far, and the output accumulator O built under
// the same m (Milakov & Gimelshein 2018). A tile with larger scores moves the maximum to
// m_new; what was summed before is then rescaled by alpha = e^(m - m_new):
//
//   m_new = max(m, rowmax S),  P = exp(S - m_new),  l = l alpha + rowsum P,
//   O = O alpha + P V,         at the end O /= l and lse = m + log l.
//
// The 64 scores of a row are held by the 4 threads of a quad, 16 each (Note [Tensor-Core
// fragments]), so rowmax and rowsum are a thread's own 16 values and then two
// __shfl_xor_sync steps across the quad (lanes 1 and 2 apart). Masked scores are -inf
// and get probability 0. Every real row sees key 0, but the padding rows of the last
// query tile (past Tq) see no key at all and keep m = -inf; their exponents subtract 0
// instead (`m_use`), so exp(-inf - -inf) never makes a NaN. The exponentials are exp_of,
// in base 2 for the fast modes (Note [Exponentials in base 2]); masks cost only on the
// tiles that have masked scores (`tile_masked`).
//
// With dropout the sum l takes the undropped P while V meets P * F (Note [Attention
// dropout squares]). The backward needs no running statistics: both of its kernels
// recompute the probabilities from the saved lse, P = exp(S scale - lse).
#pragma once

#include <cmath>
#include <cstdint>

#include "zero/kernels/attention_dropout.h"
#include "zero/kernels/cuda/attention_tf32.cuh"
#include "zero/kernels/cuda/attention_tiles.cuh"

namespace zero::ops::cuda::flash {

// Whether query i may see key j; the causal mask is aligned to the end of the keys (the
// queries are the last Tq positions).
__device__ inline bool visible(int i, int j, int Tq, int Tk, bool causal) {
  return i < Tq && j < Tk && (!causal || j <= i + (Tk - Tq));
}

// The maximum of x over the 4 threads of this thread's quad, the 4 that share a row.
__device__ inline float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}

// The sum of x over the 4 threads of this thread's quad.
__device__ inline float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

// Whether any score of the q_rows x 64 tile of queries q0.. against keys k0.. is masked:
// rows past Tq, keys past Tk, or (causal) a key past some row's last visible one. Only
// such tiles pay for `visible` on every score; under the causal mask of GPT-2's T = 1024
// that is 16 of a head's 136 tiles of 64 x 64.
__device__ inline bool tile_masked(int q0, int k0, int Tq, int Tk, bool causal,
                                   int q_rows = kTile) {
  return q0 + q_rows > Tq || k0 + kTile > Tk || (causal && k0 + kTile - 1 > q0 + (Tk - Tq));
}

// The forward's first step on key tile k0: masks the thread's invisible raw scores s to
// -inf when the tile is `masked` (s[j][e] being row rows[e / 2], key k0 + 8j + 2t +
// e % 2), and moves the running maximum m of each row, an exponent of kA's base (Note
// [Exponentials in base 2]; `score_scale` = exponent_scale(scale)), to cover the tile.
// Gives the rescaling factor alpha = exp_of(m_old - m_new) and m_use, the maximum the
// exponents subtract.
template <Arith kA>
__device__ inline void softmax_max_step(float s[kSteps][4], float m[2], float m_use[2],
                                        float alpha[2], const int rows[2], int k0, int Tq,
                                        int Tk, bool causal, bool masked, float score_scale) {
  const int t = threadIdx.x % 4;
  if (masked) {
#pragma unroll
    for (int j = 0; j < kSteps; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = k0 + 8 * j + 2 * t + e % 2;
        if (!visible(rows[e / 2], key, Tq, Tk, causal)) s[j][e] = -INFINITY;
      }
    }
  }
  float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int j = 0; j < kSteps; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) tile_max[e / 2] = fmaxf(tile_max[e / 2], s[j][e]);
  }
#pragma unroll
  for (int x = 0; x < 2; ++x) {
    // The scale is positive, so the maximum of the scaled scores is the scaled maximum.
    tile_max[x] = quad_max(tile_max[x]) * score_scale;
    const float m_new = fmaxf(m[x], tile_max[x]);
    m_use[x] = m_new == -INFINITY ? 0.0f : m_new;  // a row that has seen no key
    alpha[x] = exp_of<kA>(m[x] - m_use[x]);
    m[x] = m_new;
  }
}

// The forward's second step: s becomes P * F (P = exp_of(s score_scale - m_use), one fma
// and one exponential a score; F the dropout factors of slice bh), ready to multiply V,
// and l = l alpha + rowsum P.
template <Arith kA>
__device__ inline void softmax_sum_step(float s[kSteps][4], float l[2], const float m_use[2],
                                        const float alpha[2], const int rows[2], int k0,
                                        int64_t bh, float score_scale,
                                        const AttentionDropout& drop) {
  const int t = threadIdx.x % 4;
  float sum[2] = {0.0f, 0.0f};
#pragma unroll
  for (int j = 0; j < kSteps; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      s[j][e] = exp_of<kA>(fmaf(s[j][e], score_scale, -m_use[e / 2]));
      sum[e / 2] += s[j][e];
    }
  }
  if (drop.p != 0.0f) {  // V meets the dropped P; the sum took the undropped P
#pragma unroll
    for (int j = 0; j < kSteps; ++j) {
      float f[4];  // the dropout factors of the thread's 2 x 2 square of this step
      drop.square(bh, rows[0] / 2, (k0 + 8 * j) / 2 + t, f);
#pragma unroll
      for (int e = 0; e < 4; ++e) s[j][e] *= f[e];
    }
  }
#pragma unroll
  for (int x = 0; x < 2; ++x) l[x] = l[x] * alpha[x] + quad_sum(sum[x]);
}

// O = O alpha before O += P V: the accumulator rescaled to the new maximum.
template <int kD>
__device__ inline void softmax_rescale(float o[kD / 8][4], const float alpha[2]) {
#pragma unroll
  for (int n = 0; n < kD / 8; ++n) {
#pragma unroll
    for (int e = 0; e < 4; ++e) o[n][e] *= alpha[e / 2];
  }
}

}  // namespace zero::ops::cuda::flash
