// Chapter 01 · CUDA kernels, the GPU half:
//   4. what the device is made of (cudaGetDeviceProperties / cudaDeviceGetAttribute);
//   5. scale_kernel and add_kernel, one thread per element, validated against the
//      CPU and timed against the speed of light for a memory-bound kernel: a
//      device-to-device cudaMemcpy in the same run. Zero's own ops::add runs too.
// Bytes are counted as read + written, for the copy as for the kernels.
#include <cuda_runtime.h>

#include <climits>
#include <cstdio>
#include <functional>
#include <vector>

#include "gpu.h"
#include "launch_math.h"
#include "tools/gpu_median.h"
#include "zero/core/cuda/cuda_check.cuh"
#include "zero/core/tensor.h"
#include "zero/kernels/tensor_ops.h"

namespace ch01 {
namespace {

// ---------------------------------------------------------------- helpers

// n floats of device memory, freed at the end of the scope.
class DeviceFloats {
 public:
  explicit DeviceFloats(int64_t n) { ZERO_CUDA_CHECK(cudaMalloc(&ptr_, sizeof(float) * n)); }
  ~DeviceFloats() { cudaFree(ptr_); }  // a destructor must not throw; nothing to do on error
  DeviceFloats(const DeviceFloats&) = delete;
  DeviceFloats& operator=(const DeviceFloats&) = delete;
  float* get() const { return ptr_; }

 private:
  float* ptr_ = nullptr;
};

// Elements where `got` differs from `want` (bit-exact: one IEEE operation gives the
// same float on the CPU and the GPU); prints the first.
int count_mismatches(const char* what, const std::vector<float>& got,
                     const std::vector<float>& want) {
  int bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (got[i] != want[i] && bad++ == 0) {
      std::printf("MISMATCH %s at element %zu: got %g, expected %g\n", what, i, got[i], want[i]);
    }
  }
  return bad;
}

// FP32 lanes (CUDA cores) per SM, from the architecture whitepapers; 0 if unknown.
int fp32_lanes_per_sm(int major, int minor) {
  if (major == 7 || (major == 8 && minor == 0)) return 64;  // Volta, Turing, A100
  if (major >= 8) return 128;                               // GA10x, Ada, Hopper, Blackwell
  return 0;
}

// ---------------------------------------------------------------- kernels

// y = alpha * x. One thread per element; the last block may reach past n, hence the guard.
__global__ void scale_kernel(const float* x, float alpha, float* y, int64_t n) {
  const int64_t i = global_index(blockIdx.x, blockDim.x, threadIdx.x);
  if (i < n) y[i] = alpha * x[i];
}

// c = a + b, the same pattern with two inputs.
__global__ void add_kernel(const float* a, const float* b, float* c, int64_t n) {
  const int64_t i = global_index(blockIdx.x, blockDim.x, threadIdx.x);
  if (i < n) c[i] = a[i] + b[i];
}

// ---------------------------------------------------------------- launchers

unsigned int grid_size(int64_t n) {
  const int64_t blocks = blocks_for(n, kThreadsPerBlock);
  ZERO_CHECK(blocks <= INT_MAX, "expected at most 2^31 - 1 blocks, got ", blocks);
  return static_cast<unsigned int>(blocks);
}

void launch_scale(const float* x, float alpha, float* y, int64_t n) {
  if (n == 0) return;  // a grid of zero blocks is an invalid configuration
  scale_kernel<<<grid_size(n), kThreadsPerBlock>>>(x, alpha, y, n);
  ZERO_CUDA_LAUNCH_CHECK();
}

void launch_add(const float* a, const float* b, float* c, int64_t n) {
  if (n == 0) return;
  add_kernel<<<grid_size(n), kThreadsPerBlock>>>(a, b, c, n);
  ZERO_CUDA_LAUNCH_CHECK();
}

// ---------------------------------------------------------------- sections

struct DeviceFacts {
  double fp32_peak_flops = 0;  // 0 when the lanes per SM are unknown
};

DeviceFacts show_device() {
  std::printf("\n== 4. The device ==\n");
  int dev = 0;
  ZERO_CUDA_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp p{};
  ZERO_CUDA_CHECK(cudaGetDeviceProperties(&p, dev));
  // CUDA 13 removed clockRate and memoryClockRate from cudaDeviceProp; the
  // attributes still report them, in kHz.
  int sm_khz = 0, mem_khz = 0;
  ZERO_CUDA_CHECK(cudaDeviceGetAttribute(&sm_khz, cudaDevAttrClockRate, dev));
  ZERO_CUDA_CHECK(cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, dev));
  const int lanes = fp32_lanes_per_sm(p.major, p.minor);
  DeviceFacts facts;
  facts.fp32_peak_flops = 2.0 * lanes * p.multiProcessorCount * sm_khz * 1e3;  // FMA = 2 FLOPs
  const double dram_bytes_per_s = 2.0 * mem_khz * 1e3 * p.memoryBusWidth / 8;  // double data rate

