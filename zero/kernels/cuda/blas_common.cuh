// What blas.cu (cuBLAS matmul) and blas_lt.cu (cuBLASLt Linear) share: one cuBLAS
// handle and workspace per GPU, and the compute mode MX_FAST_MATMUL selects. Both are
// defined in blas.cu. A cuBLAS handle doubles as a cuBLASLt handle (cuBLAS documents
// the cast), so the two libraries share the handle and, on one stream, the workspace.
#pragma once

#include <cublas_v2.h>

#include <cstddef>

namespace zero::ops::cuda {

// Bytes of each GPU's BLAS workspace: cuBLAS's recommendation for Hopper.
constexpr size_t kBlasWorkspaceBytes = 32u << 20;

// The handle of GPU `device` (made on first use), bound to the current stream.
cublasHandle_t blas_handle(int device);
// That GPU's workspace of kBlasWorkspaceBytes, for cublasLtMatmul.
void* blas_workspace(int device);
// MX_FAST_MATMUL: unset or 0 -> exact FP32; 1 or fp16 -> FP16 Tensor Cores inside
// (FP32 in and out); tf32 -> TF32 Tensor Cores. Read once; set_matmul_mode_override
// (cuda_ops.h) replaces it while set.
cublasComputeType_t compute_type();

}  // namespace zero::ops::cuda
