// Shared by the flash-attention kernels (attention.cu: forward; attention_backward.cu:
// the backward): the tile sizes, the strided operand view, the Tensor-Core product and
// its register layouts, tile loads, and the launch arithmetic. Private to kernels/cuda/.
// Start with the Notes below; the CPU reference is cpu/attention_cpu.cpp.
//
// Note [Flash attention]
// Scores S = Q K^T * scale are formed a 64 x 64 tile at a time, in registers. One
// block of 4 warps owns a tile of 64 query rows (the forward, dQ) or 64 key rows
// (dK, dV), 16 rows per warp, and streams the other operand through shared memory in
// 64-row tiles:
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
// the price is that dQ's kernel recomputes S and dP (two extra tile products). A warp's
// 16 rows are all it needs for its softmax, so a row's maximum and sum are shuffles
// between the 4 threads that hold it, never a trip through shared memory. The streamed
// tiles are double-buffered: while the block computes on one, cp.async copies the next
// into the other buffer (load_tile), so the loads overlap the arithmetic. Causal
// masking skips whole key tiles past a query tile's last row; inside a tile masked
// scores are -inf (probability 0).
//
// Note [Tensor Cores in FP32]
// Every tile product is built from the warp instruction mma.sync m16n8k8 with TF32
// inputs and FP32 accumulation: D (16 x 8) += A (16 x 8) B (8 x 8). TF32 keeps 10 of
// FP32's 23 mantissa bits, so in exact mode (MX_FAST_MATMUL unset, as for cuBLAS) each
// operand is split into a TF32 part and the TF32 rounding of what is left, x = big +
// small, and a b is computed as a_small b_big + a_big b_small + a_big b_big: three
// Tensor-Core products whose error is close to FP32's (the dropped a_small b_small is
// about 2^-22 of a b). PyTorch's FP32 memory-efficient attention does the same on these
// GPUs (CUTLASS's OpMultiplyAddFastF32, "3xTF32"). With MX_FAST_MATMUL=tf32 or fp16 one
// TF32 product is made, from operands truncated to TF32 (`split`), as cuBLAS does in
// tf32 mode. In fp16 mode it is TF32 too: these kernels have no FP16 path, while Zero's
// GEMMs do run in FP16 then (Note [FP16 Tensor Cores with FP32 in and out]).
//
// The PTX ISA fixes which elements each thread holds. With g = lane / 4 and
// t = lane % 4: A holds (g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4); B holds
// (k = t, n = g) and (t + 4, g); the accumulator holds (g, 2t), (g, 2t + 1),
// (g + 8, 2t), (g + 8, 2t + 1). P = softmax(S) comes out in the accumulator layout
// but P V needs it as an A operand, where the columns a thread holds are t and t + 4
// instead of 2t and 2t + 1. Rather than exchange values between threads, the product
// sums over the 8 keys of a step in a different order: A's column t stands for key 2t
// and column t + 4 for key 2t + 1, and B's rows are read in the same order (`b_rows`).
// A sum does not depend on its order, so the accumulator of S is reused as A directly.
//
// Layouts: a block only ever reads or writes whole rows of D floats, so no operand has
// to be a contiguous [B, H, T, D] array. Each is a HeadView: element (b, h, t, d) at
// b * batch + h * head + t * row + d, the D stride being 1. The GPT hands the kernels
// its packed c_attn output [B, T, 3C] as it is: q, k and v are the views at column
// offsets 0, C and 2C with strides (T * 3C, D, 3C), and y is written straight into
// [B, T, C] (strides (T * C, D, C)), the heads side by side. The backward writes dQ,
// dK, dV into the three column ranges of one [B, T, 3C] gradient the same way. Only
// lse and delta, which the kernels make and read themselves, are contiguous [B, H, T].
// Tiles go through shared memory with rows padded to D + 4 floats: with that stride the
// fragment reads of a warp fall in 32 different banks. D is padded up to a compiled
// width of 32, 64 or 128 (zeros add nothing), so any D <= 128 works.
//
// Dropout (Note [Attention dropout] in cpu/attention_cpu.cpp): the mask gives each
// 2 x 2 square of queries and keys the four words of one Philox block. Per 8-key step a
// thread's accumulator holds two rows and two neighbouring columns. The tiles a warp
// takes as A (Q and dO; K and V in the dK, dV kernel) are loaded in pair order
// (`pair_row`), which makes the two rows neighbours as well: the four values are one
// square, and one block evaluation draws all four factors. (Drawing each factor on its
// own, ten Philox rounds per value, had cost more instructions than the tile products.)
// The forward sums P into l but multiplies V by P * F; the backward uses P^T * F for dV
// and dP * F in dS.
//
// Order of the blocks: under the causal mask a later query tile sees more keys. The
// forward and dQ kernels take the query tiles last to first, so the longest blocks
// start first and the short ones fill in at the end (dK, dV's first key tiles are
// already its longest).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <type_traits>

