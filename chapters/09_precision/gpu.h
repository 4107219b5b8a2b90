// Chapter 09: what the two CUDA files of the GPU half share (only they include this
// header, so it may name CUDA types; main.cpp sees only chapter.h). gemm.cu calls
// cuBLAS and cuBLASLt once per precision and checks the results; gpu.cu measures the
// copy and FMA roofs, sweeps the GEMM shapes and prints the roofline.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "chapter.h"
#include "zero/core/cuda/cuda_check.cuh"

namespace ch09 {

// One precision of the sweep: kSheet[sheet] (chapter.h) names it and gives its bytes
// and datasheet peak; here are its cuBLAS types (always an FP32 accumulator) and the
// check's tolerance.
struct Precision {
  int sheet;
  cudaDataType_t in, out;
  cublasComputeType_t compute;
  double tolerance;  // on the error divided by sum |a_ik b_kj|
  bool lt;           // through cuBLASLt (FP8), else cublasGemmEx
  const char* name() const { return kSheet[sheet].name; }
  int in_bytes() const { return kSheet[sheet].in_bytes; }
  int out_bytes() const { return kSheet[sheet].out_bytes; }
};

inline const Precision kPrecisions[] = {
    {0, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 1e-5, false},
    {1, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 4e-3, false},
    {2, CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 8e-3, false},
    {3, CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, 2e-3, false},
    {4, CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 8e-3, true},
};

// Device memory of `bytes`, freed at the end of the scope.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) { ZERO_CUDA_CHECK(cudaMalloc(&ptr_, bytes)); }
  ~DeviceBuffer() { cudaFree(ptr_); }  // a destructor must not throw
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return ptr_; }

 private:
  void* ptr_ = nullptr;
};

// C (m x n, column-major) = A^T B with A stored k x m and B k x n, both column-major:
// the "TN" layout cuBLASLt requires for FP8, used for every precision alike, so that
// column i of A and column j of B are the contiguous k values that make C(i, j).
class Gemm {
 public:
  Gemm();
  ~Gemm();
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;
  // False when cuBLASLt offers no algorithm for the shape (then nothing ran).
  bool Run(const Precision& p, int64_t m, int64_t n, int64_t k, const void* a, const void* b,
           void* c);

 private:
  // A cuBLASLt matmul described and its algorithm chosen once per shape, so that a timed
  // call is the launch alone.
  struct LtPlan {
    int64_t m = 0, n = 0, k = 0;
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
    bool found = false;
  };
  LtPlan& Plan(const Precision& p, int64_t m, int64_t n, int64_t k);

  static constexpr size_t kWorkspace = 32u << 20;
  cublasHandle_t handle_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  DeviceBuffer workspace_{kWorkspace};
  std::vector<LtPlan> plans_;
};

// `n` FP32 values at `x` written as p's input type into `y` (FP32: copied; FP8 saturates).
void convert(const Precision& p, const float* x, void* y, int64_t n);

// `count` elements from element `first` of device memory of type `t`, as doubles.
std::vector<double> read_elements(const void* base, cudaDataType_t t, int64_t first, int64_t count);

// The worst error over 64 sampled entries of C = A^T B, against a double dot product of
// the inputs as the GEMM saw them, divided by sum |a b| over the dot product.
double worst_error(const Precision& p, int64_t m, int64_t n, int64_t k, const void* a,
                   const void* b, const void* c);

}  // namespace ch09
