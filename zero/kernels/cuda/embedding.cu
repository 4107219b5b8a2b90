// CUDA embedding: the forward gathers rows of the table; the backward scatters
// gradient rows back with atomicAdd (so when ids repeat, the order of additions,
// and the last bits of the sum, can vary between runs). An id outside the table
// gives a NaN row instead of an error: see Note [Bad indices on the GPU].
#include "zero/kernels/cuda/cuda_common.cuh"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {
namespace {

using cuda::grid_for;
using cuda::kBlock;

__global__ void embedding_forward_kernel(const float* w, const int32_t* ids, float* out, int64_t n,
                                         int64_t C, int64_t V) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n * C) return;
  const int32_t id = ids[i / C];
  out[i] = id >= 0 && id < V ? w[id * C + i % C] : NAN;
}

// Scatter-add with atomics: the order of additions (and so the last bits) may vary
// between runs when ids repeat.
__global__ void embedding_backward_kernel(const float* g, const int32_t* ids, float* gw, int64_t n,
                                          int64_t C, int64_t V) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n * C) return;
  const int32_t id = ids[i / C];
  if (id >= 0 && id < V) atomicAdd(&gw[id * C + i % C], g[i]);
}

void embedding_forward_cuda(const Tensor& weight, const Tensor& ids, const Tensor& out) {
  const int64_t n = ids.numel(), C = weight.size(1), V = weight.size(0);
  if (n == 0) return;
  cuda::set_device(out);
  const Tensor ids_c = contiguous(ids);
  embedding_forward_kernel<<<grid_for(n * C), kBlock, 0, cuda::current_stream()>>>(
      weight.data_ptr<float>(), ids_c.data_ptr<int32_t>(), out.data_ptr<float>(), n, C, V);
  ZERO_CUDA_LAUNCH_CHECK();
}

void embedding_backward_cuda(const Tensor& grad_out, const Tensor& ids, const Tensor& grad_weight) {
  const int64_t n = ids.numel(), C = grad_weight.size(1), V = grad_weight.size(0);
  cuda::set_device(grad_weight);
  fill(grad_weight, 0.0f);
  if (n == 0) return;
  const Tensor ids_c = contiguous(ids);
  const Tensor g = contiguous(grad_out);
  embedding_backward_kernel<<<grid_for(n * C), kBlock, 0, cuda::current_stream()>>>(
      g.data_ptr<float>(), ids_c.data_ptr<int32_t>(), grad_weight.data_ptr<float>(), n, C, V);
  ZERO_CUDA_LAUNCH_CHECK();
}

}  // namespace

ZERO_REGISTER_KERNEL(embedding_forward, kCuda, embedding_forward_cuda);
ZERO_REGISTER_KERNEL(embedding_backward, kCuda, embedding_backward_cuda);

}  // namespace zero::ops
