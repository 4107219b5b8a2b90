// Chapter 07 · the GPU half: GEMM throughput in four compute modes against the datasheet
// peaks, Zero's matmul against a direct cuBLAS call (with the arguments of your exercise),
// and GEMV -> GEMM: batching decode steps against one weight matrix. Every result is
// checked against a double-precision CPU reference on sampled entries before it is timed.
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "cublas_args.h"
#include "gpu.h"
#include "zero/autograd/functional.h"
#include "zero/core/cuda/cuda_check.cuh"
#include "zero/core/stream.h"
#include "zero/kernels/precision.h"
#include "zero/kernels/tensor_ops.h"

namespace ch07 {
namespace {

using zero::Device;
using zero::Tensor;
using zero::TensorOption;

struct Mode {
  const char* name;
  const char* env;  // the MX_FAST_MATMUL value
  cublasComputeType_t compute;
  bool direct;         // false: no single cuBLAS call does the same, so no baseline
  bool half;           // the direct call first converts A and B to FP16, as Zero does
  double peak_tflops;  // datasheet, in the mode's own flops (2 M N K)
  double tolerance;    // on the error normalised by sum_k |a_ik b_kj|
};

// The first row is the reference the "rel. diff FP32" column compares with. Split TF32
// does three TF32 products per product, so its peak is a third of TF32's.
const Mode kModes[] = {
    {"FP32 SGEMM", "ieee", CUBLAS_COMPUTE_32F, true, false, kPeakFp32Tflops, 1e-5},
    {"FP32 3xTF32", "3xtf32", CUBLAS_COMPUTE_32F, false, false, kPeakTf32Tflops / 3, 1e-5},
    {"TF32", "tf32", CUBLAS_COMPUTE_32F_FAST_TF32, true, false, kPeakTf32Tflops, 4e-3},
    {"FP16-compute", "1", CUBLAS_COMPUTE_32F, true, true, kPeakFp16Tflops, 4e-3},
};

// y[i] = x[i] rounded to FP16: the direct baseline's own conversion, so that its FP16
// row times the same work as Zero's (Note [FP16 Tensor Cores with FP32 in and out]).
__global__ void to_half_kernel(const float* x, __half* y, int64_t n) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    y[i] = __float2half_rn(x[i]);
  }
}


// Host copies of A [M,K] and B [K,N], and the worst error of a GPU result C over sampled
// entries, against a double dot product, normalised by sum_k |a_ik b_kj| (the size an
// accumulated rounding error scales with).
struct Reference {
  std::vector<float> a, b;
  int64_t M, K, N;
  double worst_error(const Tensor& c_gpu) const {
    const std::vector<float> c = c_gpu.ToVector<float>();
    double worst = 0.0;
    for (int s = 0; s < 64; ++s) {
      const int64_t i = (s * 7919) % M, j = (s * 104729 + 13) % N;
      double dot = 0.0, scale = 0.0;
      for (int64_t p = 0; p < K; ++p) {
        dot += static_cast<double>(a[i * K + p]) * b[p * N + j];
        scale += std::fabs(static_cast<double>(a[i * K + p]) * b[p * N + j]);
      }
      worst = std::max(worst, std::fabs(c[i * N + j] - dot) / std::max(scale, 1e-30));
    }
    return worst;
  }
};

// cuBLAS called directly on Zero's buffers, with its own handle and the same 32 MiB
// workspace Zero gives its handle, so the difference is Zero's overhead alone.
class DirectCublas {
 public:
  DirectCublas() {
    ZERO_CUBLAS_CHECK(cublasCreate(&handle_));
    workspace_ = Tensor::Empty({(32 << 20) / 4}, TensorOption().OnDevice(Device::Cuda(0)));
    ZERO_CUBLAS_CHECK(cublasSetWorkspace(handle_, workspace_.data(), 32u << 20));
  }
  ~DirectCublas() { cublasDestroy(handle_); }
  DirectCublas(const DirectCublas&) = delete;
  DirectCublas& operator=(const DirectCublas&) = delete;

  // C = A B for contiguous row-major A [M,K], B [K,N], C [M,N]; with `half`, on FP16
  // copies of A and B (CUBLAS_COMPUTE_32F_FAST_16F alone leaves them FP32: see the Note).
  void Gemm(const Tensor& a, const Tensor& b, const Tensor& c, cublasComputeType_t compute,
            bool half) {
    using zero::ex07::Operand;
    const zero::ex07::GemmArgs g =
        zero::ex07::cublas_gemm_args({a.size(0), a.size(1), a.stride(0), a.stride(1)},
                                     {b.size(0), b.size(1), b.stride(0), b.stride(1)});
    const float alpha = 1.0f, beta = 0.0f;
    const Tensor& first = g.first == Operand::A ? a : b;
    const Tensor& second = g.second == Operand::A ? a : b;
    const void* p_first = half ? ToHalf(first, first16_) : first.data();
    const void* p_second = half ? ToHalf(second, second16_) : second.data();
    const cudaDataType_t type = half ? CUDA_R_16F : CUDA_R_32F;
    ZERO_CUBLAS_CHECK(cublasGemmEx(
        handle_, g.transa ? CUBLAS_OP_T : CUBLAS_OP_N, g.transb ? CUBLAS_OP_T : CUBLAS_OP_N, g.m,
        g.n, g.k, &alpha, p_first, type, g.lda, p_second, type, g.ldb, &beta, c.data(), CUDA_R_32F,
        g.ldc, compute, CUBLAS_GEMM_DEFAULT));
  }

