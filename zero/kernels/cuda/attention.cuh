// Shared by the flash-attention kernels (attention.cu: forward; attention_backward.cu:
// the backward): the tile sizes, the strided operand view, the tile loads, products and
// stores, and the launch arithmetic. Private to kernels/cuda/. Start with the Note below;
// the CPU reference is cpu/attention_cpu.cpp.
//
// Note [Flash attention]
// Scores S = Q K^T * scale are formed a 64 x 64 tile at a time in registers. One
// block of 256 threads owns a tile of 64 query rows (the forward, dQ) or 64 key rows
// (dK, dV) and streams the other operand through shared memory in 64-row tiles:
//
//   forward   block (query tile i):  for each key tile j:  S = Q_i K_j^T
//             m_new = max(m, rowmax S), P = exp(S - m_new), l = l e^(m - m_new) + rowsum P,
//             O = O e^(m - m_new) + P V_j;   at the end O /= l, lse = m + log l
//   dK, dV    block (key tile j):    for each query tile i:  P^T = exp(K_j Q_i^T - lse_i),
//             dP^T = V_j dO_i^T, dS^T = P^T (dP^T - delta_i), dV += P^T dO_i, dK += dS^T Q_i
//   dQ        block (query tile i):  for each key tile j:  P, dP, dS as above, dQ += dS K_j
//
// where delta_i = rowsum(dO_i * O_i) (a small kernel first). dK, dV and dQ each have
// exactly one writer block, so there are no atomics and results are deterministic;
// the price is that dQ's kernel recomputes S and dP (two extra tile products).
//
// Inside a block, thread (ty, tx) = (threadIdx.x / 16, threadIdx.x % 16) owns rows
// ty + 16 r (r < 4) and columns tx + 16 c of every 64 x 64 or 64 x D tile, so its
// values live in registers, the 16 threads of a row share a half-warp (row maxima and
// sums are 4 shuffles), and the shared-memory reads of a warp hit distinct banks:
// tiles are stored row-major with rows padded to D + 1 floats. Causal masking skips
// whole key tiles past a query tile's last row; inside a tile masked scores are -inf
// (probability 0). D is padded up to a compiled width of 32, 64 or 128 (zeros add
// nothing to the dot products), so any D <= 128 works. Shared memory exceeds the
// default 48 KB for D >= 64 and is opted into per kernel (cudaFuncSetAttribute).
//
// Dropout (Note [Attention dropout] in cpu/attention_cpu.cpp): each thread redraws the
// factor F of the (i, j) it owns from the CPU's global index. The forward sums P into l
// but multiplies V by P * F; the backward uses P^T * F for dV and dP * F in dS.
//
// Layouts: a block only ever reads or writes whole rows of D floats, so no operand has
// to be a contiguous [B, H, T, D] array. Each is a HeadView: element (b, h, t, d) at
// b * batch + h * head + t * row + d, the D stride being 1. The GPT hands the kernels
// its packed c_attn output [B, T, 3C] as it is: q, k and v are the views at column
// offsets 0, C and 2C with strides (T * 3C, D, 3C), and y is written straight into
// [B, T, C] (strides (T * C, D, C)), the heads side by side. The backward writes dQ,
// dK, dV into the three column ranges of one [B, T, 3C] gradient the same way. Only
// lse and delta, which the kernels make and read themselves, are contiguous [B, H, T].
#pragma once

#include <cstdint>

#include "zero/kernels/attention_dropout.h"
#include "zero/kernels/cuda/cuda_common.cuh"

