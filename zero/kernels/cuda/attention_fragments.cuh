// Which thread of a warp holds which element of a Tensor-Core operand, the reads that
// gather those elements from a shared tile, and the one product that follows a softmax,
// acc += P B. Part of the fast kernels (attention.cuh lists the parts); the product
// itself is attention_tf32.cuh, the tiles attention_tiles.cuh.
//
// Note [Tensor-Core fragments]
// The PTX ISA fixes which elements each thread holds for mma.sync m16n8k8. With
// g = lane / 4 and t = lane % 4: A (16 x 8) holds (g, t), (g + 8, t), (g, t + 4),
// (g + 8, t + 4); B (8 x 8) holds (k = t, n = g) and (t + 4, g); the accumulator
// (16 x 8) holds (g, 2t), (g, 2t + 1), (g + 8, 2t), (g + 8, 2t + 1). So the 4 threads
// of a quad (same g) share two rows: their softmax is 4 threads' business
// (attention_softmax.cuh), never a trip through shared memory.
//
// P = softmax(S) comes out in the accumulator layout, but P V needs it as an A operand,
// where the columns a thread holds are t and t + 4 instead of 2t and 2t + 1. Rather
// than exchange values between threads, the product sums over the 8 keys of a step in a
// different order: A's column t stands for key 2t and column t + 4 for key 2t + 1, and
// B's rows are read in the same order (`b_rows`). A sum does not depend on its order, so
// the accumulator of S is reused as A directly (`acc_as_a`), with no shuffle at all
// (docs/speed_notes.md, item 5; WMMA, which hides the layout, had to round-trip S
// through shared memory, item 3).
#pragma once

#include "zero/kernels/cuda/attention_tf32.cuh"
#include "zero/kernels/cuda/attention_tiles.cuh"
#include "zero/kernels/dtype_dispatch.h"

namespace zero::ops::cuda::flash {

// The A operand of rows [r0, r0 + 16), columns [k0, k0 + 8) of a shared tile.
template <int kD>
__device__ inline void a_rows(float a[4], const float* tile, int r0, int k0) {
  const int g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
  const float* p = tile + (r0 + g) * kLd<kD> + k0 + t;
  a[0] = p[0], a[1] = p[8 * kLd<kD>], a[2] = p[4], a[3] = p[8 * kLd<kD> + 4];
}

// The B operand B(k, n) = M[n0 + n][k0 + k] of a shared tile M: its rows read as
// columns, as K is in S = Q K^T.
template <int kD>
__device__ inline void b_cols(float b[2], const float* tile, int n0, int k0) {
  const int g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
  const float* p = tile + (n0 + g) * kLd<kD> + k0 + t;
  b[0] = p[0], b[1] = p[4];
}

// The B operand B(k, n) = M[k0 + k][n0 + n] of a shared tile M with its 8 rows taken
// in the order of an accumulator used as A: rows 2t and 2t + 1 (Note [Tensor-Core
// fragments]), as V is in P V.
template <int kD>
__device__ inline void b_rows(float b[2], const float* tile, int k0, int n0) {
  const int g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
  const float* p = tile + (k0 + 2 * t) * kLd<kD> + n0 + g;
  b[0] = p[0], b[1] = p[kLd<kD>];
}

// The two 16-bit values at p (4-byte aligned) as one register, p[0] in the low half.
template <typename E>
__device__ inline uint32_t pair_at(const E* p) {
  return *reinterpret_cast<const uint32_t*>(p);
}

// The shared-memory address of p, as ldmatrix takes it.
template <typename E>
__device__ inline unsigned shared_address(const E* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// ldmatrix: the warp reads four (x4) or two (x2) 8 x 8 blocks of 16-bit values, lane l
// giving the address of row l % 8 of block l / 8 (each row 16 contiguous bytes); register
// r[b] of thread (g, t) gets row g, columns 2t and 2t + 1 of block b: the fragments of
// Note [16-bit fragments], one instruction where 32-bit loads take four or two.
__device__ inline void ldmatrix_x4(uint32_t r[4], unsigned at) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(at));
}
__device__ inline void ldmatrix_x2(uint32_t r[2], unsigned at) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(at));
}

