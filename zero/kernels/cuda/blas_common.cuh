// What blas.cu (cuBLAS matmul) and blas_lt.cu (cuBLASLt Linear) share: one cuBLAS
// handle and workspace per GPU, and the compute mode MX_FAST_MATMUL selects. Both are
// defined in blas.cu. A cuBLAS handle doubles as a cuBLASLt handle (cuBLAS documents
// the cast), so the two libraries share the handle and, on one stream, the workspace.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>

#include <cstddef>
#include <cstdint>

#include "zero/core/tensor.h"

namespace zero::ops::cuda {

// Bytes of each GPU's BLAS workspace: cuBLAS's recommendation for Hopper.
constexpr size_t kBlasWorkspaceBytes = 32u << 20;

// The handle of GPU `device` (made on first use), bound to the current stream.
cublasHandle_t blas_handle(int device);
// That GPU's workspace of kBlasWorkspaceBytes, for cublasLtMatmul.
void* blas_workspace(int device);
// The cuBLAS compute type of matmul_precision() (precision.h): CUBLAS_COMPUTE_32F for
// ieee and 3xtf32 (whose large GEMMs go to split_tf32_gemm instead), FAST_TF32 for
// tf32, FAST_16F for fp16. In fp16 mode no GEMM passes this compute type to cuBLAS
// (see fp16_mode); it only names the mode.
cublasComputeType_t compute_type();
// True for MX_FAST_MATMUL=1 or fp16: GEMMs convert their operands with to_half and run
// on FP16 Tensor Cores with FP32 accumulation and output (Note [FP16 Tensor Cores with
// FP32 in and out], blas_fp16.cu).
bool fp16_mode();
// The `count` floats at x on GPU `device`, rounded to FP16 into a new buffer (FP32
// storage of (count + 1) / 2 elements), queued on the current stream.
Tensor to_half(const float* x, int64_t count, int device);
// True for MX_FAST_MATMUL=3xtf32: large FP32 GEMMs then run as split TF32 (Note [FP32
// GEMMs on TF32 Tensor Cores], split_tf32.cuh).
bool split_tf32_mode();

// Column-major D (m x n, ld m) = op(A) op(B) + beta D as split TF32 through cuBLASLt,
// with `epilogue` (not BGRADB) reading `bias`; A and B column-major with leading
// dimensions lda and ldb, transposed when trans_a / trans_b. Defined in blas_lt.cu.
// Returns false, having written nothing, when cuBLASLt has no algorithm for it.
bool split_tf32_gemm(int device, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                     const float* A, int64_t lda, const float* B, int64_t ldb, float* D,
                     cublasLtEpilogue_t epilogue, float* bias, float beta = 0.0f);

}  // namespace zero::ops::cuda
