// CUDA dropout from the Philox stream: element i is kept when
// philox_uniform(seed, offset + i) >= p and scaled by 1/(1-p), exactly as on the CPU, so
// the same seed gives the same result on both devices. The backward regenerates the mask.
// Templated on the element type (f32, bf16, f16): scaled in float, rounded once.
#include "zero/core/philox.h"
#include "zero/kernels/cuda/cuda_common.cuh"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/dtype_dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {
namespace {

using cuda::grid_for;
using cuda::kBlock;

// Word k (0..3) of a Philox block, without indexing the array (which would put the
// block in local memory).
__device__ inline uint32_t word_of(const PhiloxBlock& b, uint32_t k) {
  return k == 0 ? b.x[0] : k == 1 ? b.x[1] : k == 2 ? b.x[2] : b.x[3];
}

// Four elements per thread. Their stream words offset + i .. offset + i + 3 lie in one or
// two Philox blocks, and one block evaluation makes four words, so a thread evaluates the
// generator once or twice instead of four times. The result is the same mask.
template <typename T>
__global__ void dropout_kernel(const T* x, T* y, int64_t n, float p, uint64_t seed,
                               uint64_t offset) {
  const int64_t first = 4 * (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x);
  if (first >= n) return;
  const uint64_t w0 = offset + static_cast<uint64_t>(first);
  const PhiloxBlock lo = philox4x32(w0 >> 2, seed);
  const PhiloxBlock hi = (w0 & 3) != 0 ? philox4x32((w0 >> 2) + 1, seed) : lo;
  const float scale = 1.0f / (1.0f - p);  // as the CPU kernel, so the values match bit for bit
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    if (first + j >= n) break;
    const uint64_t w = w0 + j;
    const uint32_t word = word_of((w >> 2) == (w0 >> 2) ? lo : hi, static_cast<uint32_t>(w & 3));
    const bool keep = philox_word_to_uniform(word) >= p;
    y[first + j] = static_cast<T>(keep ? static_cast<float>(x[first + j]) * scale : 0.0f);
  }
}

void dropout_forward_cuda(const Tensor& x, float p, uint64_t seed, uint64_t offset, const Tensor& y) {
  const int64_t n = x.numel();
  if (n == 0) return;
  cuda::set_device(x);
  dispatch_dtype<FloatTypes>(x.dtype(), "dropout", [&](auto tag) {
    using T = typename decltype(tag)::type;
    dropout_kernel<T><<<grid_for(n, 4), kBlock, 0, cuda::current_stream()>>>(
        x.data_ptr<T>(), y.data_ptr<T>(), n, p, seed, offset);
    ZERO_CUDA_LAUNCH_CHECK();
  });
}

// The backward applies the same mask and scale to the gradient.
void dropout_backward_cuda(const Tensor& grad_y, float p, uint64_t seed, uint64_t offset,
                           const Tensor& grad_x) {
  dropout_forward_cuda(grad_y, p, seed, offset, grad_x);
}

}  // namespace

ZERO_REGISTER_KERNEL(dropout_forward, kCuda, dropout_forward_cuda);
ZERO_REGISTER_KERNEL(dropout_backward, kCuda, dropout_backward_cuda);

}  // namespace zero::ops