// The A operand (16 x 16) of rows [r0, r0 + 16), columns [k0, k0 + 16) of a 16-bit tile
// (Note [16-bit fragments]): blocks (rows r0.., columns k0..), (r0 + 8.., k0..),
// (r0.., k0 + 8..), (r0 + 8.., k0 + 8..), so lane l reads row r0 + l % 16 at column
// k0 + 8 (l / 16).
template <int kD, typename E>
__device__ inline Packed16<4> a_rows16(const E* tile, int r0, int k0) {
  const int lane = threadIdx.x % 32;
  Packed16<4> a;
  ldmatrix_x4(a.r, shared_address(tile + (r0 + lane % 16) * kLd<kD, E> + k0 + lane / 16 * 8));
  return a;
}

// The B operand (16 x 8) B(k, n) = M[n0 + n][k0 + k] of a 16-bit tile M: its rows read
// as columns, as K is in S = Q K^T. Blocks (rows n0.., columns k0..) and (n0.., k0 + 8..).
template <int kD, typename E>
__device__ inline Packed16<2> b_cols16(const E* tile, int n0, int k0) {
  const int lane = threadIdx.x % 16;  // lanes 16.. give addresses that x2 ignores
  Packed16<2> b;
  ldmatrix_x2(b.r, shared_address(tile + (n0 + lane % 8) * kLd<kD, E> + k0 + lane / 8 * 8));
  return b;
}

// b_cols16 for two neighbouring column tiles at once: b[0..1] is B for rows n0.. of M,
// b[2..3] for rows n0 + 8.., from one ldmatrix.x4.
template <int kD, typename E>
__device__ inline void b_cols16_pair(uint32_t b[4], const E* tile, int n0, int k0) {
  const int lane = threadIdx.x % 32;
  const int row = n0 + lane % 8 + lane / 16 * 8, col = k0 + lane / 8 % 2 * 8;
  ldmatrix_x4(b, shared_address(tile + row * kLd<kD, E> + col));
}

// The B operands (16 x 8) B(k, n) = M[k0 + k][n0 + n] and M[k0 + k][n0 + 8 + n] of a
// 16-bit tile M, as V is in P V: two column tiles from one ldmatrix.x4.trans. Lane l
// gives the address of row k0 + l % 16, column n0 + 8 (l / 16), for the four 8 x 8
// blocks b[0..1] (rows k0.., k0 + 8..; columns n0..) and b[2..3] (columns n0 + 8..).
template <int kD, typename E>
__device__ inline void b_rows16(uint32_t b[4], const E* tile, int k0, int n0) {
  const int lane = threadIdx.x % 32;
  const E* p = tile + (k0 + lane % 16) * kLd<kD, E> + n0 + lane / 16 * 8;
  const unsigned at = shared_address(p);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3])
               : "r"(at));
}

// The 8 floats at p, 16-byte aligned, as two float4 loads.
__device__ inline void load_line(float (&line)[8], const float* p) {
  const float4* v = reinterpret_cast<const float4*>(p);
  const float4 lo = v[0], hi = v[1];
  line[0] = lo.x, line[1] = lo.y, line[2] = lo.z, line[3] = lo.w;
  line[4] = hi.x, line[5] = hi.y, line[6] = hi.z, line[7] = hi.w;
}

