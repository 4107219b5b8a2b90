// CPU dropout. Element i is kept when philox_uniform(seed, offset + i) >= p and then
// scaled by 1/(1-p), so the expected value of every element is unchanged. The forward
// and the backward apply the same mask to different tensors, so both are one loop,
// templated on the element type (f32, bf16, f16: scaled in float, rounded once).
#include "zero/core/philox.h"
#include "zero/kernels/cpu/parallel.h"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/dtype_dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {
namespace {

// A residual, when given, is added as a separate addition would add it: the dropped
// value rounded to T, then the sum in float rounded once.
template <typename T>
void mask_loop(const Tensor& in, float p, uint64_t seed, uint64_t offset, const Tensor& out,
               const Tensor& residual) {
  const int64_t n = in.numel();
  const float scale = 1.0f / (1.0f - p);
  const T* pi = in.data_ptr<T>();
  const T* pr = residual.defined() ? residual.data_ptr<T>() : nullptr;
  T* po = out.data_ptr<T>();
#pragma omp parallel for if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) {
    const T d = static_cast<T>(
        philox_uniform(seed, offset + i) >= p ? static_cast<float>(pi[i]) * scale : 0.0f);
    po[i] = pr == nullptr ? d : static_cast<T>(static_cast<float>(pr[i]) + static_cast<float>(d));
  }
}

// out = (residual +) in * mask / (1 - p), for contiguous tensors of one shape.
void apply_mask(const Tensor& in, float p, uint64_t seed, uint64_t offset, const Tensor& out,
                const Tensor& residual) {
  dispatch_dtype<FloatTypes>(in.dtype(), "dropout", [&](auto tag) {
    mask_loop<typename decltype(tag)::type>(in, p, seed, offset, out, residual);
  });
}

void dropout_forward_cpu(const Tensor& x, float p, uint64_t seed, uint64_t offset,
                         const Tensor& y, const Tensor& residual) {
  apply_mask(x, p, seed, offset, y, residual);
}

void dropout_backward_cpu(const Tensor& grad_y, float p, uint64_t seed, uint64_t offset,
                          const Tensor& grad_x) {
  apply_mask(grad_y, p, seed, offset, grad_x, Tensor());
}

}  // namespace

ZERO_REGISTER_KERNEL(dropout_forward, kCpu, dropout_forward_cpu);
ZERO_REGISTER_KERNEL(dropout_backward, kCpu, dropout_backward_cpu);

}  // namespace zero::ops
