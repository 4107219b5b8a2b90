// Flash attention on the Tensor Cores: forward with an online softmax, backward in two
// kernels that recompute the probabilities tile by tile. Nothing of size [Tq, Tk] is
// ever stored. The CPU reference is cpu/attention_cpu.cpp.
//
// Note [Flash attention]
// Scores S = Q K^T * scale are formed a 64 x 64 tile at a time. One block of 256
// threads (8 warps) owns a tile of 64 query rows (the forward, dQ) or 64 key rows
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
// Note [Tensor Cores in FP32]
// Every tile product is a 16 x 16 x 8 WMMA on the Tensor Cores (nvcuda::wmma, TF32
// inputs, FP32 accumulation); each warp owns a few 16 x 16 pieces of the output tile.
// TF32 keeps 10 of FP32's 23 mantissa bits, so in exact mode (MX_FAST_MATMUL unset, as
// for cuBLAS) each operand is split into a TF32 part and the TF32 rounding of what is
// left, x = big + small, and a b is computed as a_small b_big + a_big b_small +
// a_big b_big: three Tensor-Core products, with an error close to FP32's (the dropped
// a_small b_small is about 2^-22 of a b). This "3xTF32" is what PyTorch's FP32
// memory-efficient attention does on these GPUs (CUTLASS's OpMultiplyAddFastF32); with
// MX_FAST_MATMUL=tf32 or fp16, one TF32 product is made, like cuBLAS in that mode.
//
// The online softmax needs whole rows of S, and WMMA's register layout of an
// accumulator is unspecified, so S goes through shared memory: the warps store their
// pieces, four threads per row rescale and exponentiate it there, and the output O
// lives in shared memory too, so that the rescaling by e^(m - m_new) can reach it.
// The backward's dK, dV and dQ need no rescaling and stay in registers.
//
// Layouts: q, k, v, out and the gradients may be any strided views whose last (D)
// dimension is contiguous: a (B, H, T, D) operand at (b, h) starts at b*sb + h*sh and
// its rows are st apart. So the GPT passes views into its packed [B, T, 3C] qkv buffer
// and gets its [B, T, C] output with no copies. Tiles are copied through shared memory
// by all threads (any stride, zero padding past the last row and past D), with rows
// padded to D + 4 floats: WMMA needs 32-byte aligned 16-row pieces, and the padding
// spreads a column's reads over the banks. D is padded up to a compiled width of 32,
// 64 or 128 (zeros add nothing), so any D <= 128 works. Causal masking skips whole key
// tiles past a query tile's last row; inside a tile masked scores are -inf.
//
// Dropout (Note [Attention dropout] in cpu/attention_cpu.cpp): the factor F of (i, j)
// is redrawn from the CPU's global index wherever it is needed. The forward sums P into
// l but multiplies V by P * F; the backward uses P^T * F for dV and dP * F in dS.
#include <mma.h>

#include <cmath>
#include <type_traits>

#include "zero/kernels/attention_dropout.h"
#include "zero/kernels/cuda/blas_common.cuh"
#include "zero/kernels/cuda/cuda_common.cuh"
#include "zero/kernels/cuda/cuda_ops.h"