// The operands of kA's products straight from a shared tile. For the Tensor-Core modes
// these are the fragments above, made into operands; for kFp32 each thread reads the
// lines its own outputs need (Fp32Lines) from shared memory itself, which costs a few
// wide loads where gathering them from the fragments would cost 16 shuffles (Note
// [Tensor Cores in FP32]). Tiles start 16-byte aligned and rows are kLd floats apart
// (a multiple of 4), so the float4 reads are aligned; the 4 rows a warp reads at once
// are 2 kLd floats apart, 8 banks, so they never conflict.
template <int kD, Arith kA, typename E>
__device__ inline Operand<kA, 4> a_rows_operand(const E* tile, int r0, int k0) {
  if constexpr (kSixteenBit<kA>) {
    return a_rows16<kD>(tile, r0, k0);
  } else if constexpr (kA == Arith::kFp32) {
    Fp32Lines<4> r;
    const int g = threadIdx.x % 32 / 4;
#pragma unroll
    for (int c = 0; c < 2; ++c) load_line(r.line[c], tile + (r0 + g + 8 * c) * kLd<kD> + k0);
    return r;
  } else {
    float a[4];
    a_rows<kD>(a, tile, r0, k0);
    return operand<kA>(a);
  }
}

// b_cols as an operand: B(k, n) = M[n0 + n][k0 + k].
template <int kD, Arith kA, typename E>
__device__ inline Operand<kA, 2> b_cols_operand(const E* tile, int n0, int k0) {
  if constexpr (kSixteenBit<kA>) {
    return b_cols16<kD>(tile, n0, k0);
  } else if constexpr (kA == Arith::kFp32) {
    Fp32Lines<2> r;
    const int t = threadIdx.x % 4;
#pragma unroll
    for (int c = 0; c < 2; ++c) {  // columns 2t and 2t + 1: rows n0 + 2t + c of M
      load_line(r.line[c], tile + (n0 + 2 * t + c) * kLd<kD> + k0);
    }
    return r;
  } else {
    float b[2];
    b_cols<kD>(b, tile, n0, k0);
    return operand<kA>(b);
  }
}

// b_rows as an operand: B(k, n) = M[k0 + row(k)][n0 + n], with row(k) = 2k for k < 4 and
// 2 (k - 4) + 1 above, the order of an accumulator used as A.
template <int kD, Arith kA>
__device__ inline Operand<kA, 2> b_rows_operand(const float* tile, int k0, int n0) {
  if constexpr (kA == Arith::kFp32) {
    Fp32Lines<2> r;
    const int t = threadIdx.x % 4;
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const int row = k < 4 ? 2 * k : 2 * (k - 4) + 1;
      const float2 v = *reinterpret_cast<const float2*>(tile + (k0 + row) * kLd<kD> + n0 + 2 * t);
      r.line[0][k] = v.x, r.line[1][k] = v.y;
    }
    return r;
  } else {
    float b[2];
    b_rows<kD>(b, tile, k0, n0);
    return operand<kA>(b);
  }
}

// s[x][j] += A_x B_j for the 8 column tiles j of a 64-row shared tile M, B_j(k, n) =
// M[8j + n][k0 + k], over columns k0 .. k0 + kK, for the kBlocks 16-row blocks x of a
// warp (A_x their operands): a warp's 16 x 64 scores against M's rows (K in the
// forward's S = Q K^T, Q and dO in the backward's S^T and dP^T). Each B is read once
// for all the blocks; on 16-bit tiles one ldmatrix.x4 gives two column tiles.
template <int kD, Arith kA, int kBlocks = 1, typename E>
__device__ inline void times_rows(float (*s)[kSteps][4], const Operand<kA, 4>* a, const E* tile,
                                  int k0) {
  if constexpr (kSixteenBit<kA>) {
#pragma unroll
    for (int j = 0; j < kSteps; j += 2) {
      uint32_t b[4];
      b_cols16_pair<kD>(b, tile, 8 * j, k0);
#pragma unroll
      for (int x = 0; x < kBlocks; ++x) {
        mma_16bit<kA == Arith::kBf16>(s[x][j], a[x].r, b);
        mma_16bit<kA == Arith::kBf16>(s[x][j + 1], a[x].r, b + 2);
      }
    }
  } else {
#pragma unroll
    for (int j = 0; j < kSteps; ++j) {
      const Operand<kA, 2> b = b_cols_operand<kD, kA>(tile, 8 * j, k0);
#pragma unroll
      for (int x = 0; x < kBlocks; ++x) mma<kA>(s[x][j], a[x], b);
    }
  }
}

