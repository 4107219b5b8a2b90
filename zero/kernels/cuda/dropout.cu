// CUDA dropout from the Philox stream: element i is kept when
// philox_uniform(seed, offset + i) >= p and scaled by 1/(1-p), exactly as on the CPU, so
// the same seed gives the same result on both devices. The backward regenerates the mask.
// Templated on the element type (f32, bf16, f16): scaled in float, rounded once. The
// forward can add a residual in the same pass (the Block's residual + dropout(x)).
#include "zero/core/philox.h"
#include "zero/kernels/cuda/cuda_common.cuh"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/dtype_dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {
namespace {

using cuda::grid_for;
using cuda::kBlock;

// Note [One Philox block a thread]
// Element i takes stream word offset + i, and one evaluation of the generator makes four
// words, those of block (offset + i) / 4. So thread t owns block offset / 4 + t and the
// up to four elements whose words it holds: one evaluation a thread whatever the offset
// (a thread that took four elements from its own index would need two blocks whenever
// offset is not a multiple of 4). When offset is such a multiple and the pointers are
// aligned, a thread's elements are one aligned group: one 16-byte (FP32) or 8-byte
// (16-bit) load and store instead of four each. Everything else takes the elementwise
// path, which skips the words before element 0 and after element n - 1. `residual`,
// when given, is added as a separate addition would add it: the dropped value rounded to
// T first, then the sum in float rounded once, so the fused op has the unfused bits.
template <typename T>
struct alignas(4 * sizeof(T)) Four {
  T v[4];
};

template <typename T>
__device__ inline T dropped(T x, uint32_t word, float p, float scale, const T* residual,
                            int64_t i) {
  // __fmul_rn: a product never fused with the addition below into one FMA.
  const float kept = __fmul_rn(static_cast<float>(x), scale);
  const T d = static_cast<T>(philox_word_to_uniform(word) >= p ? kept : 0.0f);
  return residual == nullptr ? d : static_cast<T>(static_cast<float>(residual[i]) +
                                                  static_cast<float>(d));
}

template <typename T>
__global__ void dropout_kernel(const T* x, T* y, const T* residual, int64_t n, float p,
                               uint64_t seed, uint64_t offset, const uint64_t* shift,
                               bool grouped) {
  // A CUDA graph's shift moves the draws by whole Philox blocks; `first` stays.
  if (shift != nullptr) offset += *shift;
  const uint64_t block = (offset >> 2) + blockIdx.x * static_cast<uint64_t>(blockDim.x) +
                         threadIdx.x;
  const int64_t first = static_cast<int64_t>(4 * block) - static_cast<int64_t>(offset);
  if (first >= n) return;
  const PhiloxBlock words = philox4x32(block, seed);
  const float scale = 1.0f / (1.0f - p);  // as the CPU kernel, so the values match bit for bit
  if (grouped && first + 4 <= n) {
    const Four<T> in = *reinterpret_cast<const Four<T>*>(x + first);
    Four<T> out;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      out.v[k] = dropped(in.v[k], words.x[k], p, scale, residual, first + k);
    }
    *reinterpret_cast<Four<T>*>(y + first) = out;
    return;
  }
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const int64_t i = first + k;
    if (i >= 0 && i < n) y[i] = dropped(x[i], words.x[k], p, scale, residual, i);
  }
}

bool aligned_to(const void* ptr, size_t bytes) {
  return reinterpret_cast<uintptr_t>(ptr) % bytes == 0;
}

void dropout_forward_cuda(const Tensor& x, float p, uint64_t seed, uint64_t offset,
                          const Tensor& y, const Tensor& residual) {
  const int64_t n = x.numel();
  if (n == 0) return;
  cuda::set_device(x);
  dispatch_dtype<FloatTypes>(x.dtype(), "dropout", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* r = residual.defined() ? residual.data_ptr<T>() : nullptr;
    const bool grouped = offset % 4 == 0 && aligned_to(x.data_ptr<T>(), sizeof(Four<T>)) &&
                         aligned_to(y.data_ptr<T>(), sizeof(Four<T>));
    // Blocks offset / 4 .. (offset + n - 1) / 4, a thread each.
    const int64_t blocks = static_cast<int64_t>((offset + n - 1) / 4 - offset / 4 + 1);
    dropout_kernel<T><<<grid_for(blocks), kBlock, 0, cuda::current_stream()>>>(
        x.data_ptr<T>(), y.data_ptr<T>(), r, n, p, seed, offset, cuda::philox_shift(), grouped);
    ZERO_CUDA_LAUNCH_CHECK();
  });
}

// The backward applies the same mask and scale to the gradient.
void dropout_backward_cuda(const Tensor& grad_y, float p, uint64_t seed, uint64_t offset,
                           const Tensor& grad_x) {
  dropout_forward_cuda(grad_y, p, seed, offset, grad_x, Tensor());
}

}  // namespace

ZERO_REGISTER_KERNEL(dropout_forward, kCuda, dropout_forward_cuda);
ZERO_REGISTER_KERNEL(dropout_backward, kCuda, dropout_backward_cuda);

}  // namespace zero::ops