namespace zero::ops {
namespace {

namespace wmma = nvcuda::wmma;

constexpr int kTile = 64;             // query rows and key rows per tile
constexpr int kThreads = 256;         // 8 warps
constexpr int kSLd = kTile + 4;       // row stride of a 64 x 64 score tile in shared memory
template <int kD>
constexpr int kLd = kD + 4;           // row stride of a 64 x kD operand tile

// One (B, H, T, D) operand with a contiguous D dimension.
struct Heads {
  float* data;
  int64_t sb, sh, st;  // strides of B, H and T, in floats
  int heads;           // H, to split the grid's b * H + h
  __device__ float* at(int64_t bh) const { return data + (bh / heads) * sb + (bh % heads) * sh; }
};

Heads heads_of(const Tensor& t) {
  return Heads{const_cast<float*>(t.data_ptr<float>()), t.stride(0), t.stride(1), t.stride(2),
               static_cast<int>(t.size(1))};
}

// ---------------------------------------------------------------------------------
// Device helpers

using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major>;
template <typename Layout>
using FragB = wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, Layout>;
using FragC = wmma::fragment<wmma::accumulator, 16, 16, 8, float>;

// Rounds every element to TF32 (the whole operand, in fast mode).
template <typename Frag>
__device__ void round_tf32(Frag& f) {
  #pragma unroll
  for (int t = 0; t < f.num_elements; ++t) f.x[t] = wmma::__float_to_tf32(f.x[t]);
}

// x = big + small with both parts TF32 (Note [Tensor Cores in FP32]). Element-wise, so
// the fragment's unspecified layout does not matter.
template <typename Frag>
__device__ void split_tf32(Frag& big, Frag& small) {
  #pragma unroll
  for (int t = 0; t < big.num_elements; ++t) {
    const float x = big.x[t];
    big.x[t] = wmma::__float_to_tf32(x);
    small.x[t] = wmma::__float_to_tf32(x - big.x[t]);
  }
}

// acc += A B over one k-step of 8: A is 16 x 8 row-major at `a` (row stride lda), B is
// 8 x 16 at `b` in `Layout` (row_major: B(k, n) = b[k * ldb + n]; col_major:
// B(k, n) = b[n * ldb + k], i.e. a row-major matrix read transposed).
template <bool kExact, typename Layout>
__device__ void mma_step(FragC& acc, const float* a, int lda, const float* b, int ldb) {
  FragA a_big;
  FragB<Layout> b_big;
  wmma::load_matrix_sync(a_big, a, lda);
  wmma::load_matrix_sync(b_big, b, ldb);
  if constexpr (kExact) {
    FragA a_small;
    FragB<Layout> b_small;
    split_tf32(a_big, a_small);
    split_tf32(b_big, b_small);
    wmma::mma_sync(acc, a_small, b_big, acc);  // the small terms first: less is lost
    wmma::mma_sync(acc, a_big, b_small, acc);
  } else {
    round_tf32(a_big);
    round_tf32(b_big);
  }
  wmma::mma_sync(acc, a_big, b_big, acc);
}

// The 16 x 16 piece (row block rb, column block cb) of A B^T for two row-major tiles
// with kD columns (A: 64 x kD rows of queries or keys; B likewise): S = Q K^T and its
// relatives. Written to `dst` (row stride kSLd).
template <int kD, bool kExact>
__device__ void piece_abt(const float* a, const float* b, float* dst, int rb, int cb) {
  FragC acc;
  wmma::fill_fragment(acc, 0.0f);
#pragma unroll
  for (int kk = 0; kk < kD; kk += 8) {
    mma_step<kExact, wmma::col_major>(acc, a + rb * 16 * kLd<kD> + kk, kLd<kD>,
                                      b + cb * 16 * kLd<kD> + kk, kLd<kD>);
  }
  wmma::store_matrix_sync(dst + rb * 16 * kSLd + cb * 16, acc, kSLd, wmma::mem_row_major);
}

// acc += the (rb, cb) piece of P B, P a 64 x 64 tile (row stride kSLd), B a 64 x kD tile.
template <int kD, bool kExact>
__device__ void piece_pb(FragC& acc, const float* p, const float* b, int rb, int cb) {
#pragma unroll
  for (int kk = 0; kk < kTile; kk += 8) {
    mma_step<kExact, wmma::row_major>(acc, p + rb * 16 * kSLd + kk, kSLd,
                                      b + kk * kLd<kD> + cb * 16, kLd<kD>);
  }
}

// Copies rows [row0, row0 + 64) of a [rows, D] matrix (row stride st) into a shared
// tile, with zeros past the last row and past column D.
template <int kD>
__device__ void load_tile(float* tile, const float* src, int64_t st, int row0, int rows, int D) {
  for (int e = threadIdx.x; e < kTile * kD; e += kThreads) {
    const int r = e / kD, d = e % kD;
    tile[r * kLd<kD> + d] = row0 + r < rows && d < D ? src[(row0 + r) * st + d] : 0.0f;
  }
}

// Copies a shared tile back to rows [row0, ...) of a [rows, D] matrix (row stride st).
template <int kD>
__device__ void store_tile(float* dst, int64_t st, const float* tile, int row0, int rows, int D) {
  for (int e = threadIdx.x; e < kTile * kD; e += kThreads) {
    const int r = e / kD, d = e % kD;
    if (row0 + r < rows && d < D) dst[(row0 + r) * st + d] = tile[r * kLd<kD> + d];
  }
}

// Whether query i may see key j; the causal mask is aligned to the end of the keys.
__device__ bool visible(int i, int j, int Tq, int Tk, bool causal) {
  return i < Tq && j < Tk && (!causal || j <= i + (Tk - Tq));
}

// The warps' share of a 64 x kD output tile: warp w owns row block w / 2 and
// kD / 32 column blocks starting at (w % 2) * kD / 32.
template <int kD>
constexpr int kOutPieces = kD / 32;
__device__ int warp_row_block() { return threadIdx.x / 32 / 2; }
template <int kD>
__device__ int warp_col_block(int c) { return (threadIdx.x / 32 % 2) * kOutPieces<kD> + c; }

// The two 64 x 64 score-tile products every kernel makes: warp w computes pieces
// (w / 2, 2 (w % 2)) and (w / 2, 2 (w % 2) + 1) of A1 B1^T into dst1 and, if a2 is
// given, of A2 B2^T into dst2.
template <int kD, bool kExact>
__device__ void score_tiles(const float* a1, const float* b1, float* dst1, const float* a2,
                            const float* b2, float* dst2) {
  const int rb = warp_row_block();
  #pragma unroll
  for (int c = 0; c < 2; ++c) {
    const int cb = (threadIdx.x / 32 % 2) * 2 + c;
    piece_abt<kD, kExact>(a1, b1, dst1, rb, cb);
    if (a2) piece_abt<kD, kExact>(a2, b2, dst2, rb, cb);
  }
}

// ---------------------------------------------------------------------------------
// Kernels. grid = (B * H, tiles of the owned operand); block = kThreads.

template <int kD, bool kExact>
__global__ void __launch_bounds__(kThreads) attention_forward_kernel(
    Heads q, Heads k, Heads v, Heads out, float* lse, int Tq, int Tk, int D, float scale,
    bool causal, AttentionDropout drop) {
  extern __shared__ __align__(128) float smem[];
  float* qs = smem;                      // (64, kD + 4)
  float* ks = qs + kTile * kLd<kD>;      // (64, kD + 4)
  float* vs = ks + kTile * kLd<kD>;      // (64, kD + 4)
  float* os = vs + kTile * kLd<kD>;      // (64, kD + 4) the unnormalised output
  float* ss = os + kTile * kLd<kD>;      // (64, 68) scores, then probabilities
  float* ls = ss + kTile * kSLd;         // (64) the softmax sums, for the final division
  const int64_t bh = blockIdx.x;
  const int q0 = blockIdx.y * kTile;
  load_tile<kD>(qs, q.at(bh), q.st, q0, Tq, D);
  for (int e = threadIdx.x; e < kTile * kLd<kD>; e += kThreads) os[e] = 0.0f;
  // Four threads share each row of the softmax: row = tid / 4, columns part * 16 ...
  const int row = threadIdx.x / 4, part = threadIdx.x % 4, i = q0 + row;
  float m = -INFINITY, l = 0.0f;
  // Keys past the tile's last query are masked for every row: skip them.
  const int k_end = causal ? ::min(Tk, q0 + kTile + (Tk - Tq)) : Tk;
  for (int k0 = 0; k0 < k_end; k0 += kTile) {
    __syncthreads();  // the previous tile's ks, vs, ss are no longer read
    load_tile<kD>(ks, k.at(bh), k.st, k0, Tk, D);
    load_tile<kD>(vs, v.at(bh), v.st, k0, Tk, D);
    __syncthreads();
    score_tiles<kD, kExact>(qs, ks, ss, nullptr, nullptr, nullptr);  // S = Q K^T
    __syncthreads();
    float* s_row = ss + row * kSLd + part * 16;
    float s[16], tile_max = -INFINITY;
    #pragma unroll
    for (int c = 0; c < 16; ++c) {
      s[c] = visible(i, k0 + part * 16 + c, Tq, Tk, causal) ? s_row[c] * scale : -INFINITY;
      tile_max = fmaxf(tile_max, s[c]);
    }
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 2));
    const float m_new = fmaxf(m, tile_max);
    // A row with nothing visible yet keeps m = -inf; subtract 0 instead so that
    // exp(-inf - -inf) never makes a NaN (every p and alpha is then 0).
    const float m_use = m_new == -INFINITY ? 0.0f : m_new;
    const float alpha = __expf(m - m_use);
    float sum = 0.0f;
    #pragma unroll
    for (int c = 0; c < 16; ++c) {
      const float p = __expf(s[c] - m_use);
      // V is multiplied by the dropped P; the softmax sum takes the undropped P.
      s_row[c] = p * drop.factor(bh * Tq + i, k0 + part * 16 + c, Tk);
      sum += p;
    }
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    l = l * alpha + sum;
    m = m_new;
    float* o_row = os + row * kLd<kD> + part * (kD / 4);
    #pragma unroll
    for (int c = 0; c < kD / 4; ++c) o_row[c] *= alpha;
    __syncthreads();
    #pragma unroll
    for (int c = 0; c < kOutPieces<kD>; ++c) {  // O += P V, through shared memory
      const int rb = warp_row_block(), cb = warp_col_block<kD>(c);
      float* o = os + rb * 16 * kLd<kD> + cb * 16;
      FragC acc;
      wmma::load_matrix_sync(acc, o, kLd<kD>, wmma::mem_row_major);
      piece_pb<kD, kExact>(acc, ss, vs, rb, cb);
      wmma::store_matrix_sync(o, acc, kLd<kD>, wmma::mem_row_major);
    }
  }
  if (part == 0) {
    ls[row] = l;
    if (i < Tq) lse[bh * Tq + i] = m + logf(l);
  }
  __syncthreads();
  for (int e = threadIdx.x; e < kTile * kD; e += kThreads) os[e / kD * kLd<kD> + e % kD] /= ls[e / kD];
  __syncthreads();
  store_tile<kD>(out.at(bh), out.st, os, q0, Tq, D);
}