// An accumulator (g, 2t), (g, 2t + 1), (g + 8, 2t), (g + 8, 2t + 1) as the A operand of
// the next product, columns in b_rows' order.
__device__ inline void acc_as_a(float a[4], const float c[4]) {
  a[0] = c[0], a[1] = c[2], a[2] = c[1], a[3] = c[3];
}

// acc[x][n] += P_x B for the kBlocks 16-row blocks x of a warp, P_x its 16 x 64
// accumulators (keys 8j.. in p[x][j]) and B a 64 x kD shared tile: O += P V in the
// forward, dV += Z^T dO, dK += dS^T Q and dQ += dS K in the backward. Each A fragment
// is made once and used against all kD / 8 column steps, each B fragment read once for
// all the blocks. On 16-bit tiles two neighbouring accumulators are one A operand of 16
// keys (Note [16-bit fragments]).
template <int kD, Arith kA, int kBlocks = 1, typename E>
__device__ inline void times_tile(float (*acc)[kD / 8][4], const float (*p)[kSteps][4],
                                  const E* b) {
  if constexpr (kSixteenBit<kA>) {
#pragma unroll
    for (int j = 0; j < kSteps; j += 2) {
      Packed16<4> a[kBlocks];
#pragma unroll
      for (int x = 0; x < kBlocks; ++x) {
        a[x] = {{pack16<kA>(p[x][j][0], p[x][j][1]), pack16<kA>(p[x][j][2], p[x][j][3]),
                 pack16<kA>(p[x][j + 1][0], p[x][j + 1][1]),
                 pack16<kA>(p[x][j + 1][2], p[x][j + 1][3])}};
      }
#pragma unroll
      for (int n = 0; n < kD / 8; n += 2) {
        uint32_t v[4];
        b_rows16<kD>(v, b, 8 * j, 8 * n);
#pragma unroll
        for (int x = 0; x < kBlocks; ++x) {
          mma_16bit<kA == Arith::kBf16>(acc[x][n], a[x].r, v);
          mma_16bit<kA == Arith::kBf16>(acc[x][n + 1], a[x].r, v + 2);
        }
      }
    }
  } else {
#pragma unroll
    for (int j = 0; j < kSteps; ++j) {
      Operand<kA, 4> ta[kBlocks];
#pragma unroll
      for (int x = 0; x < kBlocks; ++x) {
        float a[4];
        acc_as_a(a, p[x][j]);
        ta[x] = operand<kA>(a);
      }
#pragma unroll
      for (int n = 0; n < kD / 8; ++n) {
        const Operand<kA, 2> bn = b_rows_operand<kD, kA>(b, 8 * j, 8 * n);
#pragma unroll
        for (int x = 0; x < kBlocks; ++x) mma<kA>(acc[x][n], ta[x], bn);
      }
    }
  }
}

// Writes a warp's 16 x kD accumulators acc[n] (columns 8n..) times `scale` to rows
// r0, r0 + 1, ... of a [rows, D] matrix of elements E whose rows are `ld` elements
// apart, each rounded once to E. The accumulator rows are in pair order: thread (g, t)
// holds rows r0 + 2g and r0 + 2g + 1 (Note [Attention dropout squares]).
template <int kD, typename E>
__device__ inline void store_acc(E* dst, int64_t ld, const float (*acc)[4], float scale, int r0,
                                 int rows, int D) {
  const int g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
#pragma unroll
  for (int n = 0; n < kD / 8; ++n) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int r = r0 + 2 * g + e / 2, d = 8 * n + 2 * t + e % 2;
      if (r < rows && d < D) dst[r * ld + d] = convert_value<E>(acc[n][e] * scale);
    }
  }
}

}  // namespace zero::ops::cuda::flash