#include "zero/kernels/attention_dropout.h"
#include "zero/kernels/cuda/blas_common.cuh"
#include "zero/kernels/cuda/cuda_common.cuh"
#include "zero/kernels/cuda/tf32.cuh"

namespace zero::ops::cuda::flash {

constexpr int kTile = 64;                 // query rows and key rows per tile
constexpr int kWarps = 4;                 // 16 rows of the tile each
constexpr int kThreads = 32 * kWarps;
constexpr int kSteps = kTile / 8;         // 8-key steps (or 8-column tiles) of a 64 tile
template <int kD>
constexpr int kLd = kD + 4;               // row stride of a shared tile, in floats

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
// The Tensor-Core product (Note [Tensor Cores in FP32])

__device__ inline void mma_tf32(float c[4], const uint32_t a[4], const uint32_t b[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// An operand of N registers as TF32 and, in exact mode, the TF32 rounding of what that
// left out (x = big + small). Made once per fragment and reused by every product the
// fragment takes part in. Exact mode rounds big to nearest, which keeps small as small
// as it can be. TF32 mode hands the FP32 bits over as they are: the Tensor Cores read
// the top 19 bits (sign, exponent, 10 mantissa bits), which truncates each operand
// (about twice the error of rounding it, still within a TF32 unit) and saves a
// conversion per operand register, two of the five instructions of each B fragment's
// product.
template <bool kExact, int N>
struct Tf32 {
  uint32_t big[N];
  uint32_t small[kExact ? N : 1];
};

template <bool kExact, int N>
__device__ inline Tf32<kExact, N> split(const float (&x)[N]) {
  Tf32<kExact, N> r;
#pragma unroll
  for (int i = 0; i < N; ++i) {
    if constexpr (kExact) {
      r.big[i] = to_tf32(x[i]);
      r.small[i] = to_tf32(x[i] - __uint_as_float(r.big[i]));
    } else {
      r.big[i] = __float_as_uint(x[i]);
    }
  }
  return r;
}

// c += a b for one 16 x 8 x 8 step, a and b in the register layouts above.
template <bool kExact>
__device__ inline void mma(float c[4], const Tf32<kExact, 4>& a, const Tf32<kExact, 2>& b) {
  if constexpr (kExact) {
    mma_tf32(c, a.small, b.big);  // the small terms first: less of them is lost
    mma_tf32(c, a.big, b.small);
  }
  mma_tf32(c, a.big, b.big);
}

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
// in the order of an accumulator used as A: rows 2t and 2t + 1 (Note [Tensor Cores in
// FP32]), as V is in P V.
template <int kD>
__device__ inline void b_rows(float b[2], const float* tile, int k0, int n0) {
  const int g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
  const float* p = tile + (k0 + 2 * t) * kLd<kD> + n0 + g;
  b[0] = p[0], b[1] = p[kLd<kD>];
}

// An accumulator (g, 2t), (g, 2t + 1), (g + 8, 2t), (g + 8, 2t + 1) as the A operand of
// the next product, columns in b_rows' order.
__device__ inline void acc_as_a(float a[4], const float c[4]) {
  a[0] = c[0], a[1] = c[2], a[2] = c[1], a[3] = c[3];
}

// ---------------------------------------------------------------------------------
// Tiles and masks

// The shared row of tile row r in pair order: in each group of 16 rows, rows 2m and
// 2m + 1 go to shared rows m and m + 8, the rows g and g + 8 of one thread's A operand
// (a_rows). Reading the A rows apart in the shared tile instead would cost bank
// conflicts.
__device__ inline int pair_row(int r) { return (r & ~15) | (r & 1) << 3 | (r & 15) >> 1; }

// Starts copying rows [row0, row0 + 64) of a [rows, D] matrix whose rows are `ld`
// floats apart into a shared tile, with zeros past the last row and past column D.
//
// With `async` (the caller checked that D, ld and the matrix start are multiples of 4
// floats, 16 bytes) each thread issues 16-byte cp.async copies, which run while the
// block computes on the tile before; `wait_tiles` makes them visible. Otherwise the
// threads copy float by float and the tile is ready when this returns. Both paths
// leave the same tile, so the kernels are written once for either.
//
// With `paired` the rows are stored in pair order (`pair_row`): the tile of an operand
// whose rows a warp takes as A, so that a thread's two A rows are neighbours.
template <int kD>
__device__ inline void load_tile(float* tile, const float* src, int64_t ld, int row0, int rows,
                                 int D, bool async, bool paired) {
  if (async) {
    for (int c = threadIdx.x; c < kTile * kD / 4; c += kThreads) {
      const int r = c / (kD / 4), d = c % (kD / 4) * 4;
      const bool inside = row0 + r < rows && d < D;
      const float* from = inside ? src + (row0 + r) * ld + d : src;
      float* dst = tile + (paired ? pair_row(r) : r) * kLd<kD> + d;
      const unsigned to = static_cast<unsigned>(__cvta_generic_to_shared(dst));
      // A source size of 0 copies nothing and fills the 16 bytes with zeros.
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(to), "l"(from),
                   "r"(inside ? 16 : 0));
    }
    return;
  }
  for (int e = threadIdx.x; e < kTile * kD; e += kThreads) {
    const int r = e / kD, d = e % kD;
    tile[(paired ? pair_row(r) : r) * kLd<kD> + d] =
        row0 + r < rows && d < D ? src[(row0 + r) * ld + d] : 0.0f;
  }
}

// Closes the group of copies issued since the last call (cp.async.commit_group).
__device__ inline void commit_tiles() { asm volatile("cp.async.commit_group;\n" ::); }

// Waits until at most `kPending` groups of this thread's copies are still in flight;
// a __syncthreads() after it makes every thread's copies visible to the block.
template <int kPending>
__device__ inline void wait_tiles() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

// One step of the key loop of the forward and dQ kernels: starts copying key and value
// tile k_next of the [Tk, D] matrices kp and vp (rows k_row and v_row floats apart) into
// the idle buffers ks_next, vs_next (when k_next < k_end), then waits for the copies
// issued before, which fill the buffers about to be used. The caller's __syncthreads()
// after this makes them visible to every warp.
template <int kD>
__device__ inline void next_key_tiles(float* ks_next, float* vs_next, const float* kp,
                                      int64_t k_row, const float* vp, int64_t v_row, int k_next,
                                      int k_end, int Tk, int D, bool async) {
  if (k_next < k_end) {
    load_tile<kD>(ks_next, kp, k_row, k_next, Tk, D, async, false);
    load_tile<kD>(vs_next, vp, v_row, k_next, Tk, D, async, false);
  }
  commit_tiles();
  wait_tiles<1>();
}

// Writes a warp's 16 x kD accumulators acc[n] (columns 8n..) times `scale` to rows
// r0, r0 + 1, ... of a [rows, D] matrix whose rows are `ld` floats apart. The
// accumulator rows are in pair order: thread (g, t) holds rows r0 + 2g and r0 + 2g + 1.
template <int kD>
__device__ inline void store_acc(float* dst, int64_t ld, const float (*acc)[4], float scale,
                                 int r0, int rows, int D) {
  const int g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
#pragma unroll
  for (int n = 0; n < kD / 8; ++n) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int r = r0 + 2 * g + e / 2, d = 8 * n + 2 * t + e % 2;
      if (r < rows && d < D) dst[r * ld + d] = acc[n][e] * scale;
    }
  }
}