// delta[row] = sum_d dO[row][d] * O[row][d] for row = bh * Tq + i, one warp per row.
__global__ void attention_delta_kernel(Heads grad_out, Heads out, float* delta, int64_t rows,
                                       int Tq, int D) {
  const int64_t row = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  if (row >= rows) return;
  const float* g = grad_out.at(row / Tq) + (row % Tq) * grad_out.st;
  const float* o = out.at(row / Tq) + (row % Tq) * out.st;
  float s = 0.0f;
  for (int d = threadIdx.x % 32; d < D; d += 32) s += g[d] * o[d];
  for (int w = 16; w > 0; w >>= 1) s += __shfl_xor_sync(0xffffffffu, s, w);
  if (threadIdx.x % 32 == 0) delta[row] = s;
}

template <int kD, bool kExact>
__global__ void __launch_bounds__(kThreads) attention_backward_dkdv_kernel(
    Heads q, Heads k, Heads v, Heads grad_out, const float* lse, const float* delta,
    Heads grad_k, Heads grad_v, int Tq, int Tk, int D, float scale, bool causal,
    AttentionDropout drop) {
  extern __shared__ __align__(128) float smem[];
  float* ks = smem;                     // (64, kD + 4) resident
  float* vs = ks + kTile * kLd<kD>;     // (64, kD + 4) resident
  float* qs = vs + kTile * kLd<kD>;     // (64, kD + 4)
  float* dos = qs + kTile * kLd<kD>;    // (64, kD + 4)
  float* pts = dos + kTile * kLd<kD>;   // (64, 68) S^T, then P^T * F
  float* dsts = pts + kTile * kSLd;     // (64, 68) dP^T, then dS^T
  float* lse_s = dsts + kTile * kSLd;   // (64)
  float* delta_s = lse_s + kTile;       // (64)
  const int64_t bh = blockIdx.x;
  const int k0 = blockIdx.y * kTile;
  lse += bh * Tq, delta += bh * Tq;
  load_tile<kD>(ks, k.at(bh), k.st, k0, Tk, D);
  load_tile<kD>(vs, v.at(bh), v.st, k0, Tk, D);
  FragC dk[kOutPieces<kD>], dv[kOutPieces<kD>];
  #pragma unroll
  for (int c = 0; c < kOutPieces<kD>; ++c) {
    wmma::fill_fragment(dk[c], 0.0f);
    wmma::fill_fragment(dv[c], 0.0f);
  }
  // Queries before k0 - (Tk - Tq) see none of these keys under the causal mask.
  const int q_begin = causal ? ::max(0, k0 - (Tk - Tq)) : 0;
  for (int q0 = q_begin; q0 < Tq; q0 += kTile) {
    __syncthreads();  // the previous tile's qs, dos, pts, dsts are no longer read
    load_tile<kD>(qs, q.at(bh), q.st, q0, Tq, D);
    load_tile<kD>(dos, grad_out.at(bh), grad_out.st, q0, Tq, D);
    if (threadIdx.x < kTile) {
      const int i = q0 + threadIdx.x;
      lse_s[threadIdx.x] = i < Tq ? lse[i] : 0.0f;
      delta_s[threadIdx.x] = i < Tq ? delta[i] : 0.0f;
    }
    __syncthreads();
    score_tiles<kD, kExact>(ks, qs, pts, vs, dos, dsts);  // S^T = K Q^T, dP^T = V dO^T
    __syncthreads();
    for (int e = threadIdx.x; e < kTile * kTile; e += kThreads) {
      const int r = e / kTile, c = e % kTile, j = k0 + r, i = q0 + c;  // key row, query column
      const bool seen = visible(i, j, Tq, Tk, causal);
      const float p = seen ? __expf(pts[r * kSLd + c] * scale - lse_s[c]) : 0.0f;
      const float f = seen ? drop.factor(bh * Tq + i, j, Tk) : 1.0f;
      pts[r * kSLd + c] = p * f;                                      // Z^T
      dsts[r * kSLd + c] = p * (dsts[r * kSLd + c] * f - delta_s[c]);  // dS^T
    }
    __syncthreads();
    #pragma unroll
    for (int c = 0; c < kOutPieces<kD>; ++c) {
      const int rb = warp_row_block(), cb = warp_col_block<kD>(c);
      piece_pb<kD, kExact>(dv[c], pts, dos, rb, cb);   // dV += Z^T dO
      piece_pb<kD, kExact>(dk[c], dsts, qs, rb, cb);   // dK += dS^T Q
    }
  }
  __syncthreads();  // every warp is done with qs and dos: stage the results there
  #pragma unroll
  for (int c = 0; c < kOutPieces<kD>; ++c) {
    const int rb = warp_row_block(), cb = warp_col_block<kD>(c);
    #pragma unroll
    for (int t = 0; t < dk[c].num_elements; ++t) dk[c].x[t] *= scale;
    wmma::store_matrix_sync(qs + rb * 16 * kLd<kD> + cb * 16, dk[c], kLd<kD>, wmma::mem_row_major);
    wmma::store_matrix_sync(dos + rb * 16 * kLd<kD> + cb * 16, dv[c], kLd<kD>, wmma::mem_row_major);
  }
  __syncthreads();
  store_tile<kD>(grad_k.at(bh), grad_k.st, qs, k0, Tk, D);
  store_tile<kD>(grad_v.at(bh), grad_v.st, dos, k0, Tk, D);
}

