// Rounding an FP32 value to TF32, the input format of the Tensor Cores' FP32 path:
// FP32's 8-bit exponent and the top 10 of its 23 mantissa bits. Shared by the fused
// attention (attention_tf32.cuh) and the split-TF32 GEMM operands (split_tf32.cu).
#pragma once

#include <cstdint>

namespace zero::ops::cuda {

// x rounded to the nearest TF32 value (ties away from zero), as the bits of an FP32
// whose low 13 mantissa bits are zero. Needs sm_80 or newer.
__device__ inline uint32_t to_tf32(float x) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}

}  // namespace zero::ops::cuda
