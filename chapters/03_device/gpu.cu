// Chapter 03, GPU half: what a copy between host and GPU costs. For sizes 1 KB to
// 256 MB it times cudaMemcpy host->device and device->host, from ordinary (pageable)
// host memory and from page-locked (pinned, cudaMallocHost) memory, with CUDA events
// (median of several runs after a warm-up), then fits the copy model of exercise 03
// to each series. A device-to-device copy measured in the same run is the baseline.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "copy_bench.h"
#include "copy_model.h"
#include "tools/gpu_median.h"
#include "zero/core/cuda/cuda_check.cuh"

namespace ch03 {
namespace {

// ---------------------------------------------------------------- timing

// Median time in seconds of `reps` runs of `copy`, after one warm-up, with events on
// the default stream (where cudaMemcpy runs): tools/gpu_median.h's timer, in seconds.
template <typename F>
double median_seconds(int reps, F&& copy) {
  return zero::tools::median_gpu_ms(copy, 1, reps) * 1e-3;
}

int reps_for(size_t bytes, bool quick) {
  if (quick) return 3;
  return bytes <= (size_t{1} << 20) ? 50 : (bytes <= (size_t{32} << 20) ? 10 : 5);
}

// ---------------------------------------------------------------- one series

struct Series {
  const char* name;
  std::vector<CopySample> samples;
};

// Times copies of every size in `sizes` between `host` and `dev`, in one direction,
// after checking that the bytes arrive intact (host -> device -> host round trip).
bool measure(const char* name, char* host, char* check, char* dev, bool to_device,
             const std::vector<size_t>& sizes, bool quick, Series* out) {
  out->name = name;
  for (size_t n : sizes) {
    for (size_t i = 0; i < n; ++i) host[i] = static_cast<char>(i * 7 + n);
    std::memset(check, 0, n);
    ZERO_CUDA_CHECK(cudaMemcpy(dev, host, n, cudaMemcpyHostToDevice));
    ZERO_CUDA_CHECK(cudaMemcpy(check, dev, n, cudaMemcpyDeviceToHost));
    if (std::memcmp(host, check, n) != 0) {
      std::printf("MISMATCH: %s, %zu bytes did not survive the round trip\n", name, n);
      return false;
    }
    const double t = median_seconds(reps_for(n, quick), [&] {
      if (to_device) {
        ZERO_CUDA_CHECK(cudaMemcpy(dev, host, n, cudaMemcpyHostToDevice));
      } else {
        ZERO_CUDA_CHECK(cudaMemcpy(host, dev, n, cudaMemcpyDeviceToHost));
      }
    });
    out->samples.push_back({static_cast<double>(n), t});
  }
  return true;
}

void print_table(const std::vector<Series>& series, double d2d_bytes_per_s) {
  std::printf("%10s", "size");
  for (const Series& s : series) std::printf(" | %-21s", s.name);
  std::printf("\n%10s", "");
  for (size_t i = 0; i < series.size(); ++i) std::printf(" | %9s %11s", "us", "GB/s");
  std::printf("\n");
  for (size_t row = 0; row < series[0].samples.size(); ++row) {
    const double n = series[0].samples[row].bytes;
    if (n >= 1 << 20) {
      std::printf("%7.0f MB", n / (1 << 20));
    } else {
      std::printf("%7.0f KB", n / (1 << 10));
    }
    for (const Series& s : series) {
      const double t = s.samples[row].seconds;
      std::printf(" | %9.1f %11.2f", t * 1e6, n / t / 1e9);
    }
    std::printf("\n");
  }
  std::printf("(device-to-device cudaMemcpy in this run: %.0f GB/s, the baseline below)\n",
              d2d_bytes_per_s / 1e9);
}

}  // namespace

// ---------------------------------------------------------------- entry point

int run_copy_benchmark(bool quick) {
  std::printf("\n== 5. What a host <-> GPU copy costs (cudaMemcpy, CUDA events, median)\n");
  cudaDeviceProp prop;
  ZERO_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("GPU: %s\n", prop.name);
  const size_t max_bytes = quick ? (size_t{4} << 20) : (size_t{256} << 20);
  std::vector<size_t> sizes;
  for (size_t n = 1024; n <= max_bytes; n *= 4) sizes.push_back(n);

  // Pinning is itself expensive (the OS must lock every page): allocate once, reuse.
  const auto t0 = std::chrono::steady_clock::now();
  char *pinned = nullptr, *pinned_check = nullptr;
  ZERO_CUDA_CHECK(cudaMallocHost(&pinned, max_bytes));
  const auto t1 = std::chrono::steady_clock::now();
  ZERO_CUDA_CHECK(cudaMallocHost(&pinned_check, max_bytes));
  std::vector<char> pageable(max_bytes), pageable_check(max_bytes);
  char *dev = nullptr, *dev2 = nullptr;
  ZERO_CUDA_CHECK(cudaMalloc(&dev, max_bytes));
  ZERO_CUDA_CHECK(cudaMalloc(&dev2, max_bytes));
  std::printf("cudaMallocHost(%zu MB) took %.1f ms: pin buffers once and reuse them\n",
              max_bytes >> 20, std::chrono::duration<double, std::milli>(t1 - t0).count());

  // Baseline: the GPU copying its own memory (read + write counted, as for a kernel).
  ZERO_CUDA_CHECK(cudaMemset(dev, 3, max_bytes));
  const double d2d = median_seconds(quick ? 3 : 10, [&] {
    ZERO_CUDA_CHECK(cudaMemcpy(dev2, dev, max_bytes, cudaMemcpyDeviceToDevice));
  });
  const double d2d_bytes_per_s = 2.0 * max_bytes / d2d;

  std::vector<Series> series(4);
  bool ok = measure("pageable H2D", pageable.data(), pageable_check.data(), dev, true, sizes,
                    quick, &series[0]) &&
            measure("pinned H2D", pinned, pinned_check, dev, true, sizes, quick, &series[1]) &&
            measure("pageable D2H", pageable.data(), pageable_check.data(), dev, false, sizes,
                    quick, &series[2]) &&
            measure("pinned D2H", pinned, pinned_check, dev, false, sizes, quick, &series[3]);
  if (ok) {
    print_table(series, d2d_bytes_per_s);
    std::printf("\nFitted copy model t(n) = latency + n / bandwidth (exercise 03):\n");
    std::printf("%-14s %11s %9s %9s %16s %12s %12s\n", "series", "latency us", "GB/s",
                "% of D2D", "half-bw size KB", "64 KB us", "worst error");
    for (const Series& s : series) {
      const CopyModel m = fit_copy_model(s.samples);
      std::printf("%-14s %11.2f %9.2f %8.1f%% %16.1f %12.1f %11.0f%%\n", s.name,
                  m.latency_s * 1e6, m.bytes_per_s / 1e9, 100.0 * m.bytes_per_s / d2d_bytes_per_s,
                  m.HalfBandwidthBytes() / 1024, m.Seconds(65536) * 1e6,
                  100.0 * worst_relative_error(m, s.samples));
    }
    // Check the model against a size it did not see, in the middle of the range.
    const double probe = static_cast<double>(sizes[sizes.size() / 2]) * 2;
    const CopyModel pinned_h2d = fit_copy_model(series[1].samples);
    const double measured = median_seconds(reps_for(static_cast<size_t>(probe), quick), [&] {
      ZERO_CUDA_CHECK(cudaMemcpy(dev, pinned, static_cast<size_t>(probe), cudaMemcpyHostToDevice));
    });
    std::printf("pinned H2D of %.0f KB (not in the sweep): predicted %.1f us, measured %.1f us\n",
                probe / 1024, pinned_h2d.Seconds(probe) * 1e6, measured * 1e6);
  }
  ZERO_CUDA_CHECK(cudaFree(dev2));
  ZERO_CUDA_CHECK(cudaFree(dev));
  ZERO_CUDA_CHECK(cudaFreeHost(pinned_check));
  ZERO_CUDA_CHECK(cudaFreeHost(pinned));
  return ok ? 0 : 1;
}

}  // namespace ch03
