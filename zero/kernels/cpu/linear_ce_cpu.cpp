// CPU pieces of the chunked cross-entropy behind linear_cross_entropy: a count of
// the non-ignored targets, and per chunk of rows the forward (row logsumexp, loss
// summed into the batch mean) and the backward done in place on the recomputed
// logits. The maths is that of cross_entropy_cpu.cpp; only the normalisation
// differs: every chunk divides by the count of the whole batch, not its own. A chunk's
// logits (and its transposed gradient) may be f32, bf16 or f16; lse, count and loss FP32.
// A chunk's rows are logits.stride(0) values apart.
#include <algorithm>

#include "zero/kernels/cpu/cross_entropy_rows.h"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/dtype_dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {
namespace {

void cross_entropy_count_cpu(const Tensor& targets, int ignore_index, int64_t vocab,
                             const Tensor& count) {
  const int32_t* pt = targets.data_ptr<int32_t>();
  const int64_t n = targets.numel();
  cpu_ce::check_targets("linear_cross_entropy", pt, n, vocab, ignore_index);
  *count.data_ptr<float>() = static_cast<float>(std::count_if(
      pt, pt + n, [ignore_index](int32_t t) { return t != ignore_index; }));
}

void cross_entropy_chunk_backward_cpu(const Tensor& logits, const Tensor& targets,
                                      const Tensor& lse, const Tensor& grad_loss,
                                      const Tensor& count, int ignore_index,
                                      const Tensor& transposed);

void cross_entropy_chunk_forward_cpu(const Tensor& logits, const Tensor& targets, int ignore_index,
                                     const Tensor& count, const Tensor& lse, const Tensor& loss,
                                     const Tensor& grad_loss) {
  const int64_t n = logits.size(0), v = logits.size(1), ld = logits.stride(0);
  const int32_t* pt = targets.data_ptr<int32_t>();
  float* plse = lse.data_ptr<float>();
  cpu_ce::check_targets("linear_cross_entropy", pt, n, v, ignore_index, " of a chunk");
  double total = 0.0;
  dispatch_dtype<FloatTypes>(logits.dtype(), "cross_entropy_chunk_forward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    total = cpu_ce::forward_rows(logits.data_ptr<T>(), pt, n, v, ignore_index, plse, ld);
  });
  // Every row of the batch ignored: the loss is 0 (not 0/0), as in cross_entropy.
  const float c = *count.data_ptr<float>();
  if (c > 0.0f) *loss.data_ptr<float>() += static_cast<float>(total / c);
  if (grad_loss.defined()) {
    cross_entropy_chunk_backward_cpu(logits, targets, lse, grad_loss, count, ignore_index,
                                     Tensor());
  }
}

void cross_entropy_chunk_backward_cpu(const Tensor& logits, const Tensor& targets,
                                      const Tensor& lse, const Tensor& grad_loss,
                                      const Tensor& count, int ignore_index,
                                      const Tensor& transposed) {
  const int64_t n = logits.size(0), v = logits.size(1), ld = logits.stride(0);
  const int32_t* pt = targets.data_ptr<int32_t>();
  const float* plse = lse.data_ptr<float>();
  cpu_ce::check_targets("linear_cross_entropy", pt, n, v, ignore_index, " of a chunk");
  const float c = *count.data_ptr<float>();
  const float scale = c > 0.0f ? *grad_loss.data_ptr<float>() / c : 0.0f;
  dispatch_dtype<FloatTypes>(logits.dtype(), "cross_entropy_chunk_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* px = logits.data_ptr<T>();
    cpu_ce::backward_rows(px, pt, plse, n, v, ignore_index, scale, px, ld);  // in place
    if (!transposed.defined()) return;
    T* pt_out = transposed.data_ptr<T>();
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < v; ++j) pt_out[j * n + i] = px[i * ld + j];
    }
  });
}

}  // namespace

ZERO_REGISTER_KERNEL(cross_entropy_count, kCpu, cross_entropy_count_cpu);
ZERO_REGISTER_KERNEL(cross_entropy_chunk_forward, kCpu, cross_entropy_chunk_forward_cpu);
ZERO_REGISTER_KERNEL(cross_entropy_chunk_backward, kCpu, cross_entropy_chunk_backward_cpu);

}  // namespace zero::ops
