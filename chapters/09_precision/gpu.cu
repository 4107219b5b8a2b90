// Chapter 09 · the GPU half (section 5): what each precision buys on the Tensor Cores.
// Two roofs of the ordinary units are measured first: the copy bandwidth (a copy kernel)
// and the FP32 FMA rate (a kernel of independent FMA chains). Then GEMMs in FP32
// (SGEMM), TF32, BF16, FP16 and, on sm_89 and later, FP8 E4M3 (gemm.cu), all
// accumulating in FP32, over shapes whose arithmetic intensity runs from decode-like
// (16 rows) to square. Each GEMM is checked on sampled entries before it is timed; the
// roofline of each precision is printed and drawn (plot.cpp's draw_plot).
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "chapter.h"
#include "gpu.h"
#include "tools/gpu_median.h"
#include "zero/core/half.h"
#include "zero/core/tensor.h"
#include "zero/io/png.h"

namespace ch09 {
namespace {

// ---------------------------------------------------------------- kernels

__global__ void copy_kernel(const float4* src, float4* dst, int64_t n4) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n4; i += step) {
    dst[i] = src[i];
  }
}

// kChains independent chains x = x * a + b per thread: enough independent FMAs in flight
// to cover the FMA latency, so the FP32 units, not the dependences, set the rate.
constexpr int kChains = 8;
__host__ __device__ inline float fma_chain_result(int tid, int iters, float a, float b) {
  float x[kChains];
  // fmaf, not tid * 1e-3f + j, which nvcc would contract into an FMA and the host not.
  for (int j = 0; j < kChains; ++j) {
    x[j] = fmaf(static_cast<float>(tid), 1e-3f, static_cast<float>(j));
  }
  for (int i = 0; i < iters; ++i) {
    for (int j = 0; j < kChains; ++j) x[j] = fmaf(x[j], a, b);  // unrolled: a constant count
  }
  float sum = 0.0f;
  for (int j = 0; j < kChains; ++j) sum += x[j];
  return sum;
}

__global__ void fma_kernel(float* out, int iters, float a, float b) {
  const int tid = blockIdx.x * blockDim.x + threadIdx.x;
  out[tid] = fma_chain_result(tid, iters, a, b);
}

// ---------------------------------------------------------------- measurements

double tflops(double flops, float ms) { return flops / (ms * 1e-3) / 1e12; }

// The two roofs of the ordinary units: copy bandwidth (TB/s) and FP32 FMA rate (TFLOP/s).
struct Roofs {
  double copy_tbps = 0, fma_tflops = 0;
};

Roofs measure_roofs(const Options& o, const cudaDeviceProp& prop, int* failures) {
  Roofs r;
  const int warmup = o.quick ? 1 : 3, reps = o.quick ? 3 : 10;
  const int64_t n = o.quick ? (int64_t{1} << 24) : (int64_t{1} << 28);  // floats
  DeviceBuffer src(n * 4), dst(n * 4);
  ZERO_CUDA_CHECK(cudaMemset(src.get(), 0x3f, n * 4));
  ZERO_CUDA_CHECK(cudaMemset(dst.get(), 0, n * 4));
  const int copy_blocks = prop.multiProcessorCount * 16;
  const float copy_ms = zero::tools::median_gpu_ms(
      [&] {
        copy_kernel<<<copy_blocks, 256>>>(static_cast<const float4*>(src.get()),
                                          static_cast<float4*>(dst.get()), n / 4);
        ZERO_CUDA_CHECK(cudaGetLastError());
      },
      warmup, reps);
  r.copy_tbps = 2.0 * n * 4 / (copy_ms * 1e-3) / 1e12;  // read + write
  const std::vector<double> last = read_elements(dst.get(), CUDA_R_32F, n - 1024, 1024);
  const bool copy_ok = std::all_of(last.begin(), last.end(),
                                   [&](double v) { return v == zero::bits_to_float(0x3f3f3f3fu); });
  *failures += !copy_ok;

  const int threads = prop.multiProcessorCount * 2048, iters = o.quick ? 4096 : 65536;
  const float a = 0.999f, b = 0.001f;
  DeviceBuffer out(static_cast<size_t>(threads) * 4);
  const float fma_ms = zero::tools::median_gpu_ms(
      [&] {
        fma_kernel<<<threads / 256, 256>>>(static_cast<float*>(out.get()), iters, a, b);
        ZERO_CUDA_CHECK(cudaGetLastError());
      },
      warmup, reps);
  r.fma_tflops = tflops(2.0 * kChains * iters * threads, fma_ms);
  // FMA is exactly rounded on both sides, so the host's chain gives the very same float.
  const std::vector<double> got = read_elements(out.get(), CUDA_R_32F, threads - 1, 1);
  const bool fma_ok = got[0] == fma_chain_result(threads - 1, iters, a, b);
  *failures += !fma_ok;
  std::printf("Copy kernel (float4, %.2f GiB each way):  %7.2f TB/s  (datasheet HBM %.1f TB/s)%s\n",
              n * 4.0 / (1 << 30), r.copy_tbps, kSheetHbmTBps, copy_ok ? "" : "  MISMATCH");
  std::printf("FP32 FMA chains (%d per thread):         %7.1f TFLOP/s (datasheet FP32 %.0f)%s\n",
              kChains, r.fma_tflops, kSheet[0].tflops, fma_ok ? "" : "  MISMATCH");
  return r;
}