 private:
  // x converted into `buffer` (FP32 storage of half x's size, kept between calls).
  static const void* ToHalf(const Tensor& x, Tensor& buffer) {
    const int64_t n = x.numel();
    if (!buffer.defined() || buffer.numel() * 2 < n) {
      buffer = Tensor::Empty({(n + 1) / 2}, TensorOption().OnDevice(Device::Cuda(0)));
    }
    const int blocks = static_cast<int>(std::min<int64_t>((n + 255) / 256, 4096));
    to_half_kernel<<<blocks, 256>>>(x.data_ptr<float>(), static_cast<__half*>(buffer.data()), n);
    ZERO_CUDA_CHECK(cudaGetLastError());
    return buffer.data();
  }

  cublasHandle_t handle_ = nullptr;
  Tensor workspace_, first16_, second16_;
};

double tflops(double flops, float ms) { return flops / (ms * 1e-3) / 1e12; }

int gemm_modes(const Options& options, DirectCublas& direct) {
  std::printf(
      "\n== 3. GEMM in four compute modes; Zero's matmul against cuBLAS called directly\n");
  std::printf(
      "Peaks are H200 SXM datasheet figures (dense), assumptions rather than\n"
      "measurements: FP32 %.0f, TF32 %.0f, FP16 %.0f TFLOP/s. Error: worst of 64\n"
      "sampled entries against a double CPU dot product, divided by sum |a_ik b_kj|.\n"
      "FP32 SGEMM is Zero's default; FP32 3xTF32 (MX_FAST_MATMUL=3xtf32, Note [FP32 GEMMs\n"
      "on TF32 Tensor Cores]) makes three TF32 products per product: peak TF32's / 3, %.0f.\n",
      kPeakFp32Tflops, kPeakTf32Tflops, kPeakFp16Tflops, kPeakTf32Tflops / 3);
  const std::vector<int64_t> sizes =
      options.quick ? std::vector<int64_t>{256, 512} : std::vector<int64_t>{4096, 8192};
  const int warmup = options.quick ? 1 : 3, reps = options.quick ? 3 : 10;
  const TensorOption cuda = TensorOption().OnDevice(Device::Cuda(0));
  int failures = 0;
  for (const int64_t n : sizes) {
    zero::Generator gen(7);
    const Tensor a = Tensor::Randn({n, n}, cuda, &gen), b = Tensor::Randn({n, n}, cuda, &gen);
    const Reference ref{a.ToVector<float>(), b.ToVector<float>(), n, n, n};
    const double flops = 2.0 * n * n * n;
    std::printf("\n  %lld^3 (%.2f TFLOP)\n", static_cast<long long>(n), flops / 1e12);
    std::printf("  %-13s %9s %9s %7s %11s %12s %10s %14s\n", "mode", "Zero ms", "TFLOP/s", "% peak",
                "cuBLAS ms", "Zero/cuBLAS", "max error", "rel. diff FP32");
    Tensor c_fp32;
    for (const Mode& mode : kModes) {
      zero::set_matmul_precision(zero::parse_matmul_precision(mode.env));
      const Tensor c = zero::matmul(a, b);  // (n, n)
      const Tensor c_direct = Tensor::Empty({n, n}, cuda);
      if (mode.direct) direct.Gemm(a, b, c_direct, mode.compute, mode.half);
      const double error = ref.worst_error(c);
      const double error_direct = mode.direct ? ref.worst_error(c_direct) : 0.0;
      if (!c_fp32.defined()) c_fp32 = c;
      // ||C - C_fp32|| / ||C_fp32|| over every element, computed on the GPU.
      const Tensor diff = c - c_fp32;  // (n, n)
      const double rel =
          std::sqrt(zero::sum(diff * diff).Item() / zero::sum(c_fp32 * c_fp32).Item());
      const bool ok = error <= mode.tolerance && error_direct <= mode.tolerance;
      failures += !ok;
      const float zero_ms = median_gpu_ms([&] { zero::matmul(a, b); }, warmup, reps);
      std::printf("  %-13s %9.3f %9.1f %6.1f%%", mode.name, zero_ms, tflops(flops, zero_ms),
                  100.0 * tflops(flops, zero_ms) / mode.peak_tflops);
      if (mode.direct) {
        const float direct_ms = median_gpu_ms(
            [&] { direct.Gemm(a, b, c_direct, mode.compute, mode.half); }, warmup, reps);
        std::printf(" %11.3f %12.3f", direct_ms, zero_ms / direct_ms);
      } else {
        std::printf(" %11s %12s", "-", "-");
      }
      std::printf(" %10.1e %14.1e%s\n", std::max(error, error_direct), rel,
                  ok ? "" : "  MISMATCH");
    }
    zero::clear_matmul_precision();
  }
  std::printf(
      "\nZero/cuBLAS is Zero's time over the direct call's: the target is <= 1.03.\n");
  return failures;
}

