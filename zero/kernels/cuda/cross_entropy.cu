// CUDA cross-entropy fused with log-softmax, one block per row: the forward
// computes logsumexp and the row's loss, then one block averages over the rows
// that are not ignored, all on the device (no host synchronisation). The backward
// writes softmax - onehot, scaled by grad_loss / count. A target outside [0, V)
// gives a NaN loss: see Note [Bad indices on the GPU]. Logits and their gradient may be
// f32, bf16 or f16 (the kernels' T); lse, the row losses and the loss are FP32.
#include "zero/kernels/cuda/block_reduce.cuh"
#include "zero/kernels/cuda/cross_entropy.cuh"
#include "zero/kernels/cuda/cuda_common.cuh"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/dtype_dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {
namespace {

using cuda::grid_for;
using cuda::kBlock;

constexpr int kRowThreads = 256;

// Row i: lse[i] = logsumexp(logits[i]); row_loss[i] = lse - logits[i, t] (0 if ignored).
template <typename T>
__global__ void cross_entropy_rows_kernel(const T* logits, const int32_t* targets,
                                          int ignore_index, float* lse, float* row_loss, int64_t V) {
  cuda::cross_entropy_row(logits + blockIdx.x * V, targets[blockIdx.x], ignore_index, V,
                          &lse[blockIdx.x], &row_loss[blockIdx.x]);
}

// One block: loss = sum(row_loss) / count of non-ignored rows (0 if none); count saved.
__global__ void cross_entropy_mean_kernel(const float* row_loss, const int32_t* targets,
                                          int ignore_index, int64_t N, float* loss, float* count) {
  __shared__ float scratch[2][32];
  float s = 0.0f, c = 0.0f;
  for (int64_t i = threadIdx.x; i < N; i += blockDim.x) {
    s += row_loss[i];
    c += targets[i] != ignore_index ? 1.0f : 0.0f;
  }
  s = cuda::block_sum(s, scratch[0]);
  c = cuda::block_sum(c, scratch[1]);
  if (threadIdx.x == 0) {
    *loss = c > 0.0f ? s / c : 0.0f;
    if (count) *count = c;
  }
}

__global__ void count_targets_kernel(const int32_t* targets, int ignore_index, int64_t N, float* count) {
  __shared__ float scratch[32];
  float c = 0.0f;
  for (int64_t i = threadIdx.x; i < N; i += blockDim.x) c += targets[i] != ignore_index ? 1.0f : 0.0f;
  c = cuda::block_sum(c, scratch);
  if (threadIdx.x == 0) *count = c;
}

template <typename T>
__global__ void cross_entropy_backward_kernel(const T* logits, const int32_t* targets,
                                              const float* lse, const float* grad_loss,
                                              const float* count, int ignore_index, T* gl,
                                              int64_t V) {
  const int32_t t = targets[blockIdx.x];
  const int64_t base = blockIdx.x * V;
  const float scale = t == ignore_index || *count == 0.0f ? 0.0f : *grad_loss / *count;
  cuda::cross_entropy_grad_row(logits + base, gl + base, t, lse[blockIdx.x], scale, V);
}

void cross_entropy_forward_cuda(const Tensor& logits, const Tensor& targets, int ignore_index,
                                const Tensor& loss, const Tensor& lse) {
  const int64_t N = logits.size(0), V = logits.size(1);
  cuda::set_device(logits);
  if (N == 0) return fill(loss, 0.0f);
  Tensor row_loss = Tensor::Empty({N}, lse.options());  // (N) FP32
  dispatch_dtype<FloatTypes>(logits.dtype(), "cross_entropy", [&](auto tag) {
    using T = typename decltype(tag)::type;
    cross_entropy_rows_kernel<T><<<static_cast<unsigned>(N), kRowThreads, 0,
                                   cuda::current_stream()>>>(
        logits.data_ptr<T>(), targets.data_ptr<int32_t>(), ignore_index, lse.data_ptr<float>(),
        row_loss.data_ptr<float>(), V);
    ZERO_CUDA_LAUNCH_CHECK();
  });
  cross_entropy_mean_kernel<<<1, 1024, 0, cuda::current_stream()>>>(
      row_loss.data_ptr<float>(), targets.data_ptr<int32_t>(), ignore_index, N,
      loss.data_ptr<float>(), nullptr);
  ZERO_CUDA_LAUNCH_CHECK();
}

void cross_entropy_backward_cuda(const Tensor& logits, const Tensor& targets, const Tensor& lse,
                                 const Tensor& grad_loss, int ignore_index,
                                 const Tensor& grad_logits) {
  const int64_t N = logits.size(0), V = logits.size(1);
  if (N == 0) return;
  cuda::set_device(logits);
  Tensor count = Tensor::Empty({}, lse.options());  // () FP32
  count_targets_kernel<<<1, 1024, 0, cuda::current_stream()>>>(
      targets.data_ptr<int32_t>(), ignore_index, N, count.data_ptr<float>());
  ZERO_CUDA_LAUNCH_CHECK();
  dispatch_dtype<FloatTypes>(logits.dtype(), "cross_entropy backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    cross_entropy_backward_kernel<T><<<static_cast<unsigned>(N), kRowThreads, 0,
                                       cuda::current_stream()>>>(
        logits.data_ptr<T>(), targets.data_ptr<int32_t>(), lse.data_ptr<float>(),
        grad_loss.data_ptr<float>(), count.data_ptr<float>(), ignore_index,
        grad_logits.data_ptr<T>(), V);
    ZERO_CUDA_LAUNCH_CHECK();
  });
}

}  // namespace

ZERO_REGISTER_KERNEL(cross_entropy_forward, kCuda, cross_entropy_forward_cuda);
ZERO_REGISTER_KERNEL(cross_entropy_backward, kCuda, cross_entropy_backward_cuda);

}  // namespace zero::ops