struct Point {
  int64_t m;
  double intensity, tflops, error;
  float ms;
};

// The GEMM sweep of one precision: every shape checked, then timed. Empty when skipped.
std::vector<Point> sweep(const Precision& p, const Options& o, Gemm& gemm, const float* a32,
                         const float* b32, int64_t k, int64_t n, const std::vector<int64_t>& ms,
                         int* failures) {
  const int64_t max_m = ms.back();
  DeviceBuffer a(max_m * k * p.in_bytes()), b(k * n * p.in_bytes()), c(max_m * n * 4);
  convert(p, a32, a.get(), max_m * k);
  convert(p, b32, b.get(), k * n);
  std::vector<Point> points;
  for (const int64_t m : ms) {
    if (!gemm.Run(p, m, n, k, a.get(), b.get(), c.get())) {
      std::printf("  %-10s M = %lld: [skipped] cuBLASLt has no algorithm for it here\n", p.name(),
                  static_cast<long long>(m));
      continue;
    }
    const double error = worst_error(p, m, n, k, a.get(), b.get(), c.get());
    *failures += !(error <= p.tolerance);
    // Ten calls per timing, back to back, so that a small GEMM's time is not its launch.
    const auto ten_calls = [&] {
      for (int r = 0; r < 10; ++r) gemm.Run(p, m, n, k, a.get(), b.get(), c.get());
    };
    const float t = zero::tools::median_gpu_ms(ten_calls, o.quick ? 1 : 2, o.quick ? 3 : 7) / 10;
    const double flops = 2.0 * m * n * k;
    const double bytes =
        p.in_bytes() * static_cast<double>(m * k + k * n) + p.out_bytes() * double(m * n);
    points.push_back({m, flops / bytes, tflops(flops, t), error, t});
  }
  return points;
}

void draw_roofline(const std::string& path, const cudaDeviceProp& prop, const Roofs& roofs,
                   const std::vector<std::vector<Point>>& all) {
  const double x_lo = 1, x_hi = 1e4, bw = roofs.copy_tbps;
  // Each compute roof starts at its ridge, where it meets the one memory roof.
  auto flat = [&](double peak) {
    return std::vector<std::pair<double, double>>{{peak / bw, peak}, {x_hi, peak}};
  };
  std::vector<Series> series;
  double top = roofs.fma_tflops;
  series.push_back({"FP32 FMA, no Tensor Cores", {150, 150, 150}, flat(roofs.fma_tflops), 1});
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i].empty()) continue;
    double best = 0;
    for (const Point& q : all[i]) best = std::max(best, q.tflops);
    top = std::max(top, best);
    series.push_back({kPrecisions[i].name(), precision_color(static_cast<int>(i)), flat(best), 2});
    Series marks{"", precision_color(static_cast<int>(i)), {}, 1, true, false};
    for (const Point& q : all[i]) marks.points.emplace_back(q.intensity, q.tflops);
    series.push_back(std::move(marks));
  }
  series.push_back({"copy bandwidth", {60, 60, 60}, {{x_lo, x_lo * bw}, {top / bw, top}}, 2});
  char copy[32];
  std::snprintf(copy, sizeof copy, ", copy %.2f TB/s", bw);
  const std::string title = std::string("Roofline per precision: ") + prop.name + copy;
  PlotFrame frame{title, "flop/byte", "TFLOP/s", true, true, true};
  const zero::train::Canvas canvas = draw_plot(frame, series);
  zero::io::write_png(path, canvas.width(), canvas.height(), canvas.pixels());
  std::printf("\nRoofline figure written to %s\n", path.c_str());
}

}  // namespace

