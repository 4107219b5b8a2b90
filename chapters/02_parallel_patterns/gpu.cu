// Chapter 02 · Parallel patterns, the GPU half: a ladder of sum reductions, from
// the naive to the library, each validated against the CPU and then timed against
// the speed of light, a device-to-device copy measured in the same run.
//   v1 atomics into one float  ->  v2 shared-memory tree per block  ->
//   v3 warp shuffles (your warp_sum) with float4 loads  ->  v4 CUB
// A reduction reads n * 4 bytes and writes almost nothing, so its bandwidth is
// bytes read / time; the copy's is (bytes read + bytes written) / time.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cub/cub.cuh>
#include <iterator>
#include <vector>

#include "gpu.h"
#include "tools/gpu_median.h"
#include "warp_reduce.h"
#include "zero/core/cuda/cuda_check.cuh"
#include "zero/core/tensor.h"
#include "zero/kernels/tensor_ops.h"

namespace ch02 {
namespace {

constexpr int kBlock = 256;  // threads per block: 8 warps

// ---------------------------------------------------------------- helpers

// The timer: `warmup` untimed runs, then CUDA events around each run (stamped on the
// GPU's timeline, so they time the GPU work) and the median of `reps`.
using zero::tools::median_gpu_ms;

// Device memory of `bytes` bytes, freed at the end of the scope.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) { ZERO_CUDA_CHECK(cudaMalloc(&ptr_, std::max<size_t>(bytes, 1))); }
  ~DeviceBuffer() { cudaFree(ptr_); }  // a destructor must not throw; nothing to do on error
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  template <typename T>
  T* as() const { return static_cast<T*>(ptr_); }

 private:
  void* ptr_ = nullptr;
};

// ---------------------------------------------------------------- kernels

// v1: every thread adds its element straight into *out. Correct, but the atomics
// on one address are serialised by the memory system: n of them, one at a time.
__global__ void reduce_v1_atomic(const float* x, int64_t n, float* out) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) atomicAdd(out, x[i]);
}

