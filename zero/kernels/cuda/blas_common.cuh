// What blas.cu (cuBLAS matmul), blas_lt.cu (cuBLASLt Linear) and gelu_epilogue.cu
// (the MLP's GeLU in cuBLASLt's epilogues) share: one cuBLAS handle and workspace per
// GPU and the compute mode MX_FAST_MATMUL selects, defined in blas.cu, and the cuBLASLt
// calls of blas_lt.cu. A cuBLAS handle doubles as a cuBLASLt handle (cuBLAS documents
// the cast), so the two libraries share the handle and, on one stream, the workspace.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>

#include <cstddef>
#include <cstdint>

#include "zero/core/tensor.h"

namespace zero::ops::cuda {

// The CUDA library's name for a float dtype: CUDA_R_32F, CUDA_R_16BF or CUDA_R_16F.
inline cudaDataType_t cuda_dtype(DataType dtype) {
  return dtype == DataType::BF16 ? CUDA_R_16BF : dtype == DataType::F16 ? CUDA_R_16F : CUDA_R_32F;
}

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

// Column-major D (m x n, ld m) = op(A) op(B) through cuBLASLt, in the compute mode
// MX_FAST_MATMUL selects, with `epilogue` reading or writing `bias` and `aux` (an m x n
// matrix, ld m, in D's type: the GeLU epilogues' pre-activation). A is stored m x k (or
// k x m when trans_a), B k x n (or n x k when trans_b), both packed. In 3xtf32 mode a
// large GEMM runs as split TF32 (Note [FP32 GEMMs on TF32 Tensor Cores]), in fp16 mode
// on FP16 copies of A and B (Note [FP16 Tensor Cores with FP32 in and out]; BGRADB then
// sums the FP16 copy of B). Split TF32 would sum B's three pieces under BGRADB and takes
// no `aux`, so a caller with either must first check split_tf32_pays and do without the
// epilogue when it is true. Defined in blas_lt.cu; returns false, having done nothing,
// when cuBLASLt has no algorithm (an epilogue unsupported for the compute type, a
// misaligned pointer, an aux whose m is not a multiple of 8). A non-null C (m x n, ld
// m, not D) is added: D = op(A) op(B) + C (Note [The residual as the GEMM's C]); a large
// GEMM in 3xtf32 mode then returns false.
bool lt_matmul(int device, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
               const float* A, const float* B, float* D, cublasLtEpilogue_t epilogue,
               float* bias, float* aux = nullptr, const float* C = nullptr);
// lt_matmul for the tensors of a BF16 or F16 Linear: A and B of one 16-bit dtype, D of
// theirs or FP32, the bias (may be undefined) and aux (may be undefined, else D's
// dtype) likewise, and C (may be undefined, else D's dtype and shape) added as in
// lt_matmul; FP32 accumulation and scale. Defined in blas_lt.cu.
bool lt_matmul_16bit(int device, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                     const Tensor& A, const Tensor& B, const Tensor& D,
                     cublasLtEpilogue_t epilogue, const Tensor& bias,
                     const Tensor& aux = Tensor(), const Tensor& C = Tensor());

}  // namespace zero::ops::cuda
