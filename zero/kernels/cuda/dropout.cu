// CUDA dropout from the Philox stream: element i is kept when
// philox_uniform(seed, offset + i) >= p, exactly as on the CPU, so the same seed
// gives the same mask on both devices. The backward regenerates the mask.
#include "zero/core/philox.h"
#include "zero/kernels/cuda/cuda_common.cuh"
#include "zero/kernels/cuda/cuda_ops.h"

namespace zero::ops {
namespace {

using cuda::grid_for;
using cuda::kBlock;

__global__ void dropout_kernel(const float* x, float* y, int64_t n, float p, uint64_t seed,
                               uint64_t offset) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const bool keep = philox_uniform(seed, offset + i) >= p;
  y[i] = keep ? x[i] / (1.0f - p) : 0.0f;
}

}  // namespace

void dropout_forward_cuda(const Tensor& x, float p, uint64_t seed, uint64_t offset, const Tensor& y) {
  const int64_t n = x.numel();
  if (n == 0) return;
  cuda::set_device(x);
  dropout_kernel<<<grid_for(n), kBlock, 0, cuda::current_stream()>>>(
      x.data_ptr<float>(), y.data_ptr<float>(), n, p, seed, offset);
  ZERO_CUDA_LAUNCH_CHECK();
}

// The backward applies the same mask and scale to the gradient.
void dropout_backward_cuda(const Tensor& grad_y, float p, uint64_t seed, uint64_t offset,
                           const Tensor& grad_x) {
  dropout_forward_cuda(grad_y, p, seed, offset, grad_x);
}

}  // namespace zero::ops