template <int kD, bool kExact>
__global__ void __launch_bounds__(kThreads) attention_backward_dq_kernel(
    Heads q, Heads k, Heads v, Heads grad_out, const float* lse, const float* delta,
    Heads grad_q, int Tq, int Tk, int D, float scale, bool causal, AttentionDropout drop) {
  extern __shared__ __align__(128) float smem[];
  float* qs = smem;                     // (64, kD + 4) resident
  float* dos = qs + kTile * kLd<kD>;    // (64, kD + 4) resident
  float* ks = dos + kTile * kLd<kD>;    // (64, kD + 4)
  float* vs = ks + kTile * kLd<kD>;     // (64, kD + 4)
  float* dss = vs + kTile * kLd<kD>;    // (64, 68) S, then dS
  float* dps = dss + kTile * kSLd;      // (64, 68) dP
  float* lse_s = dps + kTile * kSLd;    // (64)
  float* delta_s = lse_s + kTile;       // (64)
  const int64_t bh = blockIdx.x;
  const int q0 = blockIdx.y * kTile;
  load_tile<kD>(qs, q.at(bh), q.st, q0, Tq, D);
  load_tile<kD>(dos, grad_out.at(bh), grad_out.st, q0, Tq, D);
  if (threadIdx.x < kTile) {
    const int i = q0 + threadIdx.x;
    lse_s[threadIdx.x] = i < Tq ? lse[bh * Tq + i] : 0.0f;
    delta_s[threadIdx.x] = i < Tq ? delta[bh * Tq + i] : 0.0f;
  }
  FragC dq[kOutPieces<kD>];
  #pragma unroll
  for (int c = 0; c < kOutPieces<kD>; ++c) wmma::fill_fragment(dq[c], 0.0f);
  const int k_end = causal ? ::min(Tk, q0 + kTile + (Tk - Tq)) : Tk;
  for (int k0 = 0; k0 < k_end; k0 += kTile) {
    __syncthreads();  // the previous tile's ks, vs, dss are no longer read
    load_tile<kD>(ks, k.at(bh), k.st, k0, Tk, D);
    load_tile<kD>(vs, v.at(bh), v.st, k0, Tk, D);
    __syncthreads();
    score_tiles<kD, kExact>(qs, ks, dss, dos, vs, dps);  // S = Q K^T, dP = dO V^T
    __syncthreads();
    for (int e = threadIdx.x; e < kTile * kTile; e += kThreads) {
      const int r = e / kTile, c = e % kTile, i = q0 + r, j = k0 + c;  // query row, key column
      const bool seen = visible(i, j, Tq, Tk, causal);
      const float p = seen ? __expf(dss[r * kSLd + c] * scale - lse_s[r]) : 0.0f;
      const float f = seen ? drop.factor(bh * Tq + i, j, Tk) : 1.0f;
      dss[r * kSLd + c] = p * (dps[r * kSLd + c] * f - delta_s[r]);  // dS
    }
    __syncthreads();
    #pragma unroll
    for (int c = 0; c < kOutPieces<kD>; ++c) {
      piece_pb<kD, kExact>(dq[c], dss, ks, warp_row_block(), warp_col_block<kD>(c));  // dQ += dS K
    }
  }
  __syncthreads();  // every warp is done with ks: stage the result there
  #pragma unroll
  for (int c = 0; c < kOutPieces<kD>; ++c) {
    const int rb = warp_row_block(), cb = warp_col_block<kD>(c);
    #pragma unroll
    for (int t = 0; t < dq[c].num_elements; ++t) dq[c].x[t] *= scale;
    wmma::store_matrix_sync(ks + rb * 16 * kLd<kD> + cb * 16, dq[c], kLd<kD>, wmma::mem_row_major);
  }
  __syncthreads();
  store_tile<kD>(grad_q.at(bh), grad_q.st, ks, q0, Tq, D);
}