// v2: each block sums its 256 elements as a tree in shared memory (halving the
// active threads each level, with a barrier between levels), then adds its one
// partial sum atomically: n / 256 atomics instead of n.
__global__ void reduce_v2_shared_tree(const float* x, int64_t n, float* out) {
  __shared__ float partial[kBlock];
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  partial[threadIdx.x] = i < n ? x[i] : 0.0f;
  __syncthreads();
  for (int stride = kBlock / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(out, partial[0]);
}

// v3: a grid just large enough to fill the GPU walks the array (grid-stride loop)
// with 16-byte float4 loads, each thread keeping a private sum in a register.
// Warps then reduce with shuffles (register to register, no shared memory, no
// barrier), warp leaders meet in shared memory, and one atomic per block remains.
// Requires x to be 16-byte aligned (cudaMalloc gives 256).
__global__ void reduce_v3_warp_shuffle(const float* x, int64_t n, float* out) {
  __shared__ float warp_sums[kBlock / kWarpSize];
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t n4 = n / 4;
  const float4* x4 = reinterpret_cast<const float4*>(x);
  float acc = 0.0f;
#pragma unroll 4  // several loads in flight per thread before their additions
  for (int64_t k = first; k < n4; k += stride) {
    const float4 v = x4[k];
    acc += (v.x + v.y) + (v.z + v.w);
  }
  for (int64_t k = 4 * n4 + first; k < n; k += stride) acc += x[k];  // the n % 4 tail
  acc = warp_sum(acc);
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  if (lane == 0) warp_sums[warp] = acc;
  __syncthreads();
  if (warp == 0) {
    acc = warp_sum(lane < kBlock / kWarpSize ? warp_sums[lane] : 0.0f);
    if (lane == 0) atomicAdd(out, acc);
  }
}

// ---------------------------------------------------------------- launchers

// What every version gets: the input, the 1-float output, and the workspaces.
struct Problem {
  const float* x;
  int64_t n;
  float* out;
  unsigned int v3_blocks;  // enough resident blocks to fill every SM once
  void* cub_temp;
  size_t cub_temp_bytes;
};

unsigned int blocks_for(int64_t n) { return static_cast<unsigned int>((n + kBlock - 1) / kBlock); }

void run_v1(const Problem& p) {
  ZERO_CUDA_CHECK(cudaMemsetAsync(p.out, 0, sizeof(float)));
  reduce_v1_atomic<<<blocks_for(p.n), kBlock>>>(p.x, p.n, p.out);
  ZERO_CUDA_LAUNCH_CHECK();
}

void run_v2(const Problem& p) {
  ZERO_CUDA_CHECK(cudaMemsetAsync(p.out, 0, sizeof(float)));
  reduce_v2_shared_tree<<<blocks_for(p.n), kBlock>>>(p.x, p.n, p.out);
  ZERO_CUDA_LAUNCH_CHECK();
}

void run_v3(const Problem& p) {
  ZERO_CUDA_CHECK(cudaMemsetAsync(p.out, 0, sizeof(float)));
  reduce_v3_warp_shuffle<<<p.v3_blocks, kBlock>>>(p.x, p.n, p.out);
  ZERO_CUDA_LAUNCH_CHECK();
}

// v4: CUB's device-wide reduction (two passes, no atomics, same result every run).
void run_v4(const Problem& p) {
  size_t bytes = p.cub_temp_bytes;
  ZERO_CUDA_CHECK(cub::DeviceReduce::Sum(p.cub_temp, bytes, p.x, p.out, p.n));
}

struct Version {
  int number;
  const char* name;
  const char* idea;
  void (*run)(const Problem&);
};

// The ladder: this table drives --version and the printed list.
const Version kVersions[] = {
    {1, "reduce_v1_atomic", "every thread atomicAdds into one float", run_v1},
    {2, "reduce_v2_shared_tree", "shared-memory tree per block, one atomic per block", run_v2},
    {3, "reduce_v3_warp_shuffle", "grid-stride float4 loads, warp_sum shuffles", run_v3},
    {4, "reduce_v4_cub", "cub::DeviceReduce::Sum", run_v4},
};

// ---------------------------------------------------------------- the ladder

struct Row {
  const char* label;
  double bytes;  // counted for GB/s
  float ms;
};

void print_row(const Row& r, double copy_gbs) {
  const double gbs = r.bytes / (r.ms * 1e6);
  std::printf("%-28s %10.4f %10.1f %9.1f%%\n", r.label, r.ms, gbs, 100.0 * gbs / copy_gbs);
}

}  // namespace

