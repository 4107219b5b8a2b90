// Chapter 05, GPU half: the same three adds as main.cpp on an [8192, 8192] f32
// output, through the library (ops::add: a float4 kernel for contiguous operands,
// a DimsArg kernel otherwise) and through this file's strided kernel, which calls
// your operand_offset (offset.h) on the GPU. Each result is checked against a CPU
// reference, then timed with CUDA events against a device-to-device copy.
#include <cuda_runtime.h>

#include <cstdio>
#include <string>
#include <vector>

#include "gpu.h"
#include "offset.h"
#include "tools/gpu_median.h"
#include "zero/core/cuda/cuda_check.cuh"
#include "zero/core/tensor.h"
#include "zero/kernels/tensor_ops.h"

namespace ch05 {
namespace {

using namespace zero;

constexpr int kThreads = 256;

// ---------------------------------------------------------------- kernel

// out (contiguous) = a + b, each operand read through its DimsArg. The two DimsArgs
// (136 bytes each) are kernel parameters: copied into the launch, no device buffer.
__global__ void strided_add_kernel(const float* a, DimsArg da, const float* b, DimsArg db,
                                   float* out, int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = a[operand_offset(i, da)] + b[operand_offset(i, db)];
}

void launch_strided_add(const Tensor& a, const Tensor& b, const Tensor& out) {
  const int64_t n = out.numel();
  const DimsArg da = broadcast_dims(a.sizes(), a.strides(), out.sizes());
  const DimsArg db = broadcast_dims(b.sizes(), b.strides(), out.sizes());
  const unsigned blocks = static_cast<unsigned>((n + kThreads - 1) / kThreads);
  strided_add_kernel<<<blocks, kThreads>>>(a.data_ptr<float>(), da, b.data_ptr<float>(), db,
                                           out.data_ptr<float>(), n);
  ZERO_CUDA_LAUNCH_CHECK();
}

}  // namespace

int run_gpu_part(bool quick) {
  const int64_t n = quick ? 1024 : 8192;
  const int reps = quick ? 5 : 20;
  const Device gpu = Device::Cuda(0);
  const TensorOption on_gpu = TensorOption().OnDevice(gpu);
  cudaDeviceProp prop;
  ZERO_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s; out = a + b' for [%lld, %lld] f32, median of %d runs (CUDA events)\n",
              prop.name, static_cast<long long>(n), static_cast<long long>(n), reps);

  const Tensor a = Tensor::Randn({n, n}, on_gpu);
  const Tensor b = Tensor::Randn({n, n}, on_gpu);
  const Tensor bt = Tensor::Randn({n, n}, on_gpu).Transpose(0, 1);  // (n, n), strides (1, n)
  const Tensor row = Tensor::Randn({n}, on_gpu);                    // (n), broadcast
  const Tensor out = Tensor::Empty({n, n}, on_gpu);
  const Tensor copy_dst = Tensor::Empty({n, n}, on_gpu);
  const int64_t numel = n * n, bytes = numel * 4;

  // CPU reference from the 2-D definitions (f32 adds round the same way on both).
  const std::vector<float> ha = a.ToVector<float>(), hb = b.ToVector<float>();
  const std::vector<float> hbt_base = bt.Transpose(0, 1).ToVector<float>();  // row-major b'^T
  const std::vector<float> hrow = row.ToVector<float>();
  struct Case { const char* name; Tensor b; int64_t bytes; std::vector<float> expected; };
  std::vector<Case> cases = {
      {"contiguous + contiguous", b, 3 * bytes, std::vector<float>(numel)},
      {"contiguous + transposed", bt, 3 * bytes, std::vector<float>(numel)},
      {"contiguous + broadcast row", row, 2 * bytes + n * 4, std::vector<float>(numel)}};
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      cases[0].expected[i * n + j] = ha[i * n + j] + hb[i * n + j];
      cases[1].expected[i * n + j] = ha[i * n + j] + hbt_base[j * n + i];
      cases[2].expected[i * n + j] = ha[i * n + j] + hrow[j];
    }
  }

  // Every time below: 3 untimed runs, then the median of `reps` between CUDA events.
  const float copy_ms = tools::median_gpu_ms([&] {
    ZERO_CUDA_CHECK(cudaMemcpyAsync(copy_dst.data(), a.data(), bytes, cudaMemcpyDeviceToDevice));
  }, 3, reps);
  const double copy_gbs = 2.0 * bytes / copy_ms / 1e6;
  std::printf("%-40s %8.1f us %7.0f GB/s  (baseline)\n", "cudaMemcpy device-to-device",
              copy_ms * 1e3, copy_gbs);

  int bad = 0;
  auto run = [&](const std::string& name, const Case& c, auto launch) {
    ZERO_CUDA_CHECK(cudaMemset(out.data(), 0, bytes));
    launch();  // validate before timing
    if (out.ToVector<float>() != c.expected) {
      std::printf("%-40s MISMATCH against the CPU reference\n", name.c_str());
      bad += 1;
      return;
    }
    const float ms = tools::median_gpu_ms(launch, 3, reps);
    const double gbs = c.bytes / ms / 1e6;
    std::printf("%-40s %8.1f us %7.0f GB/s %5.1f%%  ok\n", name.c_str(), ms * 1e3, gbs,
                100.0 * gbs / copy_gbs);
  };
  for (const Case& c : cases) {
    run(std::string("ops::add  ") + c.name, c, [&] { ops::add(a, c.b, out); });
  }
  for (const Case& c : cases) {
    run(std::string("your kernel ") + c.name, c, [&] { launch_strided_add(a, c.b, out); });
  }
  return bad;
}

}  // namespace ch05
