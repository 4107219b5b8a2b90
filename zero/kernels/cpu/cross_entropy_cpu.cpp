// CPU cross-entropy fused with log-softmax, over contiguous logits [N, V].
//
// Row i's loss is -log_softmax(logits[i])[t] = lse_i - logits[i, t], where
// lse_i = logsumexp(logits[i]) is computed stably (see Note [Stable softmax] in
// softmax_cpu.cpp) and saved, so the backward needs only exp(logits - lse) for the
// softmax: d loss / d logits[i] = (softmax(logits[i]) - onehot(t)) / count.
// Rows whose target is ignore_index contribute nothing and count for nothing.
// Logits may be f32, bf16 or f16 (the row loops' element type); lse and loss are FP32.
#include "zero/kernels/cpu/cross_entropy_rows.h"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/dtype_dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {
namespace {

void cross_entropy_forward_cpu(const Tensor& logits, const Tensor& targets, int ignore_index,
                               const Tensor& loss, const Tensor& lse) {
  const int64_t n = logits.size(0), v = logits.size(1);
  const int32_t* pt = targets.data_ptr<int32_t>();
  float* plse = lse.data_ptr<float>();
  const int64_t count = cpu_ce::check_targets("cross_entropy", pt, n, v, ignore_index);
  double total = 0.0;
  dispatch_dtype<FloatTypes>(logits.dtype(), "cross_entropy", [&](auto tag) {
    using T = typename decltype(tag)::type;
    total = cpu_ce::forward_rows(logits.data_ptr<T>(), pt, n, v, ignore_index, plse);
  });
  // Every row ignored: define the loss as 0 (not 0/0), so a batch of padding is harmless.
  *loss.data_ptr<float>() = count > 0 ? static_cast<float>(total / count) : 0.0f;
}

void cross_entropy_backward_cpu(const Tensor& logits, const Tensor& targets, const Tensor& lse,
                                const Tensor& grad_loss, int ignore_index,
                                const Tensor& grad_logits) {
  const int64_t n = logits.size(0), v = logits.size(1);
  const int32_t* pt = targets.data_ptr<int32_t>();
  const float* plse = lse.data_ptr<float>();
  const int64_t count = cpu_ce::check_targets("cross_entropy", pt, n, v, ignore_index);
  const float scale = count > 0 ? *grad_loss.data_ptr<float>() / static_cast<float>(count) : 0.0f;
  dispatch_dtype<FloatTypes>(logits.dtype(), "cross_entropy backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    cpu_ce::backward_rows(logits.data_ptr<T>(), pt, plse, n, v, ignore_index, scale,
                          grad_logits.data_ptr<T>());
  });
}

}  // namespace

ZERO_REGISTER_KERNEL(cross_entropy_forward, kCpu, cross_entropy_forward_cpu);
ZERO_REGISTER_KERNEL(cross_entropy_backward, kCpu, cross_entropy_backward_cpu);

}  // namespace zero::ops
