// CUDA embedding: the forward gathers rows of the table; the backward scatters
// gradient rows back with atomicAdd (so when ids repeat, the order of additions,
// and the last bits of the sum, can vary between runs). An id outside the table
// gives a NaN row instead of an error: see Note [Bad indices on the GPU].
//
// Both are templated on the element type (f32, bf16, f16). The atomics are always FP32:
// a 16-bit grad_weight is summed in an FP32 scratch table and rounded once into it
// afterwards, since an atomic add on 16-bit values would round after every addition
// (a row hit a thousand times would lose most of its gradient).
#include "zero/kernels/cuda/cuda_common.cuh"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/dtype_dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {
namespace {

using cuda::grid_for;
using cuda::kBlock;

template <typename T>
__global__ void embedding_forward_kernel(const T* w, const int32_t* ids, T* out, int64_t n,
                                         int64_t C, int64_t V) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n * C) return;
  const int32_t id = ids[i / C];
  out[i] = id >= 0 && id < V ? w[id * C + i % C] : static_cast<T>(NAN);
}

// Scatter-add with atomics: the order of additions (and so the last bits) may vary
// between runs when ids repeat.
template <typename T>
__global__ void embedding_backward_kernel(const T* g, const int32_t* ids, float* gw, int64_t n,
                                          int64_t C, int64_t V) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n * C) return;
  const int32_t id = ids[i / C];
  if (id >= 0 && id < V) atomicAdd(&gw[id * C + i % C], static_cast<float>(g[i]));
}

void embedding_forward_cuda(const Tensor& weight, const Tensor& ids, const Tensor& out) {
  const int64_t n = ids.numel(), C = weight.size(1), V = weight.size(0);
  if (n == 0) return;
  cuda::set_device(out);
  const Tensor ids_c = contiguous(ids);
  dispatch_dtype<FloatTypes>(weight.dtype(), "embedding", [&](auto tag) {
    using T = typename decltype(tag)::type;
    embedding_forward_kernel<T><<<grid_for(n * C), kBlock, 0, cuda::current_stream()>>>(
        weight.data_ptr<T>(), ids_c.data_ptr<int32_t>(), out.data_ptr<T>(), n, C, V);
    ZERO_CUDA_LAUNCH_CHECK();
  });
}

void embedding_backward_cuda(const Tensor& grad_out, const Tensor& ids, const Tensor& grad_weight,
                             bool accumulate) {
  const int64_t n = ids.numel(), C = grad_weight.size(1), V = grad_weight.size(0);
  cuda::set_device(grad_weight);
  const bool f32 = grad_weight.dtype() == DataType::F32;
  if (n == 0) {
    if (!accumulate) fill(grad_weight, 0.0f);
    return;
  }
  // The FP32 table the atomics add into: grad_weight itself, or a scratch copy. Adding
  // into an F32 gradient that has a term already skips both the zeros and a pass that
  // adds two tables (GPT-2's 154 MB one, whose tied head gave it its first term).
  const Tensor sums = f32 ? grad_weight
                          : Tensor::Empty(grad_weight.sizes(),
                                          TensorOption().OnDevice(grad_weight.device()));  // (V, C)
  if (!accumulate) {
    fill(sums, 0.0f);
  } else if (!f32) {
    convert(grad_weight, sums);
  }
  const Tensor ids_c = contiguous(ids);
  const Tensor g = contiguous(grad_out);
  dispatch_dtype<FloatTypes>(g.dtype(), "embedding backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    embedding_backward_kernel<T><<<grid_for(n * C), kBlock, 0, cuda::current_stream()>>>(
        g.data_ptr<T>(), ids_c.data_ptr<int32_t>(), sums.data_ptr<float>(), n, C, V);
    ZERO_CUDA_LAUNCH_CHECK();
  });
  if (!f32) convert(sums, grad_weight);
}

}  // namespace

ZERO_REGISTER_KERNEL(embedding_forward, kCuda, embedding_forward_cuda);
ZERO_REGISTER_KERNEL(embedding_backward, kCuda, embedding_backward_cuda);

}  // namespace zero::ops
