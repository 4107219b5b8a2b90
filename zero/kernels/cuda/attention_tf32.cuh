// The one product instruction of the fused attention, mma.sync m16n8k8 on TF32, the
// operand split that makes three of them nearly as exact as FP32 ("3xTF32"), the same
// product on FP32 fused multiply-adds, and mma.sync m16n8k16 on BF16 or FP16 Tensor
// Cores. Part of the fast kernels (attention.cuh lists the parts); which thread holds
// which element of the operands is the next part, attention_fragments.cuh.
//
// Note [Tensor Cores in FP32]
// Every tile product is a warp-wide step D (16 x 8) += A (16 x 8) B (8 x 8) on operands
// in the register layouts of mma.sync m16n8k8 (Note [Tensor-Core fragments]). How the
// step multiplies is the precision mode's choice (precision.h), compiled in as `Arith`:
//   kFp32      (ieee, the default) FP32 fused multiply-adds. Each thread computes its
//              own 4 outputs, so it first gathers the two rows of A and the two columns
//              of B they need from the threads that hold them (`__shfl_sync`, 16 per
//              operand), then makes 8 FMAs per output in order: IEEE FP32, as PyTorch's
//              FP32 attention on the ordinary FP32 units. The gathers cost more than the
//              FMAs (a warp shuffles at a quarter of its FMA rate), about half the FP32
//              peak.
//   kSplitTf32 (3xtf32) each operand is split into a TF32 part and the TF32 rounding of
//              what is left, x = big + small, and a b is computed as a_small b_big +
//              a_big b_small + a_big b_big: three Tensor-Core products (the dropped
//              a_small b_small is about 2^-22 of a b). The Tensor Cores' accumulation is
//              less careful than an FMA's, so over a GPT step the gradients end several
//              times further from a float64 reference than FP32's (tools/torch_reference.py
//              measures it); CUTLASS calls this OpMultiplyAddFastF32.
//   kTf32      (tf32, and fp16 on FP32 operands) one TF32 product, from operands
//              truncated to TF32 (`operand`), as cuBLAS does in tf32 mode.
//   kBf16,     (BF16 or F16 operands, whatever the mode) 16-bit Tensor-Core products
//   kF16       with FP32 accumulation, 16 long (Note [16-bit fragments]): two of the
//              8-long steps above in one instruction. Exact for Q, K, V and dO, which
//              are 16-bit values; P and dS are rounded to 16 bits first.
// The kernels are templates on Arith, so each mode is compiled with only the
// instructions it runs; `dispatch` in attention.cuh picks the instance at launch.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "zero/kernels/cuda/tf32.cuh"

