// The exact-FP32 attention on register tiles (Note [FP32 attention on register tiles] in
// attention_backward_simt.cu): the helpers its forward (attention_forward_simt.cu) and
// backward share, and the two entry points attention.cu and attention_backward.cu call.
// Private to kernels/cuda/.
#pragma once

#include <cstdint>

#include "zero/core/tensor.h"
#include "zero/kernels/attention_dropout.h"
#include "zero/kernels/cuda/attention.cuh"

namespace zero::ops {

// attention.cu's forward for FP32 operands in the ieee mode on register tiles, for heads
// of up to 64 and ZERO_ATTENTION_SIMT not set to 0 in the environment (which keeps the
// fragment-layout kernels, to compare). Returns false, having done nothing, otherwise.
bool attention_forward_simt(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                            const AttentionDropout& drop, const Tensor& out, const Tensor& lse);

// attention_backward.cu's dK, dV kernel, likewise, with that file's per-query (lse,
// delta) pairs `stats` and dQ's FP32 sum `dq_sum` (rows dq_ld floats apart, dq_ld a
// multiple of 4).
bool attention_backward_simt(const Tensor& q, const Tensor& k, const Tensor& v,
                             const Tensor& grad_out, const float* stats, float* dq_sum, int dq_ld,
                             bool causal, const AttentionDropout& drop, const Tensor& grad_k,
                             const Tensor& grad_v);

namespace cuda::simt {

using flash::kTile;
using flash::shared_address;

// Whether the register-tile kernels take FP32 operands with heads of D (ieee mode is the
// caller's to check).
bool applies(int64_t D);

constexpr int kSimtThreads = 256;
constexpr int kWidth = 64;                  // columns of a tile: D <= 64, zeros past D
constexpr int kRow = kWidth + 4;            // floats between rows
constexpr int kTileFloats = kTile * kRow;

// Starts copying rows [row0, row0 + 64) of a [rows, D] matrix (rows `ld` apart) into a
// tile, zeros past the last row and past column D: 16-byte cp.async copies where
// `vectors` (flash::vectors_ok), else element by element (ready on return).
__device__ inline void load_rows(float* tile, const float* src, int64_t ld, int row0, int rows,
                                 int D, bool vectors) {
  if (vectors) {
#pragma unroll
    for (int n = 0; n < kTile * kWidth / 4 / kSimtThreads; ++n) {
      const int c = threadIdx.x + n * kSimtThreads;
      const int r = c / (kWidth / 4), d = c % (kWidth / 4) * 4;
      const bool inside = row0 + r < rows && d < D;
      const float* from = inside ? src + (row0 + r) * ld + d : src;
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(
                       shared_address(tile + r * kRow + d)),
                   "l"(from), "r"(inside ? 16 : 0));
    }
    return;
  }
  for (int e = threadIdx.x; e < kTile * kWidth; e += kSimtThreads) {
    const int r = e / kWidth, d = e % kWidth;
    tile[r * kRow + d] = row0 + r < rows && d < D ? src[(row0 + r) * ld + d] : 0.0f;
  }
}

__device__ inline float4 row4(const float* p) { return *reinterpret_cast<const float4*>(p); }

// s += a . b over four terms, in order (FP32 FMAs).
__device__ inline float dot4(float4 a, float4 b, float s) {
  return fmaf(a.w, b.w, fmaf(a.z, b.z, fmaf(a.y, b.y, fmaf(a.x, b.x, s))));
}

// acc[r][c] += a[r] b[c]: one step of an outer-product sum.
__device__ inline void outer4(float (&acc)[4][4], float4 a, float4 b) {
  const float av[4] = {a.x, a.y, a.z, a.w}, bv[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
  for (int r = 0; r < 4; ++r) {
#pragma unroll
    for (int c = 0; c < 4; ++c) acc[r][c] = fmaf(av[r], bv[c], acc[r][c]);
  }
}

// Note [Dropout squares shared by four lanes]
// A probability's dropout factor is one word of its 2 x 2 square's Philox block
// (AttentionDropout). A thread holds rows ty + 16i and columns tx + 16j of a tile, one
// probability in each of 16 squares, and the other three probabilities of each of those
// squares lie with lanes L ^ 1 (tx's neighbour), L ^ 16 (ty's, the other half of the
// warp) and L ^ 17. Rather than evaluate 16 blocks a thread, each of the four lanes
// evaluates the 4 squares of one column step j (the lane of parities x = tx % 2, y =
// ty % 2 takes j = 2y + x), keeps each word as one bit, and in three shuffles of 4 bits
// hands each partner the words it needs. Both tile origins must be even, so that a
// square never straddles two pairs of lanes.

// Which of the thread's 16 probabilities dropout keeps: bit 4j + i for row row0 + ty +
// 16i, column col0 + tx + 16j (row0, col0 even), the rows queries when kRowIsQuery (the
// forward), else keys. Every thread of the warp must call it together.
template <bool kRowIsQuery>
__device__ inline unsigned kept_bits(const AttentionDropout& drop, int64_t bh, int row0,
                                     int col0) {
  const int lane = threadIdx.x % 32, ty = threadIdx.x / 16, tx = threadIdx.x % 16;
  const int x = lane & 1, y = lane >> 4;  // the parities of tx and ty
  unsigned own = 0;  // bit 4i + w: word w of the square of step (i, 2y + x)
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int r = (row0 + (ty & ~1) + 16 * i) / 2, c = (col0 + (tx & ~1) + 16 * (2 * y + x)) / 2;
    float f[4];
    if constexpr (kRowIsQuery) {
      drop.square(bh, r, c, f);
    } else {
      drop.square(bh, c, r, f);
    }
#pragma unroll
    for (int w = 0; w < 4; ++w) own |= static_cast<unsigned>(f[w] != 0.0f) << (4 * i + w);
  }
  unsigned kept = 0;
#pragma unroll
  for (int m = 0; m < 4; ++m) {  // partners L, L ^ 1, L ^ 16, L ^ 17
    const int mask = (m & 1) | (m >> 1) << 4;
    const int xs = x ^ (m & 1), ys = y ^ (m >> 1);  // the partner's parities
    // The word the partner needs: 2 (query % 2) + key % 2.
    const int w = kRowIsQuery ? 2 * ys + xs : 2 * xs + ys;
    unsigned send = 0;
#pragma unroll
    for (int i = 0; i < 4; ++i) send |= (own >> (4 * i + w) & 1u) << i;
    const unsigned got = mask == 0 ? send : __shfl_xor_sync(0xffffffffu, send, mask);
    kept |= got << (4 * (2 * ys + xs));  // the partner's step j = 2 ys + xs
  }
  return kept;
}

}  // namespace cuda::simt
}  // namespace zero::ops