namespace zero::ops::cuda::flash {

constexpr int kTile = 64;       // query rows and key rows per tile
constexpr int kThreads = 256;   // 16 x 16
constexpr int kPerThread = 4;   // kTile / 16 rows (or columns) per thread
constexpr int kPLd = kTile + 1; // row stride of a 64 x 64 probability tile in shared memory

// A strided [B, H, T, D] operand (Note [Flash attention], layouts): element
// (b, h, t, d) is at data[b * batch + h * head + t * row + d].
template <typename T>
struct HeadView {
  T* data;
  int64_t batch, head, row;
  // The [T, D] matrix of grid slice bh = b * H + h, its rows `row` floats apart.
  __device__ T* slice(int64_t bh, int H) const { return data + bh / H * batch + bh % H * head; }
};

using In = HeadView<const float>;
using Out = HeadView<float>;

// ---------------------------------------------------------------------------------
// Device helpers

// Copies rows [row0, row0 + 64) of a [rows, D] matrix whose rows are `ld` floats apart
// into a shared tile with row stride kD + 1, writing zeros past the last row and
// past column D.
template <int kD>
__device__ inline void load_tile(float* tile, const float* src, int64_t ld, int row0, int rows,
                                 int D) {
  for (int e = threadIdx.x; e < kTile * kD; e += kThreads) {
    const int r = e / kD, d = e % kD;
    tile[r * (kD + 1) + d] = row0 + r < rows && d < D ? src[(row0 + r) * ld + d] : 0.0f;
  }
}

// acc[r][c] = sum_d a[ty + 16 r][d] * b[tx + 16 c][d]: a 64 x 64 tile of A B^T.
template <int kD>
__device__ inline void tile_abt(const float* a, const float* b,
                                float acc[kPerThread][kPerThread], int ty, int tx) {
  for (int r = 0; r < kPerThread; ++r)
    for (int c = 0; c < kPerThread; ++c) acc[r][c] = 0.0f;
#pragma unroll 8
  for (int d = 0; d < kD; ++d) {
    float av[kPerThread], bv[kPerThread];
    for (int i = 0; i < kPerThread; ++i) {
      av[i] = a[(ty + 16 * i) * (kD + 1) + d];
      bv[i] = b[(tx + 16 * i) * (kD + 1) + d];
    }
    for (int r = 0; r < kPerThread; ++r)
      for (int c = 0; c < kPerThread; ++c) acc[r][c] += av[r] * bv[c];
  }
}

// acc[r][c] += sum_j p[ty + 16 r][j] * b[j][tx + 16 c]: P (64 x 64) times B (64 x kD).
template <int kD>
__device__ inline void tile_ab(const float* p, const float* b, float acc[kPerThread][kD / 16],
                               int ty, int tx) {
#pragma unroll 4
  for (int j = 0; j < kTile; ++j) {
    float pv[kPerThread];
    for (int r = 0; r < kPerThread; ++r) pv[r] = p[(ty + 16 * r) * kPLd + j];
    for (int c = 0; c < kD / 16; ++c) {
      const float bv = b[j * (kD + 1) + tx + 16 * c];
      for (int r = 0; r < kPerThread; ++r) acc[r][c] += pv[r] * bv;
    }
  }
}

// Reductions over the 16 threads of one row (a half-warp).
__device__ inline float row_max(float v) {
  for (int o = 8; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ inline float row_sum(float v) {
  for (int o = 8; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Whether query i may see key j; the causal mask is aligned to the end of the keys.
__device__ inline bool visible(int i, int j, int Tq, int Tk, bool causal) {
  return i < Tq && j < Tk && (!causal || j <= i + (Tk - Tq));
}

// Writes acc[r][c] * scale to rows [row0, ...) of a [rows, D] matrix whose rows are
// `ld` floats apart.
template <int kD>
__device__ inline void store_rows(float* dst, int64_t ld, const float acc[kPerThread][kD / 16],
                                  float scale, int row0, int rows, int D, int ty, int tx) {
  for (int r = 0; r < kPerThread; ++r) {
    const int row = row0 + ty + 16 * r;
    for (int c = 0; c < kD / 16; ++c) {
      const int d = tx + 16 * c;
      if (row < rows && d < D) dst[row * ld + d] = acc[r][c] * scale;
    }
  }
}

// ---------------------------------------------------------------------------------
// Launch arithmetic

inline int tiles(int64_t rows) { return static_cast<int>((rows + kTile - 1) / kTile); }

// The HeadView of a [B, H, T, D] tensor whose D stride is 1 (checked by the dispatch).
inline In in_view(const Tensor& t) {
  return {t.data_ptr<float>(), t.stride(0), t.stride(1), t.stride(2)};
}
inline Out out_view(const Tensor& t) {
  return {t.data_ptr<float>(), t.stride(0), t.stride(1), t.stride(2)};
}

// Shared bytes of a kernel holding `big` (64, kD + 1) tiles, `small` (64, 65) tiles
// and `vectors` 64-float vectors.
template <int kD>
inline size_t smem_bytes(int big, int small, int vectors) {
  return sizeof(float) * (big * kTile * (kD + 1) + small * kTile * kPLd + vectors * kTile);
}

}  // namespace zero::ops::cuda::flash
