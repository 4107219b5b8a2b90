// CPU cross-entropy fused with log-softmax, over contiguous logits [N, V].
//
// Row i's loss is -log_softmax(logits[i])[t] = lse_i - logits[i, t], where
// lse_i = logsumexp(logits[i]) is computed stably (see Note [Stable softmax] in
// softmax_cpu.cpp) and saved, so the backward needs only exp(logits - lse) for the
// softmax: d loss / d logits[i] = (softmax(logits[i]) - onehot(t)) / count.
// Rows whose target is ignore_index contribute nothing and count for nothing.
#include "zero/kernels/cpu/cross_entropy_rows.h"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {
namespace {

void cross_entropy_forward_cpu(const Tensor& logits, const Tensor& targets, int ignore_index,
                               const Tensor& loss, const Tensor& lse) {
  const int64_t n = logits.size(0), v = logits.size(1);
  const float* px = logits.data_ptr<float>();
  const int32_t* pt = targets.data_ptr<int32_t>();
  float* plse = lse.data_ptr<float>();
  const int64_t count = cpu_ce::check_targets("cross_entropy", pt, n, v, ignore_index);
  const double total = cpu_ce::forward_rows(px, pt, n, v, ignore_index, plse);
  // Every row ignored: define the loss as 0 (not 0/0), so a batch of padding is harmless.
  *loss.data_ptr<float>() = count > 0 ? static_cast<float>(total / count) : 0.0f;
}

void cross_entropy_backward_cpu(const Tensor& logits, const Tensor& targets, const Tensor& lse,
                                const Tensor& grad_loss, int ignore_index,
                                const Tensor& grad_logits) {
  const int64_t n = logits.size(0), v = logits.size(1);
  const float* px = logits.data_ptr<float>();
  const int32_t* pt = targets.data_ptr<int32_t>();
  const float* plse = lse.data_ptr<float>();
  float* pg = grad_logits.data_ptr<float>();
  const int64_t count = cpu_ce::check_targets("cross_entropy", pt, n, v, ignore_index);
  const float scale = count > 0 ? *grad_loss.data_ptr<float>() / static_cast<float>(count) : 0.0f;
  cpu_ce::backward_rows(px, pt, plse, n, v, ignore_index, scale, pg);
}

}  // namespace

ZERO_REGISTER_KERNEL(cross_entropy_forward, kCpu, cross_entropy_forward_cpu);
ZERO_REGISTER_KERNEL(cross_entropy_backward, kCpu, cross_entropy_backward_cpu);

}  // namespace zero::ops
