// Dispatch for the pieces of the chunked cross-entropy that `linear_cross_entropy`
// (autograd/ops/fused_ops.cpp) runs on one chunk of rows at a time. The mean is over
// the whole batch, so the count of non-ignored targets is computed once, kept in a
// one-element tensor on the device (no host synchronisation), and passed to each chunk.
// Shapes: logits [n, V] with rows of unit stride (a padded buffer's view), F32, BF16 or
// F16 (the backward's transposed copy the same, contiguous), targets [n] contiguous I32,
// lse [n] F32, count, loss and grad_loss one-element F32: the log-sum-exp and the loss
// are FP32 whatever the logits are.
#include "zero/kernels/checks.h"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {

ZERO_DEFINE_KERNEL(cross_entropy_count);
ZERO_DEFINE_KERNEL(cross_entropy_chunk_forward);
ZERO_DEFINE_KERNEL(cross_entropy_chunk_backward);

namespace {

// Logits [n, V], targets [n] and lse [n].
void check_chunk(const char* op, const Tensor& logits, const Tensor& targets, const Tensor& lse) {
  ZERO_CHECK(logits.dim() == 2, op, ": expected logits of shape [n, V], got ",
             shape_to_string(logits.sizes()));
  const int64_t n = logits.size(0);
  check_float_dtype(op, logits, "logits");
  ZERO_CHECK(logits.stride(1) == 1 && logits.stride(0) >= logits.size(1), op,
             ": expected logits whose rows have unit stride, got strides (", logits.stride(0),
             ", ", logits.stride(1), ")");
  check_tensor(op, targets, "targets", DataType::I32, {n});
  check_tensor(op, lse, "lse", DataType::F32, {n});
}

}  // namespace

void cross_entropy_count(const Tensor& targets, int ignore_index, int64_t vocab,
                         const Tensor& count) {
  const char* op = "cross_entropy_count";
  check_same_device(op, {&targets, &count});
  ZERO_CHECK(targets.dim() == 1, op, ": expected targets of shape [N], got ",
             shape_to_string(targets.sizes()));
  check_tensor(op, targets, "targets", DataType::I32, targets.sizes());
  check_scalar(op, count, "count");
  cross_entropy_count_stub(targets.device(), targets, ignore_index, vocab, count);
}

void cross_entropy_chunk_forward(const Tensor& logits, const Tensor& targets, int ignore_index,
                                 const Tensor& count, const Tensor& lse, const Tensor& loss,
                                 const Tensor& grad_loss) {
  const char* op = "cross_entropy_chunk_forward";
  check_same_device(op, {&logits, &targets, &count, &lse, &loss});
  check_chunk(op, logits, targets, lse);
  check_scalar(op, count, "count");
  check_scalar(op, loss, "loss");
  if (grad_loss.defined()) {
    check_same_device(op, {&logits, &grad_loss});
    check_scalar(op, grad_loss, "grad_loss");
  }
  if (logits.size(0) == 0) return;
  cross_entropy_chunk_forward_stub(logits.device(), logits, targets, ignore_index, count, lse, loss,
                                   grad_loss);
}

void cross_entropy_chunk_backward(const Tensor& logits, const Tensor& targets, const Tensor& lse,
                                  const Tensor& grad_loss, const Tensor& count, int ignore_index,
                                  const Tensor& transposed) {
  const char* op = "cross_entropy_chunk_backward";
  check_same_device(op, {&logits, &targets, &lse, &grad_loss, &count});
  check_chunk(op, logits, targets, lse);
  check_scalar(op, grad_loss, "grad_loss");
  check_scalar(op, count, "count");
  if (transposed.defined()) {
    check_same_device(op, {&logits, &transposed});
    check_tensor(op, transposed, "transposed", logits.dtype(),
                 {logits.size(1), logits.size(0)});
  }
  if (logits.numel() == 0) return;
  cross_entropy_chunk_backward_stub(logits.device(), logits, targets, lse, grad_loss, count, ignore_index,
                                     transposed);
}

}  // namespace zero::ops
