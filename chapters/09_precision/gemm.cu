// Chapter 09 · one GEMM per precision, and its check (gpu.h declares them). FP32, TF32,
// BF16 and FP16 go through cublasGemmEx, whose compute type says what the Tensor Cores
// may do (CUBLAS_COMPUTE_32F_FAST_TF32 rounds FP32 operands to TF32 inside); FP8 needs
// cuBLASLt, which also wants A transposed ("TN"), dimensions in multiples of 16 and an
// output of BF16 or FP16 here. Every precision accumulates in FP32. The check reads the
// rounded operands back and decodes them with half.h and formats.h, so the reference
// sees exactly what the Tensor Cores saw.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "formats.h"
#include "gpu.h"
#include "zero/core/half.h"

namespace ch09 {
namespace {

template <typename T>
__device__ T from_float(float x);
template <>
__device__ __nv_bfloat16 from_float(float x) {
  return __float2bfloat16_rn(x);
}
template <>
__device__ __half from_float(float x) {
  return __float2half_rn(x);
}
template <>
__device__ __nv_fp8_e4m3 from_float(float x) {
  return __nv_fp8_e4m3(x);
}  // saturates

template <typename T>
__global__ void convert_kernel(const float* x, T* y, int64_t n) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    y[i] = from_float<T>(x[i]);
  }
}

}  // namespace

// ---------------------------------------------------------------- launchers

void convert(const Precision& p, const float* x, void* y, int64_t n) {
  const int blocks = static_cast<int>(std::min<int64_t>((n + 255) / 256, 8192));
  if (p.in == CUDA_R_32F) {
    ZERO_CUDA_CHECK(cudaMemcpy(y, x, n * 4, cudaMemcpyDeviceToDevice));
    return;
  }
  if (p.in == CUDA_R_16BF) {
    convert_kernel<<<blocks, 256>>>(x, static_cast<__nv_bfloat16*>(y), n);
  } else if (p.in == CUDA_R_16F) {
    convert_kernel<<<blocks, 256>>>(x, static_cast<__half*>(y), n);
  } else {
    convert_kernel<<<blocks, 256>>>(x, static_cast<__nv_fp8_e4m3*>(y), n);
  }
  ZERO_CUDA_CHECK(cudaGetLastError());
}

Gemm::Gemm() {
  ZERO_CUBLAS_CHECK(cublasCreate(&handle_));
  ZERO_CUBLAS_CHECK(cublasLtCreate(&lt_));
  ZERO_CUBLAS_CHECK(cublasSetWorkspace(handle_, workspace_.get(), kWorkspace));
}

Gemm::~Gemm() {
  for (LtPlan& plan : plans_) {
    cublasLtMatrixLayoutDestroy(plan.c);
    cublasLtMatrixLayoutDestroy(plan.b);
    cublasLtMatrixLayoutDestroy(plan.a);
    cublasLtMatmulDescDestroy(plan.op);
  }
  cublasLtDestroy(lt_);
  cublasDestroy(handle_);
}

// cuBLASLt describes the operation and each matrix layout, then asks its heuristic for
// the best algorithm within the workspace. (FP8 is the only precision that comes here.)
Gemm::LtPlan& Gemm::Plan(const Precision& p, int64_t m, int64_t n, int64_t k) {
  for (LtPlan& plan : plans_) {
    if (plan.m == m && plan.n == n && plan.k == k) return plan;
  }
  LtPlan plan;
  plan.m = m, plan.n = n, plan.k = k;
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  const size_t ws = kWorkspace;
  ZERO_CUBLAS_CHECK(cublasLtMatmulDescCreate(&plan.op, p.compute, CUDA_R_32F));
  ZERO_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  ZERO_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  ZERO_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.a, p.in, k, m, k));
  ZERO_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.b, p.in, k, n, k));
  ZERO_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.c, p.out, m, n, m));
  cublasLtMatmulPreference_t pref;
  ZERO_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  ZERO_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(lt_, plan.op, plan.a, plan.b, plan.c,
                                                               plan.c, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  plan.found = status == CUBLAS_STATUS_SUCCESS && found > 0;
  plan.algo = result.algo;
  plans_.push_back(plan);
  return plans_.back();
}

bool Gemm::Run(const Precision& p, int64_t m, int64_t n, int64_t k, const void* a, const void* b,
               void* c) {
  const float alpha = 1.0f, beta = 0.0f;
  if (!p.lt) {
    ZERO_CUBLAS_CHECK(cublasGemmEx(handle_, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, a, p.in, k,
                                   b, p.in, k, &beta, c, p.out, m, p.compute, CUBLAS_GEMM_DEFAULT));
    return true;
  }
  const LtPlan& plan = Plan(p, m, n, k);
  if (plan.found) {  // D = C here, with beta = 0
    ZERO_CUBLAS_CHECK(cublasLtMatmul(lt_, plan.op, &alpha, a, plan.a, b, plan.b, &beta, c, plan.c,
                                     c, plan.c, &plan.algo, workspace_.get(), kWorkspace, 0));
  }
  return plan.found;
}

// ---------------------------------------------------------------- checks

std::vector<double> read_elements(const void* base, cudaDataType_t t, int64_t first,
                                  int64_t count) {
  const int bytes = t == CUDA_R_32F ? 4 : t == CUDA_R_8F_E4M3 ? 1 : 2;
  std::vector<unsigned char> raw(static_cast<size_t>(count * bytes));
  ZERO_CUDA_CHECK(cudaMemcpy(raw.data(), static_cast<const char*>(base) + first * bytes, raw.size(),
                             cudaMemcpyDeviceToHost));
  std::vector<double> out(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    uint32_t bits = 0;
    std::memcpy(&bits, raw.data() + i * bytes, bytes);  // little-endian: the low bytes
    if (t == CUDA_R_32F) {
      out[i] = zero::bits_to_float(bits);
    } else if (t == CUDA_R_16BF) {
      out[i] = zero::bf16_bits_to_float(static_cast<uint16_t>(bits));
    } else if (t == CUDA_R_16F) {
      out[i] = zero::f16_bits_to_float(static_cast<uint16_t>(bits));
    } else {
      out[i] = (bits & 0x80u ? -1 : 1) * decode(kE4m3, bits & 0x7fu);
    }
  }
  return out;
}

// FP32 and TF32 read the FP32 operands (TF32's rounding happens inside cuBLAS and
// counts as its error); the narrow precisions read their own rounded copies.
double worst_error(const Precision& p, int64_t m, int64_t n, int64_t k, const void* a,
                   const void* b, const void* c) {
  double worst = 0.0;
  for (int s = 0; s < 64; ++s) {
    const int64_t i = (s * 7919LL) % m, j = (s * 104729LL + 13) % n;
    const std::vector<double> col_a = read_elements(a, p.in, i * k, k);
    const std::vector<double> col_b = read_elements(b, p.in, j * k, k);
    double dot = 0.0, scale = 0.0;
    for (int64_t q = 0; q < k; ++q) {
      dot += col_a[q] * col_b[q];
      scale += std::fabs(col_a[q] * col_b[q]);
    }
    const double got = read_elements(c, p.out, i + j * m, 1)[0];
    worst = std::max(worst, std::fabs(got - dot) / std::max(scale, 1e-30));
  }
  return worst;
}

}  // namespace ch09