int run_reduction_ladder(const std::vector<float>& x_host, double exact, int version, bool quick) {
  const int64_t n = static_cast<int64_t>(x_host.size());
  const size_t bytes = x_host.size() * sizeof(float);
  const int warmup = quick ? 1 : 2, reps = quick ? 5 : 10;
  std::printf("\n== 4. The reduction ladder on the GPU ==\n");
  ZERO_CHECK(version >= 0 && version <= static_cast<int>(std::size(kVersions)),
             "expected --version 0 (all) or 1..", std::size(kVersions), ", got ", version);
  for (const Version& v : kVersions) std::printf("  v%d  %-24s %s\n", v.number, v.name, v.idea);
  std::printf("sum of n = %lld floats (%.0f MiB), exact sum %.4f; median of %d runs\n",
              static_cast<long long>(n), bytes / 1048576.0, exact, reps);

  DeviceBuffer x(bytes), copy_dst(bytes), out(sizeof(float));
  ZERO_CUDA_CHECK(cudaMemcpy(x.as<float>(), x_host.data(), bytes, cudaMemcpyHostToDevice));
  int dev = 0, sms = 0, threads_per_sm = 0;
  ZERO_CUDA_CHECK(cudaGetDevice(&dev));
  ZERO_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  ZERO_CUDA_CHECK(cudaDeviceGetAttribute(&threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, dev));
  Problem p{x.as<float>(), n, out.as<float>(),
            static_cast<unsigned int>(sms * (threads_per_sm / kBlock)), nullptr, 0};
  ZERO_CUDA_CHECK(cub::DeviceReduce::Sum(nullptr, p.cub_temp_bytes, p.x, p.out, n));
  DeviceBuffer cub_temp(p.cub_temp_bytes);  // sized once, outside the timed runs
  p.cub_temp = cub_temp.as<void>();

  // Zero's sum_all on a tensor holding the same values.
  const zero::TensorOption on_gpu = zero::TensorOption().OnDevice(zero::Device::Cuda(dev));
  const zero::Tensor xt = zero::Tensor::Empty({n}, on_gpu);   // (n)
  const zero::Tensor sum_t = zero::Tensor::Empty({1}, on_gpu);  // (1)
  ZERO_CUDA_CHECK(cudaMemcpy(xt.data(), x.as<float>(), bytes, cudaMemcpyDeviceToDevice));

  // Baseline: the copy reads and writes n floats. Validated too: a copy that
  // silently failed would make every percentage meaningless.
  const auto copy = [&] {
    ZERO_CUDA_CHECK(cudaMemcpy(copy_dst.as<float>(), x.as<float>(), bytes, cudaMemcpyDeviceToDevice));
  };
  copy();
  std::vector<float> back(x_host.size());
  ZERO_CUDA_CHECK(cudaMemcpy(back.data(), copy_dst.as<float>(), bytes, cudaMemcpyDeviceToHost));
  int failures = back == x_host ? 0 : 1;
  if (failures != 0) std::printf("MISMATCH: the device-to-device copy changed the data\n");
  const Row copy_row{"cudaMemcpy D2D (baseline)", 2.0 * bytes, median_gpu_ms(copy, warmup, reps)};
  const double copy_gbs = copy_row.bytes / (copy_row.ms * 1e6);

  // Runs `run`, reads the float it wrote to `result`, and checks it equals `exact`
  // (the input makes every order of float additions exact; see main.cpp). The
  // result is set to NaN first, so a version that writes nothing cannot pass on
  // the answer an earlier version left behind.
  const auto validate = [&](const char* label, const auto& run, float* result) {
    ZERO_CUDA_CHECK(cudaMemset(result, 0xff, sizeof(float)));
    run();
    float got = 0.0f;
    ZERO_CUDA_CHECK(cudaMemcpy(&got, result, sizeof(float), cudaMemcpyDeviceToHost));
    if (static_cast<double>(got) == exact) return true;
    std::printf("MISMATCH %s: got %.4f, expected exactly %.4f\n", label, got, exact);
    return false;
  };

  std::printf("%-28s %10s %10s %10s\n", "version", "time (ms)", "GB/s", "% of copy");
  print_row(copy_row, copy_gbs);
  double best_pct = 0.0;
  const char* best = "none";
  for (const Version& v : kVersions) {
    if (version != 0 && v.number != version) continue;
    const auto run = [&] { v.run(p); };
    if (!validate(v.name, run, p.out)) {
      ++failures;
      continue;
    }
    const Row row{v.name, static_cast<double>(bytes), median_gpu_ms(run, warmup, reps)};
    print_row(row, copy_gbs);
    const double pct = 100.0 * row.bytes / (row.ms * 1e6) / copy_gbs;
    if (pct > best_pct) {
      best_pct = pct;
      best = v.name;
    }
  }
  const auto zero_sum = [&] { zero::ops::sum_all(xt, sum_t); };
  double zero_pct = 0.0;
  if (validate("zero::ops::sum_all", zero_sum, sum_t.data_ptr<float>())) {
    const Row row{"zero::ops::sum_all", static_cast<double>(bytes),
                  median_gpu_ms(zero_sum, warmup, reps)};
    print_row(row, copy_gbs);
    zero_pct = 100.0 * row.bytes / (row.ms * 1e6) / copy_gbs;
  } else {
    ++failures;
  }
  if (quick) {
    std::printf("(--quick: %.0f MiB fits in L2, so these numbers time the cache and the launch\n"
                " overhead, not DRAM; run without --quick for the real comparison)\n",
                bytes / 1048576.0);
  }
  std::printf("target: best version >= 90%% of copy: %s at %.1f%%, %s\n", best, best_pct,
              best_pct >= 90.0 ? "met" : "NOT met");
  std::printf("target: zero::ops::sum_all >= 90%% of copy: %.1f%%, %s\n", zero_pct,
              zero_pct >= 90.0 ? "met" : "NOT met");
  return failures;
}

}  // namespace ch02
