// The one Tensor-Core instruction of the fused attention, mma.sync m16n8k8 on TF32, and
// the operand split that makes three of them as exact as FP32 ("3xTF32"). Part of the
// fast kernels (attention.cuh lists the parts); which thread holds which element of the
// operands is the next part, attention_fragments.cuh.
//
// Note [Tensor Cores in FP32]
// Every tile product is built from the warp instruction mma.sync m16n8k8 with TF32
// inputs and FP32 accumulation: D (16 x 8) += A (16 x 8) B (8 x 8). TF32 keeps 10 of
// FP32's 23 mantissa bits, so in exact mode (MX_FAST_MATMUL unset, as for cuBLAS) each
// operand is split into a TF32 part and the TF32 rounding of what is left, x = big +
// small, and a b is computed as a_small b_big + a_big b_small + a_big b_big: three
// Tensor-Core products whose error is close to FP32's (the dropped a_small b_small is
// about 2^-22 of a b). PyTorch's FP32 memory-efficient attention does the same on these
// GPUs (CUTLASS's OpMultiplyAddFastF32, "3xTF32"); Zero's large FP32 GEMMs split their
// operands the same way (Note [FP32 GEMMs on TF32 Tensor Cores] in split_tf32.cuh). With
// MX_FAST_MATMUL=tf32 or fp16 one TF32 product is made, from operands truncated to TF32
// (`split`), as cuBLAS does in tf32 mode. In fp16 mode it is TF32 too: these kernels
// have no FP16 path, while Zero's GEMMs do run in FP16 then (Note [FP16 Tensor Cores
// with FP32 in and out]).
//
// The kernels are templates on kExact, so each mode is compiled with only the
// instructions it runs; `dispatch` in attention.cuh picks the instance at launch.
#pragma once

#include <cstdint>

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

// c += a b for one 16 x 8 x 8 step, a and b in the register layouts of the fragments
// (Note [Tensor-Core fragments] in attention_fragments.cuh).
template <bool kExact>
__device__ inline void mma(float c[4], const Tf32<kExact, 4>& a, const Tf32<kExact, 2>& b) {
  if constexpr (kExact) {
    mma_tf32(c, a.small, b.big);  // the small terms first: less of them is lost
    mma_tf32(c, a.big, b.small);
  }
  mma_tf32(c, a.big, b.big);
}

}  // namespace zero::ops::cuda::flash