// ---------------------------------------------------------------------------------
// Launchers

int tiles(int64_t rows) { return static_cast<int>((rows + kTile - 1) / kTile); }

// Shared bytes of a kernel holding four (64, kD + 4) tiles, `scores` (64, 68) tiles and
// `vectors` 64-float vectors.
template <int kD>
size_t smem_bytes(int scores, int vectors) {
  return sizeof(float) * (4 * kTile * kLd<kD> + scores * kTile * kSLd + vectors * kTile);
}

// Exact FP32 (3xTF32) unless MX_FAST_MATMUL asks for Tensor-Core speed (Note [Tensor
// Cores in FP32]).
bool exact_mode() { return cuda::compute_type() == CUBLAS_COMPUTE_32F; }

template <typename Kernel>
void allow_smem(Kernel kernel, size_t bytes) {
  ZERO_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
}

template <int kD, bool kExact>
void forward(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
             const AttentionDropout& drop, const Tensor& out, const Tensor& lse) {
  const int64_t bh = q.size(0) * q.size(1);
  const int Tq = static_cast<int>(q.size(2)), Tk = static_cast<int>(k.size(2));
  const int D = static_cast<int>(q.size(3));
  const size_t smem = smem_bytes<kD>(1, 1);
  allow_smem(attention_forward_kernel<kD, kExact>, smem);
  const dim3 grid(static_cast<unsigned>(bh), tiles(Tq));
  attention_forward_kernel<kD, kExact><<<grid, kThreads, smem, cuda::current_stream()>>>(
      heads_of(q), heads_of(k), heads_of(v), heads_of(out), lse.data_ptr<float>(), Tq, Tk, D,
      1.0f / std::sqrt(static_cast<float>(D)), causal, drop);
  ZERO_CUDA_LAUNCH_CHECK();
}

