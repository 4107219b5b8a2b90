// ZERO_CUDA_CHECK / ZERO_CUBLAS_CHECK / ZERO_CUDA_LAUNCH_CHECK: every CUDA call's
// status becomes a zero::CudaError naming the call, file and line. Private to .cu files.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "zero/core/error.h"

namespace zero::detail {

[[noreturn]] inline void throw_cuda_error(const char* call, const char* what, const char* file,
                                          int line) {
  throw CudaError(str_cat("CUDA error: ", what, " in ", call, " at ", file, ":", line,
                          " (errors from kernels are reported asynchronously; run with "
                          "CUDA_LAUNCH_BLOCKING=1 to find the launch that failed)"));
}

}  // namespace zero::detail

/// Throws zero::CudaError if a CUDA runtime call fails.
#define ZERO_CUDA_CHECK(call)                                                             \
  do {                                                                                    \
    const cudaError_t zero_status_ = (call);                                              \
    if (zero_status_ != cudaSuccess) {                                                    \
      ::zero::detail::throw_cuda_error(#call, cudaGetErrorString(zero_status_), __FILE__, \
                                       __LINE__);                                         \
    }                                                                                     \
  } while (0)

/// Throws zero::CudaError if a cuBLAS / cuBLASLt call fails.
#define ZERO_CUBLAS_CHECK(call)                                                             \
  do {                                                                                      \
    const cublasStatus_t zero_status_ = (call);                                             \
    if (zero_status_ != CUBLAS_STATUS_SUCCESS) {                                            \
      ::zero::detail::throw_cuda_error(#call, cublasGetStatusString(zero_status_), __FILE__, \
                                       __LINE__);                                           \
    }                                                                                       \
  } while (0)

/// Checks the launch just made (bad configuration, missing kernel image); put it on
/// the line after every <<<...>>>. It does not wait for the kernel.
#define ZERO_CUDA_LAUNCH_CHECK() ZERO_CUDA_CHECK(cudaGetLastError())