  std::printf("%-34s %s (compute capability %d.%d)\n", "name", p.name, p.major, p.minor);
  std::printf("%-34s %d\n", "streaming multiprocessors (SMs)", p.multiProcessorCount);
  std::printf("%-34s %d threads\n", "warp size", p.warpSize);
  std::printf("%-34s %d\n", "max threads per block", p.maxThreadsPerBlock);
  std::printf("%-34s %d (= %d warps)\n", "max resident threads per SM",
              p.maxThreadsPerMultiProcessor, p.maxThreadsPerMultiProcessor / p.warpSize);
  std::printf("%-34s %zu KiB (up to %zu KiB if a kernel opts in)\n", "shared memory per block",
              p.sharedMemPerBlock / 1024, p.sharedMemPerBlockOptin / 1024);
  std::printf("%-34s %d MiB\n", "L2 cache", p.l2CacheSize / (1024 * 1024));
  std::printf("%-34s %.1f GiB\n", "global memory (DRAM)", p.totalGlobalMem / 1073741824.0);
  std::printf("%-34s %d MHz\n", "SM clock (max)", sm_khz / 1000);
  if (lanes > 0) {
    std::printf("%-34s %.1f TFLOP/s (%d SMs x %d lanes x 2 x clock)\n",
                "FP32 peak, no tensor cores", facts.fp32_peak_flops / 1e12,
                p.multiProcessorCount, lanes);
  }
  std::printf("%-34s %.0f GB/s (2 x %d MHz x %d-bit bus)\n", "DRAM bandwidth, on paper",
              dram_bytes_per_s / 1e9, mem_khz / 1000, p.memoryBusWidth);
  return facts;
}

struct Measured {
  const char* name;
  double bytes;  // read + written per call
  float ms;
};

