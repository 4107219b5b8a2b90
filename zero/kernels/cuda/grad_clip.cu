// Gradient clipping on CUDA, over many tensors a launch (multi_tensor.cuh): the sum of
// the squares of every gradient, the in-place scaling that clips them, and the one-thread
// kernel that turns the sum into the clip factor AdamW can apply instead. The CUDA side
// of `sum_of_squares`, `scale` and `clip_factor` in tensor_ops.h.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "zero/kernels/clip_rule.h"
#include "zero/kernels/cuda/block_reduce.cuh"
#include "zero/kernels/cuda/cuda_common.cuh"
#include "zero/kernels/cuda/multi_tensor.cuh"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {
namespace {

using cuda::for_each_table;
using cuda::four_aligned;
using cuda::kBlock;
using cuda::kChunk;
using cuda::kMaxTensors;
using cuda::load4;
using cuda::locate;
using cuda::rows_of;
using cuda::TensorTable;
using cuda::with_dtype;

// ---------------------------------------------------------------- kernels

// One partial sum of squares per block, written to partials[blockIdx.x]. A block of one
// chunk, four values a thread, spent more time in its block sum than in its loads (GPT-2:
// 0.28 ms for 0.5 GB, a third of the memory bandwidth), so each of at most
// kSquaresBlocks blocks takes the chunks blockIdx.x, blockIdx.x + gridDim.x, ... of the
// table (docs/speed_notes.md, item 46). The assignment is fixed: the same sum every run.
constexpr int32_t kSquaresBlocks = 1024;
__global__ void sum_of_squares_kernel(TensorTable table, int32_t chunks, float* partials) {
  __shared__ float shared[32];
  float acc = 0.0f;
  for (int32_t chunk = blockIdx.x; chunk < chunks; chunk += gridDim.x) {
    int t;
    int64_t begin, end;
    locate(table, t, begin, end, chunk);
    with_dtype(table.grad[t], table.grad_dtype[t], [&](auto* g) {
      const int64_t i = begin + 4 * static_cast<int64_t>(threadIdx.x);
      if (i + 4 <= end && four_aligned(g + i)) {
        float x[4];
        load4(g + i, x);
        acc += (x[0] * x[0] + x[1] * x[1]) + (x[2] * x[2] + x[3] * x[3]);
        return;
      }
      for (int64_t j = i; j < min(i + 4, end); ++j) {
        const float gj = static_cast<float>(g[j]);
        acc += gj * gj;
      }
    });
  }
  acc = cuda::block_sum(acc, shared);
  if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

// One block sums the partials in a fixed order, so the norm is the same on every run;
// four sums a thread keep four loads in flight (docs/speed_notes.md, item 42).
constexpr int kPartialsThreads = 1024;
__global__ void sum_partials_kernel(const float* partials, int64_t n, float* out) {
  __shared__ float shared[32];
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  const int64_t stride = 4 * static_cast<int64_t>(blockDim.x);
  for (int64_t i = threadIdx.x; i < n; i += stride) {
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const int64_t j = i + k * static_cast<int64_t>(blockDim.x);
      if (j < n) acc[k] += partials[j];
    }
  }
  const float total = cuda::block_sum((acc[0] + acc[1]) + (acc[2] + acc[3]), shared);
  if (threadIdx.x == 0) out[0] = total;
}

__global__ void scale_multi_kernel(TensorTable table, float factor) {
  int t;
  int64_t begin, end;
  locate(table, t, begin, end);
  with_dtype(table.grad[t], table.grad_dtype[t], [&](auto* g) {
    using T = std::remove_pointer_t<decltype(g)>;
    for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
      g[i] = static_cast<T>(static_cast<float>(g[i]) * factor);
    }
  });
}

// The CUDA twin of clip_factor_cpu (cpu/optimizer_cpu.cpp): both are clip_rule.h, so the
// norm and factor are clip_grad_norm's to the bit (Note [The clip factor on the device],
// optim/grad_clip.cpp).
__global__ void clip_factor_kernel(const float* sum_sq, float max_norm, float grad_scale,
                                   float* out) {
  const float norm = clip_norm(sum_sq[0], grad_scale);
  out[0] = norm;
  out[1] = clip_factor_value(norm, max_norm, grad_scale);
}

// ---------------------------------------------------------------- launchers

Tensor sum_of_squares_cuda(const std::vector<Tensor>& tensors) {
  ZERO_ASSERT(!tensors.empty(), "sum_of_squares_cuda needs at least one tensor");
  cuda::set_device(tensors.front());
  int64_t total_blocks = 0, tables = 1, filled = 0;  // an upper bound on the launches
  for (const Tensor& t : tensors) {
    total_blocks += (t.numel() + kChunk - 1) / kChunk;
    if (t.numel() > 0 && ++filled % kMaxTensors == 0) ++tables;
  }
  const TensorOption opt = TensorOption().OnDevice(tensors.front().device());  // FP32
  Tensor out = Tensor::Zeros({1}, opt);  // stays 0 when every tensor is empty
  if (total_blocks == 0) return out;
  Tensor partials = Tensor::Empty({std::min(total_blocks, tables * kSquaresBlocks)}, opt);
  auto add = [](TensorTable& table, int i, const Tensor& t) {
    table.grad[i] = t.data();
    table.grad_dtype[i] = t.dtype();
    return t.numel();
  };
  int64_t used = 0;  // partials written so far
  for_each_table(tensors, add, [&](const TensorTable& table, int32_t blocks, int64_t) {
    const int32_t grid = std::min(blocks, kSquaresBlocks);
    ZERO_ASSERT(used + grid <= partials.numel(), "sum_of_squares_cuda: ", used + grid,
                " partials for ", partials.numel());
    sum_of_squares_kernel<<<grid, kBlock, 0, cuda::current_stream()>>>(
        table, blocks, rows_of(partials) + used);
    ZERO_CUDA_LAUNCH_CHECK();
    used += grid;
  });
  sum_partials_kernel<<<1, kPartialsThreads, 0, cuda::current_stream()>>>(rows_of(partials),
                                                                      used, rows_of(out));
  ZERO_CUDA_LAUNCH_CHECK();
  return out;
}

void scale_cuda(const std::vector<Tensor>& tensors, float factor) {
  if (tensors.empty()) return;
  cuda::set_device(tensors.front());
  auto add = [](TensorTable& table, int i, const Tensor& t) {
    table.grad[i] = t.data();
    table.grad_dtype[i] = t.dtype();
    return t.numel();
  };
  for_each_table(tensors, add, [&](const TensorTable& table, int32_t blocks, int64_t) {
    scale_multi_kernel<<<blocks, kBlock, 0, cuda::current_stream()>>>(table, factor);
    ZERO_CUDA_LAUNCH_CHECK();
  });
}

void clip_factor_cuda(const Tensor& sum_sq, float max_norm, float grad_scale, const Tensor& out) {
  cuda::set_device(out);
  clip_factor_kernel<<<1, 1, 0, cuda::current_stream()>>>(rows_of(sum_sq), max_norm, grad_scale,
                                                          rows_of(out));
  ZERO_CUDA_LAUNCH_CHECK();
}

}  // namespace

ZERO_REGISTER_KERNEL(sum_of_squares, kCuda, sum_of_squares_cuda);
ZERO_REGISTER_KERNEL(scale, kCuda, scale_cuda);
ZERO_REGISTER_KERNEL(clip_factor, kCuda, clip_factor_cuda);

}  // namespace zero::ops