template <int kD, bool kExact>
void backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
              const Tensor& lse, const Tensor& grad_out, bool causal, const AttentionDropout& drop,
              const Tensor& grad_q, const Tensor& grad_k, const Tensor& grad_v) {
  const int64_t bh = q.size(0) * q.size(1);
  const int Tq = static_cast<int>(q.size(2)), Tk = static_cast<int>(k.size(2));
  const int D = static_cast<int>(q.size(3));
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  Tensor delta = Tensor::Empty({bh * Tq}, lse.options());  // (B * H * Tq)
  if (bh * Tq > 0) {
    constexpr int kRowsPerBlock = kThreads / 32;
    const unsigned blocks = static_cast<unsigned>((bh * Tq + kRowsPerBlock - 1) / kRowsPerBlock);
    attention_delta_kernel<<<blocks, kThreads, 0, cuda::current_stream()>>>(
        heads_of(grad_out), heads_of(out), delta.data_ptr<float>(), bh * Tq, Tq, D);
    ZERO_CUDA_LAUNCH_CHECK();
  }
  const size_t smem = smem_bytes<kD>(2, 2);
  allow_smem(attention_backward_dkdv_kernel<kD, kExact>, smem);
  const dim3 key_grid(static_cast<unsigned>(bh), tiles(Tk));
  attention_backward_dkdv_kernel<kD, kExact><<<key_grid, kThreads, smem, cuda::current_stream()>>>(
      heads_of(q), heads_of(k), heads_of(v), heads_of(grad_out), lse.data_ptr<float>(),
      delta.data_ptr<float>(), heads_of(grad_k), heads_of(grad_v), Tq, Tk, D, scale, causal, drop);
  ZERO_CUDA_LAUNCH_CHECK();
  if (Tq == 0) return;
  allow_smem(attention_backward_dq_kernel<kD, kExact>, smem);
  const dim3 query_grid(static_cast<unsigned>(bh), tiles(Tq));
  attention_backward_dq_kernel<kD, kExact><<<query_grid, kThreads, smem, cuda::current_stream()>>>(
      heads_of(q), heads_of(k), heads_of(v), heads_of(grad_out), lse.data_ptr<float>(),
      delta.data_ptr<float>(), heads_of(grad_q), Tq, Tk, D, scale, causal, drop);
  ZERO_CUDA_LAUNCH_CHECK();
}