// Whether query i may see key j; the causal mask is aligned to the end of the keys.
__device__ inline bool visible(int i, int j, int Tq, int Tk, bool causal) {
  return i < Tq && j < Tk && (!causal || j <= i + (Tk - Tq));
}

// ---------------------------------------------------------------------------------
// Launch arithmetic

inline int tiles(int64_t rows) { return static_cast<int>((rows + kTile - 1) / kTile); }

// Whether the tiles of these operands can be copied 16 bytes at a time (load_tile).
inline bool async_ok(int64_t D, std::initializer_list<const Tensor*> operands) {
  if (D % 4 != 0) return false;
  for (const Tensor* t : operands) {
    if (reinterpret_cast<uintptr_t>(t->data()) % 16 != 0) return false;
    for (int d = 0; d < 3; ++d) {
      if (t->stride(d) % 4 != 0) return false;
    }
  }
  return true;
}

// The HeadView of a [B, H, T, D] tensor whose D stride is 1 (checked by the dispatch).
inline In in_view(const Tensor& t) {
  return {t.data_ptr<float>(), t.stride(0), t.stride(1), t.stride(2)};
}
inline Out out_view(const Tensor& t) {
  return {t.data_ptr<float>(), t.stride(0), t.stride(1), t.stride(2)};
}

// Shared bytes of a kernel holding `tiles` (64, kD + 4) tiles and `vectors` 64-float
// vectors.
template <int kD>
inline size_t smem_bytes(int tiles, int vectors) {
  return sizeof(float) * (tiles * kTile * kLd<kD> + vectors * kTile);
}

// Exact FP32 (3xTF32) unless MX_FAST_MATMUL asks for Tensor-Core speed.
inline bool exact_mode() { return compute_type() == CUBLAS_COMPUTE_32F; }

// Calls f(width, exact) with std::integral_constant arguments: the compiled width that
// fits D and whether the precision mode is exact.
template <typename F>
void dispatch(int64_t D, F&& f) {
  const bool exact = exact_mode();
  const auto with = [&](auto width) {
    if (exact) return f(width, std::true_type{});
    f(width, std::false_type{});
  };
  if (D <= 32) return with(std::integral_constant<int, 32>{});
  if (D <= 64) return with(std::integral_constant<int, 64>{});
  with(std::integral_constant<int, 128>{});
}

}  // namespace zero::ops::cuda::flash
