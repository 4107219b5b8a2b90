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

// Note [Philox blocks a thread]
// Element i takes stream word offset + i, and one evaluation of the generator makes four
// words, those of block (offset + i) / 4. So a thread owns whole blocks, kPack<T> / 4 of
// them (one for FP32, two for 16-bit types), and the elements whose words they hold: no
// block is evaluated twice whatever the offset. When offset is a multiple of 4 and the
// pointers are 16-byte aligned, a thread's elements are one aligned 16-byte pack: one
// load of x (and of the residual) and one store. The loads are issued before the Philox
// rounds, so the memory system fetches while the thread computes its words. One block a
// thread with 8-byte loads, drawn before loading, took 19.0 us for the char model's
// BF16 forward with its residual and 16.0 for the backward; this takes 17.2 and 15.2
// (docs/speed_notes.md, item 77).
// Everything else takes the elementwise path, which skips the words before element 0
// and after element n - 1. `residual`, when given, is added as a separate addition would
// add it: the dropped value rounded to T first, then the sum in float rounded once, so
// the fused op has the unfused bits.
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
  using P = cuda::Pack<T>;
  constexpr int kElems = cuda::kPack<T>, kBlocks = kElems / 4;
  // A CUDA graph's shift moves the draws by whole Philox blocks; `first` stays.
  if (shift != nullptr) offset += *shift;
  const uint64_t block =
      (offset >> 2) +
      kBlocks * (blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x);
  const int64_t first = static_cast<int64_t>(4 * block) - static_cast<int64_t>(offset);
  if (first >= n) return;
  const float scale = 1.0f / (1.0f - p);  // as the CPU kernel, so the values match bit for bit
  if (grouped && first + kElems <= n) {
    const P in = *reinterpret_cast<const P*>(x + first);
    P res;
    if (residual != nullptr) res = *reinterpret_cast<const P*>(residual + first);
    PhiloxBlock words[kBlocks];
#pragma unroll
    for (int b = 0; b < kBlocks; ++b) words[b] = philox4x32(block + b, seed);
    P out;
#pragma unroll
    for (int k = 0; k < kElems; ++k) {
      out.v[k] = dropped(in.v[k], words[k / 4].x[k % 4], p, scale,
                         residual == nullptr ? nullptr : res.v, k);
    }
    *reinterpret_cast<P*>(y + first) = out;
    return;
  }
#pragma unroll
  for (int b = 0; b < kBlocks; ++b) {
    const PhiloxBlock words = philox4x32(block + b, seed);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const int64_t i = first + 4 * b + k;
      if (i >= 0 && i < n) y[i] = dropped(x[i], words.x[k], p, scale, residual, i);
    }
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
    const bool grouped = offset % 4 == 0 && aligned_to(x.data_ptr<T>(), 16) &&
                         aligned_to(y.data_ptr<T>(), 16) && (r == nullptr || aligned_to(r, 16));
    // Blocks offset / 4 .. (offset + n - 1) / 4, kPack<T> / 4 a thread.
    const int64_t blocks = static_cast<int64_t>((offset + n - 1) / 4 - offset / 4 + 1);
    dropout_kernel<T><<<grid_for(blocks, cuda::kPack<T> / 4), kBlock, 0,
                        cuda::current_stream()>>>(
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