namespace zero::ops::cuda::flash {

// c += a b for one 16 x 8 x 8 step, on TF32 operands already in registers.
__device__ inline void mma_tf32(float c[4], const uint32_t a[4], const uint32_t b[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// c += a b for one 16 x 8 x 16 step on 16-bit operands (two to a register), FP32
// accumulation. kBf16 selects BF16, otherwise FP16.
template <bool kBf16>
__device__ inline void mma_16bit(float c[4], const uint32_t a[4], const uint32_t b[2]) {
  if constexpr (kBf16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
}

// The arithmetic of the tile products (Note [Tensor Cores in FP32]).
enum class Arith { kTf32, kSplitTf32, kFp32, kBf16, kF16 };

template <Arith kA>
constexpr bool kSixteenBit = kA == Arith::kBf16 || kA == Arith::kF16;

// The sum length of one product: 8 for the FP32 and TF32 arithmetics, 16 for 16-bit.
template <Arith kA>
constexpr int kK = kSixteenBit<kA> ? 16 : 8;

// Note [16-bit fragments]
// On BF16 or FP16 operands each product is mma.sync m16n8k16: D (16 x 8) += A (16 x 16)
// B (16 x 8), two elements to a register, the lower k in the low half. With g = lane / 4
// and t = lane % 4, A's four registers hold columns (2t, 2t + 1) of rows g, g + 8 and
// then columns (2t + 8, 2t + 9) of the same rows; B's two hold rows (2t, 2t + 1) and
// (2t + 8, 2t + 9) of column g. The tiles hold the operands' own 16-bit values
// (attention_tiles.cuh), so each register of A and of a B read along a tile's rows
// (K in Q K^T) holds two neighbours of one row: ldmatrix reads four such 8 x 8 blocks
// (an A, or the Bs of two column tiles) in one instruction. The accumulator of a
// 16 x 8 x 16 step has the layout of the 16 x 8 x 8 one (Note [Tensor-Core
// fragments]), and two neighbouring accumulators, 16 keys, are exactly an A operand: P
// is packed to 16 bits in place, with no permutation at all. The B of P V runs down a
// tile's columns (rows of V are keys); ldmatrix with .trans reads it, four 8 x 8 blocks
// in one instruction.
template <int N>
struct Packed16 {
  uint32_t r[N];
};

// An operand of N registers as TF32 and, for kSplitTf32, the TF32 rounding of what that
// left out (x = big + small). Made once per fragment and reused by every product the
// fragment takes part in. The split rounds big to nearest, which keeps small as small
// as it can be. kTf32 hands the FP32 bits over as they are: the Tensor Cores read the
// top 19 bits (sign, exponent, 10 mantissa bits), which truncates each operand (about
// twice the error of rounding it, still within a TF32 unit) and saves a conversion per
// operand register, two of the five instructions of each B fragment's product.
template <bool kSplit, int N>
struct Tf32 {
  uint32_t big[N];
  uint32_t small[kSplit ? N : 1];
};

// For kFp32, what one thread's outputs need: of an A fragment (N = 4), rows g and g + 8
// over the 8 columns; of a B fragment (N = 2), columns 2t and 2t + 1 over the 8 rows.
template <int N>
struct Fp32Lines {
  float line[2][8];
};

template <Arith kA, int N>
using Operand = std::conditional_t<
    kA == Arith::kFp32, Fp32Lines<N>,
    std::conditional_t<kSixteenBit<kA>, Packed16<N>, Tf32<kA == Arith::kSplitTf32, N>>>;

// lo and hi rounded to nearest (ties to even) into BF16 or FP16, lo in the low half.
template <Arith kA>
__device__ inline uint32_t pack16(float lo, float hi) {
  if constexpr (kA == Arith::kBf16) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
  } else {
    const __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
  }
}

// Fragment registers x, laid out as in Note [Tensor-Core fragments], as an operand of
// kA's products. Every thread of the warp must call it together (kFp32 shuffles). The
// 16-bit operands come from their tiles directly (attention_fragments.cuh).
template <Arith kA, int N>
__device__ inline Operand<kA, N> operand(const float (&x)[N]) {
  static_assert(N == 4 || N == 2, "an A fragment has 4 registers, a B fragment 2");
  static_assert(!kSixteenBit<kA>, "16-bit operands are read from 16-bit tiles");
  Operand<kA, N> r;
  if constexpr (kA == Arith::kFp32) {
    const int lane = threadIdx.x % 32, t = lane % 4;
#pragma unroll
    for (int c = 0; c < 2; ++c) {
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        if constexpr (N == 4) {  // A(g + 8c, k) is x[c] of thread (g, k); A(g + 8c, k + 4) x[c + 2]
          r.line[c][k] = __shfl_sync(0xffffffffu, x[c], (lane & ~3) + k);
          r.line[c][k + 4] = __shfl_sync(0xffffffffu, x[c + 2], (lane & ~3) + k);
        } else {  // B(k, 2t + c) is x[0] of thread (2t + c, k); B(k + 4, 2t + c) x[1]
          r.line[c][k] = __shfl_sync(0xffffffffu, x[0], 4 * (2 * t + c) + k);
          r.line[c][k + 4] = __shfl_sync(0xffffffffu, x[1], 4 * (2 * t + c) + k);
        }
      }
    }
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) {
      if constexpr (kA == Arith::kSplitTf32) {
        r.big[i] = to_tf32(x[i]);
        r.small[i] = to_tf32(x[i] - __uint_as_float(r.big[i]));
      } else {
        r.big[i] = __float_as_uint(x[i]);
      }
    }
  }
  return r;
}

// c += a b for one 16 x 8 x kK step; c holds (g, 2t), (g, 2t + 1), (g + 8, 2t),
// (g + 8, 2t + 1).
template <Arith kA>
__device__ inline void mma(float c[4], const Operand<kA, 4>& a, const Operand<kA, 2>& b) {
  if constexpr (kA == Arith::kFp32) {
#pragma unroll
    for (int k = 0; k < 8; ++k) {
#pragma unroll
      for (int e = 0; e < 4; ++e) c[e] = fmaf(a.line[e / 2][k], b.line[e % 2][k], c[e]);
    }
  } else if constexpr (kSixteenBit<kA>) {
    mma_16bit<kA == Arith::kBf16>(c, a.r, b.r);
  } else {
    if constexpr (kA == Arith::kSplitTf32) {
      mma_tf32(c, a.small, b.big);  // the small terms first: less of them is lost
      mma_tf32(c, a.big, b.small);
    }
    mma_tf32(c, a.big, b.big);
  }
}

// Note [Exponentials in base 2]
// The SFU's exponential is 2^x (ex2.approx); __expf(x) is that of x log2 e, so every
// probability exp(s scale - m) took a multiply by the scale, a subtraction, a multiply
// by log2 e and the ex2. The fast modes (kTf32 and the 16-bit products) keep their
// exponents in base 2 instead: the running maximum m and the backward's lse are in units
// of log2 e, and a raw score s becomes a probability with one fma and the ex2,
// 2^(s * scale log2 e - m). Only the forward's lse comes out natural, m ln 2 + ln l. The
// exact modes keep base e (expf for kFp32, __expf for kSplitTf32 as before): scaling by
// log2 e rounds once more, which their 1e-5 agreement with the CPU would notice.
template <Arith kA>
constexpr bool kBase2 = kA == Arith::kTf32 || kSixteenBit<kA>;

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// What multiplies a raw score q . k to make it an exponent of kA's base: the softmax
// scale, times log2 e in base 2.
template <Arith kA>
__host__ __device__ constexpr float exponent_scale(float scale) {
  return kBase2<kA> ? scale * kLog2e : scale;
}

// The exponential in kA's base: 2^x on the SFU for kBase2, else e^x (the accurate expf
// for kFp32, the fast __expf for kSplitTf32, a few ulps off, which its products dwarf).
template <Arith kA>
__device__ inline float exp_of(float x) {
  if constexpr (kA == Arith::kFp32) {
    return expf(x);
  } else if constexpr (kBase2<kA>) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
  } else {
    return __expf(x);
  }
}

// A natural logsumexp as an exponent of kA's base, and back: the row's maximum m (in
// kA's base) and sum l = sum of exp_of(s - m) as the natural log-sum-exp.
template <Arith kA>
__device__ inline float exponent_of_lse(float lse) {
  return kBase2<kA> ? lse * kLog2e : lse;
}
template <Arith kA>
__device__ inline float natural_lse(float m, float l) {
  return kBase2<kA> ? (m + log2f(l)) * kLn2 : m + logf(l);
}

}  // namespace zero::ops::cuda::flash
