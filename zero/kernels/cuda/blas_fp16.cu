// The operand conversion behind MX_FAST_MATMUL=fp16, used by blas.cu and blas_lt.cu.
//
// Note [FP16 Tensor Cores with FP32 in and out]
// cuBLAS has a compute type for this mode, CUBLAS_COMPUTE_32F_FAST_16F, but it only
// *allows* the library to down-convert FP32 operands to FP16; it does not require it.
// On an H200 it behaved exactly as CUBLAS_COMPUTE_32F_FAST_TF32: chapter 07 measured
// the same times and the same errors, to the last printed digit, so cuBLAS chose its
// TF32 kernels for both. So Zero converts the operands itself: one pass writes each
// operand as FP16 (rounded to nearest), and cuBLAS multiplies those CUDA_R_16F operands
// into the FP32 output with FP32 accumulation (CUBLAS_COMPUTE_32F), which it runs on
// the FP16 Tensor Cores.
//
// The pass reads 4 and writes 2 bytes per operand element: for a 4096^3 GEMM about
// 200 MB, some 50 us at the H200's bandwidth, next to a GEMM of about 200 us at the
// FP16 rate. FP16 keeps as many significant bits as TF32 (11) but only 5 exponent
// bits: magnitudes above 65504 become infinite, and those below about 6e-5 lose bits,
// down to zero at 6e-8, where TF32 has FP32's range. Mixed-precision training scales
// its loss for that reason; Zero does not, so small gradients suffer in this mode.
#include <cuda_fp16.h>

#include "zero/kernels/cuda/blas_common.cuh"
#include "zero/kernels/cuda/cuda_common.cuh"

namespace zero::ops::cuda {
namespace {

// Element i of the output is x[i] rounded to FP16. Each thread converts four
// consecutive elements, with one 16-byte load and one 8-byte store where x allows.
__global__ void to_half_kernel(const float* __restrict__ x, int64_t n, __half* __restrict__ out,
                               bool vec4) {
  const int64_t i = 4 * (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x);
  if (i >= n) return;
  if (vec4 && i + 4 <= n) {
    const float4 v = *reinterpret_cast<const float4*>(x + i);
    __half2 h[2] = {__floats2half2_rn(v.x, v.y), __floats2half2_rn(v.z, v.w)};
    *reinterpret_cast<uint2*>(out + i) = *reinterpret_cast<const uint2*>(h);
    return;
  }
  for (int64_t j = i; j < n && j < i + 4; ++j) out[j] = __float2half_rn(x[j]);
}

}  // namespace

Tensor to_half(const float* x, int64_t count, int device) {
  // Zero has no FP16 tensors, so the buffer is FP32 storage of half as many elements,
  // taken from (and given back to) the caching allocator like any other temporary.
  Tensor out = Tensor::Empty({(count + 1) / 2}, TensorOption().OnDevice(Device::Cuda(device)));
  auto* h = static_cast<__half*>(out.data());
  const bool vec4 = reinterpret_cast<uintptr_t>(x) % 16 == 0;
  to_half_kernel<<<grid_for(count, 4), kBlock, 0, current_stream()>>>(x, count, h, vec4);
  ZERO_CUDA_CHECK(cudaGetLastError());
  return out;
}

}  // namespace zero::ops::cuda
