// Dispatch for cross-entropy fused with log-softmax (forward and backward).
// Shapes: logits [N, V] and grad_logits contiguous, of one dtype (F32, BF16 or F16),
// targets [N] contiguous I32, lse [N] F32, loss and grad_loss one-element F32: the
// log-sum-exp and the loss are FP32 whatever the logits are. Targets are checked against
// [0, V) by the kernels themselves: the values live on the tensor's device.
#include "zero/kernels/checks.h"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {

ZERO_DEFINE_KERNEL(cross_entropy_forward);
ZERO_DEFINE_KERNEL(cross_entropy_backward);

namespace {

// Logits [N, V] and targets [N]; returns N.
int64_t check_logits_targets(const char* op, const Tensor& logits, const Tensor& targets) {
  ZERO_CHECK(logits.dim() == 2, op, ": expected logits of shape [N, V], got ",
             shape_to_string(logits.sizes()));
  const int64_t n = logits.size(0);
  check_float_dtype(op, logits, "logits");
  check_contiguous(op, logits, "logits");
  check_tensor(op, targets, "targets", DataType::I32, {n});
  return n;
}

}  // namespace

void cross_entropy_forward(const Tensor& logits, const Tensor& targets, int ignore_index,
                           const Tensor& loss, const Tensor& lse) {
  const char* op = "cross_entropy";
  check_same_device(op, {&logits, &targets, &loss, &lse});
  const int64_t n = check_logits_targets(op, logits, targets);
  check_scalar(op, loss, "loss");
  check_tensor(op, lse, "lse", DataType::F32, {n});
  cross_entropy_forward_stub(logits.device(), logits, targets, ignore_index, loss, lse);
}

void cross_entropy_backward(const Tensor& logits, const Tensor& targets, const Tensor& lse,
                            const Tensor& grad_loss, int ignore_index,
                            const Tensor& grad_logits) {
  const char* op = "cross_entropy backward";
  check_same_device(op, {&logits, &targets, &lse, &grad_loss, &grad_logits});
  const int64_t n = check_logits_targets(op, logits, targets);
  check_tensor(op, lse, "lse", DataType::F32, {n});
  check_scalar(op, grad_loss, "grad_loss");
  check_tensor(op, grad_logits, "grad_logits", logits.dtype(), logits.sizes());
  cross_entropy_backward_stub(logits.device(), logits, targets, lse, grad_loss, ignore_index, grad_logits);
}

}  // namespace zero::ops
