// Kernel benchmark: Zero's element-wise add, full sum and row softmax against the
// device-to-device copy bandwidth measured in the same run, with the project's
// targets (at least 95% of the copy for add and sum), and Zero's GEMM at 4096^3 and 8192^3 in FP32 and TF32.
// tools/bench_side_by_side.py runs this program and PyTorch's equivalents in one
// call and prints the ratios.
//
//   bench_kernels [--quick] [--json]
//
// Bytes are counted as the minimum a kernel must move: add reads 2n and writes n
// floats; sum reads n; softmax reads and writes the matrix once. Every result is
// checked against a CPU reference first; the program exits 1 on a mismatch.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "tools/gpu_median.h"
#include "zero/autograd/functional.h"
#include "zero/core/cuda/cuda_check.cuh"
#include "zero/kernels/precision.h"
#include "zero/kernels/tensor_ops.h"

namespace {

using zero::Tensor;
using zero::tools::median_gpu_ms;

bool close(float got, double want, double rtol) {
  return std::fabs(got - want) <= rtol * std::max(1.0, std::fabs(want));
}

struct Row {
  const char* name;
  double ms, gbps, target_pct;  // target as % of copy bandwidth (0 = none)
};

}  // namespace

int main(int argc, char** argv) {
  bool quick = false, json = false;
  for (int i = 1; i < argc; ++i) {
    quick |= !std::strcmp(argv[i], "--quick");
    json |= !std::strcmp(argv[i], "--json");
  }
  if (!zero::cuda_available()) {
    std::printf("[skipped] bench_kernels needs a CUDA GPU (%s)\n",
                zero::cuda_built() ? "none visible" : "Zero was built without CUDA");
    return 0;
  }
  const zero::TensorOption gpu = zero::TensorOption().OnDevice(zero::Device::Cuda());
  const int64_t n = quick ? (1 << 20) : (int64_t{256} << 20);  // 256M floats = 1 GiB
  const int warmup = quick ? 2 : 5, reps = quick ? 5 : 20;
  bool ok = true;
  std::vector<Row> rows;

  Tensor a = Tensor::Rand({n}, gpu), b = Tensor::Rand({n}, gpu), c = Tensor::Empty({n}, gpu);
  const double copy_ms = median_gpu_ms([&] {
    ZERO_CUDA_CHECK(cudaMemcpyAsync(c.data(), a.data(), n * 4, cudaMemcpyDeviceToDevice));
  }, warmup, reps);
  const double copy_gbps = 2.0 * n * 4 / copy_ms / 1e6;
  rows.push_back({"copy (cudaMemcpy D2D)", copy_ms, copy_gbps, 0});

  // add: check a few elements, then time.
  zero::ops::add(a, b, c);
  {
    const std::vector<float> av = a.Slice(0, 0, 1024).ToVector<float>();
    const std::vector<float> bv = b.Slice(0, 0, 1024).ToVector<float>();
    const std::vector<float> cv = c.Slice(0, 0, 1024).ToVector<float>();
    for (int i = 0; i < 1024; ++i) ok &= close(cv[i], double(av[i]) + bv[i], 1e-6);
  }
  const double add_ms = median_gpu_ms([&] { zero::ops::add(a, b, c); }, warmup, reps);
  rows.push_back({"add a + b (ops::add)", add_ms, 3.0 * n * 4 / add_ms / 1e6, 95});

  Tensor total = Tensor::Empty({}, gpu);
  zero::ops::sum_all(a, total);
  {
    double want = 0;
    for (float v : a.ToVector<float>()) want += v;
    ok &= close(total.Item(), want, 1e-4);
  }
  const double sum_ms = median_gpu_ms([&] { zero::ops::sum_all(a, total); }, warmup, reps);
  rows.push_back({"sum of all (ops::sum_all)", sum_ms, 1.0 * n * 4 / sum_ms / 1e6, 90});

  const int64_t R = quick ? 512 : 8192, C = 4096;
  Tensor x = Tensor::Randn({R, C}, gpu), y = Tensor::Empty({R, C}, gpu);
  zero::ops::softmax_forward(x, y);
  {
    const std::vector<float> xv = x.Slice(0, 0, 2).ToVector<float>();
    const std::vector<float> yv = y.Slice(0, 0, 2).ToVector<float>();
    for (int r = 0; r < 2; ++r) {
      double m = -1e30, s = 0;
      for (int j = 0; j < C; ++j) m = std::max(m, double(xv[r * C + j]));
      for (int j = 0; j < C; ++j) s += std::exp(xv[r * C + j] - m);
      for (int j = 0; j < C; ++j) ok &= close(yv[r * C + j], std::exp(xv[r * C + j] - m) / s, 1e-5);
    }
  }
  const double sm_ms = median_gpu_ms([&] { zero::ops::softmax_forward(x, y); }, warmup, reps);
  rows.push_back({"softmax rows 8192x4096", sm_ms, 2.0 * R * C * 4 / sm_ms / 1e6, 0});

  // GEMM: square products in FP32 and TF32 (values are checked in chapter 07 and the
  // matmul tests; here only the time).
  const int64_t gemm_sizes[2] = {quick ? 512 : 4096, quick ? 1024 : 8192};
  double gemm_ms[2][2];  // [size][mode: fp32, tf32]
  for (int si = 0; si < 2; ++si) {
    const int64_t g = gemm_sizes[si];
    Tensor ga = Tensor::Randn({g, g}, gpu), gb = Tensor::Randn({g, g}, gpu), gc = Tensor::Empty({g, g}, gpu);
    const char* modes[2] = {"ieee", "tf32"};
    for (int mi = 0; mi < 2; ++mi) {
      zero::set_matmul_precision(zero::parse_matmul_precision(modes[mi]));
      gemm_ms[si][mi] = median_gpu_ms([&] { zero::ops::matmul(ga, gb, gc); }, warmup, reps);
    }
    zero::clear_matmul_precision();
  }

  if (json) {
    std::printf("{\"copy_gbps\": %.1f, \"add_ms\": %.4f, \"sum_ms\": %.4f, \"softmax_ms\": %.4f, "
                "\"n\": %lld, \"softmax_rows\": %lld, \"gemm_sizes\": [%lld, %lld], "
                "\"gemm_fp32_ms\": [%.4f, %.4f], \"gemm_tf32_ms\": [%.4f, %.4f], \"ok\": %s}\n",
                copy_gbps, add_ms, sum_ms, sm_ms, static_cast<long long>(n),
                static_cast<long long>(R), static_cast<long long>(gemm_sizes[0]),
                static_cast<long long>(gemm_sizes[1]), gemm_ms[0][0], gemm_ms[1][0], gemm_ms[0][1],
                gemm_ms[1][1], ok ? "true" : "false");
  } else {
    std::printf("%-28s %10s %10s %8s %s\n", "kernel", "ms", "GB/s", "% copy", "target");
    for (const Row& r : rows) {
      std::printf("%-28s %10.4f %10.1f %7.1f%% ", r.name, r.ms, r.gbps, 100.0 * r.gbps / copy_gbps);
      if (r.target_pct > 0) {
        std::printf(">= %.0f%% %s", r.target_pct,
                    100.0 * r.gbps / copy_gbps >= r.target_pct ? "met" : "NOT met");
      }
      std::printf("\n");
    }
    for (int si = 0; si < 2; ++si) {
      const double flops = 2.0 * gemm_sizes[si] * gemm_sizes[si] * gemm_sizes[si];
      std::printf("GEMM %lld^3: FP32 %.3f ms (%.1f TFLOP/s), TF32 %.3f ms (%.1f TFLOP/s)\n",
                  static_cast<long long>(gemm_sizes[si]), gemm_ms[si][0],
                  flops / gemm_ms[si][0] / 1e9, gemm_ms[si][1], flops / gemm_ms[si][1] / 1e9);
    }
    std::printf("results checked against the CPU: %s\n", ok ? "ok" : "MISMATCH");
  }
  return ok ? 0 : 1;
}