// Calls f(width, exact) with std::integral_constant arguments: the compiled width that
// fits D, and whether the current precision mode is exact.
template <typename F>
void dispatch(int64_t D, F&& f) {
  using std::integral_constant;
  const bool exact = exact_mode();
  const auto with = [&](auto width) {
    if (exact) return f(width, std::true_type{});
    f(width, std::false_type{});
  };
  if (D <= 32) return with(integral_constant<int, 32>{});
  if (D <= 64) return with(integral_constant<int, 64>{});
  with(integral_constant<int, 128>{});
}

}  // namespace

void attention_forward_cuda(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                            float dropout_p, uint64_t seed, uint64_t offset, const Tensor& out,
                            const Tensor& lse) {
  cuda::set_device(q);
  if (q.size(0) * q.size(1) * q.size(2) == 0) return;
  const AttentionDropout drop(dropout_p, seed, offset);
  dispatch(q.size(3), [&](auto width, auto exact) {
    forward<decltype(width)::value, decltype(exact)::value>(q, k, v, causal, drop, out, lse);
  });
}

void attention_backward_cuda(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                             const Tensor& lse, const Tensor& grad_out, bool causal,
                             float dropout_p, uint64_t seed, uint64_t offset,
                             const Tensor& grad_q, const Tensor& grad_k, const Tensor& grad_v) {
  cuda::set_device(q);
  if (q.size(0) * q.size(1) == 0 || k.size(2) == 0) return;
  const AttentionDropout drop(dropout_p, seed, offset);
  dispatch(q.size(3), [&](auto width, auto exact) {
    backward<decltype(width)::value, decltype(exact)::value>(q, k, v, out, lse, grad_out, causal,
                                                            drop, grad_q, grad_k, grad_v);
  });
}

}  // namespace zero::ops