// Section 5. Returns the number of mismatches against the CPU.
int measure_kernels(bool quick, const DeviceFacts& facts) {
  const int64_t n = quick ? int64_t{1} << 20 : int64_t{1} << 28;  // 1M or 256M floats
  const size_t bytes = sizeof(float) * static_cast<size_t>(n);
  const int warmup = quick ? 2 : 3, reps = quick ? 5 : 20;
  const float alpha = 2.5f;
  std::printf("\n== 5. Memory-bound kernels against the copy bandwidth ==\n");
  std::printf("n = %lld floats (%.0f MiB per array); median of %d runs after %d warm-up\n",
              static_cast<long long>(n), bytes / 1048576.0, reps, warmup);

  // Inputs made on the host so the CPU can compute the reference; values are exact
  // in float (multiples of 1/4), which makes the expected results easy to read.
  std::vector<float> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    a[static_cast<size_t>(i)] = static_cast<float>(i % 1000) * 0.25f;
    b[static_cast<size_t>(i)] = static_cast<float>(i % 777) - 300.0f;
  }
  DeviceFloats d_a(n), d_b(n), d_out(n);
  ZERO_CUDA_CHECK(cudaMemcpy(d_a.get(), a.data(), bytes, cudaMemcpyHostToDevice));
  ZERO_CUDA_CHECK(cudaMemcpy(d_b.get(), b.data(), bytes, cudaMemcpyHostToDevice));

  // Zero's tensors hold device memory too: copy the same inputs into them.
  const zero::TensorOption on_gpu = zero::TensorOption().OnDevice(zero::Device::Cuda());
  const zero::Tensor ta = zero::Tensor::Empty({n}, on_gpu);    // (n)
  const zero::Tensor tb = zero::Tensor::Empty({n}, on_gpu);    // (n)
  const zero::Tensor tout = zero::Tensor::Empty({n}, on_gpu);  // (n)
  ZERO_CUDA_CHECK(cudaMemcpy(ta.data(), d_a.get(), bytes, cudaMemcpyDeviceToDevice));
  ZERO_CUDA_CHECK(cudaMemcpy(tb.data(), d_b.get(), bytes, cudaMemcpyDeviceToDevice));

  // The versions, each with its CPU reference; validated once, then timed by
  // median_gpu_ms (tools/gpu_median.h): `warmup` untimed runs (the first launch pays
  // one-off costs: loading the kernel, touching fresh pages), then CUDA events around
  // each run. The GPU stamps the events on its own timeline, so they time the GPU
  // work, not the host's launch overhead; the median ignores an occasional slow run.
  std::vector<float> want_scale(a.size()), want_add(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    want_scale[i] = alpha * a[i];
    want_add[i] = a[i] + b[i];
  }
  struct Version {
    const char* name;
    double bytes;
    const std::vector<float>* want;
    float* out;
    std::function<void()> launch;
  };
  const Version versions[] = {
      {"cudaMemcpy D2D (copy)", 2.0 * bytes, &a, d_out.get(),
       [&] { ZERO_CUDA_CHECK(cudaMemcpy(d_out.get(), d_a.get(), bytes, cudaMemcpyDeviceToDevice)); }},
      {"scale_kernel", 2.0 * bytes, &want_scale, d_out.get(),
       [&] { launch_scale(d_a.get(), alpha, d_out.get(), n); }},
      {"add_kernel", 3.0 * bytes, &want_add, d_out.get(),
       [&] { launch_add(d_a.get(), d_b.get(), d_out.get(), n); }},
      {"zero::ops::add", 3.0 * bytes, &want_add, tout.data_ptr<float>(),
       [&] { zero::ops::add(ta, tb, tout); }},
  };

  int mismatches = 0;
  std::vector<Measured> results;
  std::vector<float> got(a.size());
  for (const Version& v : versions) {
    ZERO_CUDA_CHECK(cudaMemset(v.out, 0xff, bytes));  // NaN everywhere: a missed element shows
    v.launch();
    ZERO_CUDA_CHECK(cudaMemcpy(got.data(), v.out, bytes, cudaMemcpyDeviceToHost));
    const int bad = count_mismatches(v.name, got, *v.want);
    mismatches += bad;
    if (bad == 0) {
      results.push_back({v.name, v.bytes, zero::tools::median_gpu_ms(v.launch, warmup, reps)});
    }
  }

  std::printf("%-24s %12s %10s %10s %10s\n", "kernel", "MiB moved", "time (ms)", "GB/s",
              "% of copy");
  const double copy_gbs = results.empty() || results[0].ms <= 0
                              ? 0.0 : results[0].bytes / (results[0].ms * 1e6);
  for (const Measured& m : results) {
    const double gbs = m.bytes / (m.ms * 1e6);
    std::printf("%-24s %12.0f %10.4f %10.1f %9.1f%%\n", m.name, m.bytes / 1048576.0, m.ms, gbs,
                copy_gbs > 0 ? 100.0 * gbs / copy_gbs : 0.0);
  }
  if (quick) {
    std::printf("(--quick: %.0f MiB per array fits in L2, so these numbers time the cache, not\n"
                " DRAM; run without --quick for the real roofline)\n", bytes / 1048576.0);
  }
  if (results.size() == 4 && copy_gbs > 0) {
    const double pct = 100.0 * (results[3].bytes / (results[3].ms * 1e6)) / copy_gbs;
    std::printf("target: zero::ops::add >= 95%% of copy bandwidth: %.1f%%, %s\n", pct,
                pct >= 95.0 ? "met" : "NOT met");
    // The roofline: attainable FLOP/s = min(peak, intensity x bandwidth).
    if (facts.fp32_peak_flops > 0) {
      const double ridge = facts.fp32_peak_flops / (copy_gbs * 1e9);
      std::printf("roofline: ridge point = FP32 peak / copy bandwidth = %.1f FLOP/byte\n", ridge);
      const double add_flops = static_cast<double>(n) / (results[2].ms * 1e-3);
      std::printf("add_kernel at 1/12 FLOP/byte: %.3f TFLOP/s measured, %.2f%% of the FP32 "
                  "peak: memory-bound\n", add_flops / 1e12, 100.0 * add_flops / facts.fp32_peak_flops);
    }
  }
  return mismatches;
}

}  // namespace

int run_gpu_part(bool quick) {
  const DeviceFacts facts = show_device();
  return measure_kernels(quick, facts);
}

}  // namespace ch01
