// The fast attention kernels' shared code (attention.cu: forward; attention_backward.cu:
// the backward), private to kernels/cuda/. Read attention_reference.cu first: the same
// computation, one thread per row, in plain FP32. Then Note [Flash attention] below, and
// the parts it is built from, each with its Note:
//
//   attention_views.cuh            the operands as strided views of the GPT's packed qkv
//   attention_tiles.cuh            64-row tiles in shared memory, loaded with cp.async
//   attention_tf32.cuh             the tile product: FP32 FMAs, 3xTF32, one TF32 mma or
//                                  one 16-bit mma
//   attention_fragments.cuh        which thread holds which element; acc += P B
//   attention_softmax.cuh          the online softmax in registers; the causal mask
//   attention_dropout_squares.cuh  one Philox block per 2 x 2 square of probabilities
//   attention_row_passes.cuh       the backward's passes over rows: delta, dQ's rounding
//
// The CPU reference is cpu/attention_cpu.cpp; this file adds the launch arithmetic. The
// exact-FP32 kernels for heads of up to 64 take another layout, register tiles on the
// FP32 units (Note [FP32 attention on register tiles] in attention_backward_simt.cu,
// attention_forward_simt.cu).
//
// Note [Flash attention]
// Scores S = Q K^T * scale are formed a 64 x 64 tile at a time, in registers. One
// block of 4 warps owns a tile of 64 query rows (the forward) or 64 key rows (the
// backward), 16 rows per warp, and streams the other operand through shared memory in
// 64-row tiles (Note [Attention tiles in shared memory]). The 16-bit forward owns 128
// query rows, 32 a warp (Note [Two row blocks a warp] in attention.cu):
//
//   forward   block (query tile i):  for each key tile j:  S = Q_i K_j^T
//             m_new = max(m, rowmax S), P = exp(S - m_new), l = l e^(m - m_new) + rowsum P,
//             O = O e^(m - m_new) + P V_j;   at the end O /= l, lse = m + log l
//   backward  block (key tile j):    for each query tile i:  P^T = exp(K_j Q_i^T - lse_i),
//             dP^T = V_j dO_i^T, dS^T = P^T (dP^T - delta_i), dV += P^T dO_i, dK += dS^T Q_i,
//             dQ_i += dS_ij K_j (added into an FP32 sum by atomics)
//
// where delta_i = rowsum(dO_i * O_i) (a small kernel first). dK and dV have exactly
// one writer block each and are deterministic; dQ_i gets a share from every key tile,
// in an order that varies (Note [dQ by atomic additions] in attention_backward.cu). A
// warp's 16 rows are all it needs for its softmax (Note [Online softmax in registers]). Causal
// masking skips whole key tiles past a query tile's last row; inside a tile masked
// scores are -inf (probability 0). Every product runs on the Tensor Cores (Note [Tensor
// Cores in FP32], Note [Tensor-Core fragments]).
//
// Layouts: no operand has to be contiguous; the kernels read the GPT's packed qkv and
// write its y in place (Note [Attention operands as views]).
//
// Dropout: the mask is recomputed from Philox, never stored, a 2 x 2 square of
// probabilities per Philox block (Note [Attention dropout squares]).
//
// Order of the blocks: under the causal mask a later query tile sees more keys. The
// forward takes the query tiles last to first, so the longest blocks start first and
// the short ones fill in at the end (the backward's first key tiles are already its
// longest).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <type_traits>

#include "zero/kernels/attention_dropout.h"
#include "zero/kernels/cuda/attention_dropout_squares.cuh"
#include "zero/kernels/cuda/attention_fragments.cuh"
#include "zero/kernels/cuda/attention_softmax.cuh"
#include "zero/kernels/cuda/attention_tf32.cuh"
#include "zero/kernels/cuda/attention_tiles.cuh"
#include "zero/kernels/cuda/attention_views.cuh"
#include "zero/kernels/cuda/cuda_common.cuh"
#include "zero/kernels/precision.h"

namespace zero::ops::cuda::flash {

// ---------------------------------------------------------------------------------
// Launch arithmetic

inline int tiles(int64_t rows) { return static_cast<int>((rows + kTile - 1) / kTile); }

// Whether the tiles of these operands can be copied 16 bytes at a time (load_tile): D,
// every stride and every start a multiple of 16 bytes. With `bytes`, whether they can
// be moved that many bytes at a time.
inline bool vectors_ok(int64_t D, std::initializer_list<const Tensor*> operands,
                       int64_t bytes = 16) {
  for (const Tensor* t : operands) {
    const int64_t lanes = bytes / static_cast<int64_t>(dtype_size(t->dtype()));
    if (D % lanes != 0 || reinterpret_cast<uintptr_t>(t->data()) % 16 != 0) return false;
    for (int d = 0; d < 3; ++d) {
      if (t->stride(d) % lanes != 0) return false;
    }
  }
  return true;
}

// The element type of the operands a kernel instance reads and writes, and of its tiles
// in shared memory: BF16 and F16 for their own Arith (the 16-bit products), float for
// the FP32 modes (Note [Attention tiles in shared memory]).
template <Arith kA>
using Element = std::conditional_t<kA == Arith::kBf16, bf16,
                                   std::conditional_t<kA == Arith::kF16, f16, float>>;
template <Arith kA>
using Src = HeadView<const Element<kA>>;  // q, k, v, the output and dO, read
template <Arith kA>
using Dst = HeadView<Element<kA>>;        // the output and the gradients, written

// Shared bytes of a kernel of arithmetic kA holding `tiles` (64, kLd) tiles of its
// elements and, after them, `vectors` 64-float vectors.
template <int kD, Arith kA>
inline size_t smem_bytes(int tiles, int vectors) {
  return sizeof(Element<kA>) * tiles * kTile * kLd<kD, Element<kA>> +
         sizeof(float) * vectors * kTile;
}

// The kernel's dynamic shared memory as tiles of E (16-byte aligned).
template <typename E>
__device__ inline E* shared_tiles() {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  return reinterpret_cast<E*>(smem_raw);
}


// Calls f(width, arith) with std::integral_constant arguments: the compiled width that
// fits D and the Arith of the products: the operands' own 16-bit format when `operands`
// (their dtype) is BF16 or F16, else the precision mode's (Note [Tensor Cores in FP32]).
template <typename F>
void dispatch(int64_t D, DataType operands, F&& f) {
  const auto with = [&](auto width) {
    if (operands == DataType::BF16) return f(width, std::integral_constant<Arith, Arith::kBf16>{});
    if (operands == DataType::F16) return f(width, std::integral_constant<Arith, Arith::kF16>{});
    switch (matmul_precision()) {
      case MatmulPrecision::kIeee:
        return f(width, std::integral_constant<Arith, Arith::kFp32>{});
      case MatmulPrecision::kSplitTf32:
        return f(width, std::integral_constant<Arith, Arith::kSplitTf32>{});
      default: return f(width, std::integral_constant<Arith, Arith::kTf32>{});
    }
  };
  if (D <= 32) return with(std::integral_constant<int, 32>{});
  if (D <= 64) return with(std::integral_constant<int, 64>{});
  with(std::integral_constant<int, 128>{});
}

}  // namespace zero::ops::cuda::flash