int run_gpu_part(const Options& o) {
  cudaDeviceProp prop{};
  ZERO_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  const int cc = prop.major * 10 + prop.minor;
  std::printf("\n== 6. Tensor Cores per precision: GEMM rates against FP32 FMA and the copy\n");
  std::printf("GPU: %s, %d SMs, sm_%d. Datasheet figures are H200 SXM's (dense), assumptions.\n",
              prop.name, prop.multiProcessorCount, cc);
  int failures = 0;
  const Roofs roofs = measure_roofs(o, prop, &failures);

  const int64_t k = o.quick ? 1024 : 8192, n = k;
  const std::vector<int64_t> ms = o.quick ? std::vector<int64_t>{16, 256, 1024}
                                          : std::vector<int64_t>{16, 64, 256, 1024, 4096, 8192};
  zero::Generator gen(9);
  const zero::TensorOption cuda = zero::TensorOption().OnDevice(zero::Device::Cuda(0));
  const zero::Tensor a32 = zero::Tensor::Randn({ms.back(), k}, cuda, &gen);  // A^T: m columns of k
  const zero::Tensor b32 = zero::Tensor::Randn({n, k}, cuda, &gen);          // B: n columns of k
  std::printf(
      "\nC [M, N] = A [M, K] B [K, N], K = N = %lld, FP32 accumulation, inputs N(0, 1).\n"
      "flop/byte counts each operand read once and C written once. Error: worst of 64\n"
      "entries against a double dot product of the rounded inputs, / sum |a b|.\n",
      static_cast<long long>(k));
  std::printf("  %-10s %6s %10s %9s %9s %9s %10s\n", "precision", "M", "flop/byte", "ms", "TFLOP/s",
              "% roof", "max error");
  Gemm gemm;
  std::vector<std::vector<Point>> all;
  for (const Precision& p : kPrecisions) {
    all.emplace_back();
    if (p.lt && cc < 89) {
      std::printf("  %-10s [skipped] FP8 needs sm_89 or later\n", p.name());
      continue;
    }
    all.back() =
        sweep(p, o, gemm, a32.data_ptr<float>(), b32.data_ptr<float>(), k, n, ms, &failures);
    double best = 0;
    for (const Point& q : all.back()) best = std::max(best, q.tflops);
    for (const Point& q : all.back()) {
      const double roof = std::min(best, q.intensity * roofs.copy_tbps);
      std::printf("  %-10s %6lld %10.1f %9.3f %9.1f %8.1f%% %10.1e%s\n", p.name(),
                  static_cast<long long>(q.m), q.intensity, q.ms, q.tflops, 100 * q.tflops / roof,
                  q.error, q.error <= p.tolerance ? "" : "  MISMATCH");
    }
  }
  std::printf("\n%% roof: of min(the precision's best rate, flop/byte x copy bandwidth).\n");
  std::printf("  %-10s %13s %11s %10s %12s %12s\n", "precision", "best TFLOP/s", "x FP32 FMA",
              "datasheet", "% datasheet", "ridge f/B");
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i].empty()) continue;
    double best = 0;
    for (const Point& q : all[i]) best = std::max(best, q.tflops);
    std::printf("  %-10s %13.1f %11.1f %10.0f %11.1f%% %12.0f\n", kPrecisions[i].name(), best,
                best / roofs.fma_tflops, kSheet[i].tflops, 100 * best / kSheet[i].tflops,
                best / roofs.copy_tbps);
  }
  std::printf(
      "ridge f/B: the flop/byte at which the precision's best rate meets the measured\n"
      "copy bandwidth; a GEMM below it is memory-bound.\n");
  if (!o.figure.empty()) draw_roofline(o.figure, prop, roofs, all);
  return failures;
}

}  // namespace ch09