// Bandwidth of a device-to-device cudaMemcpy: the memory roof measured in this run.
double copy_tbps(int64_t floats, int reps) {
  const TensorOption cuda = TensorOption().OnDevice(Device::Cuda(0));
  const Tensor src = Tensor::Zeros({floats}, cuda), dst = Tensor::Empty({floats}, cuda);
  const size_t bytes = static_cast<size_t>(floats) * 4;
  const float ms = median_gpu_ms(
      [&] { ZERO_CUDA_CHECK(cudaMemcpy(dst.data(), src.data(), bytes, cudaMemcpyDeviceToDevice)); },
      2, reps);
  return 2.0 * bytes / (ms * 1e-3) / 1e12;  // read + write
}

int gemv_to_gemm(const Options& options) {
  const int64_t K = options.quick ? 1024 : 4096, N = K;
  const int reps = options.quick ? 3 : 20;
  zero::set_matmul_precision(zero::MatmulPrecision::kIeee);
  const double bw = copy_tbps(options.quick ? (1 << 22) : (1 << 28), reps);
  std::printf("\n== 4. GEMV -> GEMM: B decode steps against one weight W [%lld, %lld] (FP32)\n",
              static_cast<long long>(K), static_cast<long long>(N));
  std::printf(
      "Memory roof: device-to-device copy measured now, %.2f TB/s. Compute roof: the\n"
      "FP32 datasheet peak, %.0f TFLOP/s. Roofline = min(compute roof, intensity x %.2f).\n",
      bw, kPeakFp32Tflops, bw);
  std::printf("  %6s %10s %12s %10s %14s %11s %10s\n", "batch", "us/step", "flops/byte", "TFLOP/s",
              "roofline", "% roofline", "max error");
  const TensorOption cuda = TensorOption().OnDevice(Device::Cuda(0));
  zero::Generator gen(11);
  const Tensor w = Tensor::Randn({K, N}, cuda, &gen);
  const std::vector<float> w_host = w.ToVector<float>();
  int failures = 0;
  std::vector<double> us, share;  // per batch: time per step, fraction of the roofline
  for (int64_t batch = 1; batch <= 64; batch *= 2) {
    const Tensor x = Tensor::Randn({batch, K}, cuda, &gen);
    const Tensor y = zero::matmul(x, w);  // (batch, N)
    const double error = Reference{x.ToVector<float>(), w_host, batch, K, N}.worst_error(y);
    const bool ok = error <= kModes[0].tolerance;
    failures += !ok;
    const float ms = median_gpu_ms([&] { zero::matmul(x, w); }, 2, reps);
    const double flops = 2.0 * batch * K * N, bytes = 4.0 * (K * N + batch * K + batch * N);
    const double roof = std::min(kPeakFp32Tflops, flops / bytes * bw);
    std::printf("  %6lld %10.1f %12.2f %10.2f %14.2f %10.1f%% %10.1e%s\n",
                static_cast<long long>(batch), ms * 1e3, flops / bytes, tflops(flops, ms), roof,
                100.0 * tflops(flops, ms) / roof, error, ok ? "" : "  MISMATCH");
    us.push_back(ms * 1e3);
    share.push_back(tflops(flops, ms) / roof);
  }
  zero::clear_matmul_precision();
  // What the rows say, from the rows: the model predicts a flat time up to the ridge.
  std::printf("Batch 1 -> 64: 64x the work in %.1fx the time (%.1f -> %.1f us); the share of\n"
              "the roofline reached ranges from %.0f%% to %.0f%%.\n",
              us.back() / us.front(), us.front(), us.back(),
              100.0 * *std::min_element(share.begin(), share.end()),
              100.0 * *std::max_element(share.begin(), share.end()));
  return failures;
}

}  // namespace

int run_gpu_part(const Options& options) {
  cudaDeviceProp prop{};
  ZERO_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("\nGPU: %s, %d SMs, %.0f GiB%s\n", prop.name, prop.multiProcessorCount,
              prop.totalGlobalMem / double(1 << 30),
              std::strstr(prop.name, "H200") ? "" : " (not an H200: the peaks below are H200's)");
  DirectCublas direct;
  int failures = gemm_modes(options, direct);
  failures += gemv_to_gemm(options);
  failures += bias_epilogue(options);
  return failures;
}

}  // namespace ch07
