// Dispatch for fused scaled dot-product attention (forward and backward). The
// kernels never store the [Tq, Tk] score matrix: see cpu/attention_cpu.cpp for the
// row-by-row reference and Note [Flash attention] in cuda/attention.cu for the tiles.
// Shapes: q [B, H, Tq, D], k and v [B, H, Tk, D], out like q, lse [B, H, Tq]; all
// contiguous F32. Dropout on the probabilities (Note [Attention dropout] in
// cpu/attention_cpu.cpp) is a mask recomputed from Philox, never stored.
#include "zero/kernels/checks.h"
#include "zero/kernels/cpu/cpu_ops.h"
#include "zero/kernels/cuda/cuda_ops.h"

namespace zero::ops {
namespace {

// The CUDA kernels keep a [64, D] tile of each operand in shared memory.
constexpr int64_t kMaxCudaHeadDim = 128;

// Checks q, k, v against each other; returns {B, H, Tq, Tk, D}.
std::vector<int64_t> check_qkv(const char* op, const Tensor& q, const Tensor& k, const Tensor& v,
                               bool causal) {
  ZERO_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, op,
             ": expected q, k, v of shape [B, H, T, D], got ", shape_to_string(q.sizes()), ", ",
             shape_to_string(k.sizes()), ", ", shape_to_string(v.sizes()));
  const int64_t B = q.size(0), H = q.size(1), Tq = q.size(2), D = q.size(3), Tk = k.size(2);
  check_tensor(op, q, "q", DataType::F32, q.sizes());
  check_tensor(op, k, "k", DataType::F32, {B, H, Tk, D});
  check_tensor(op, v, "v", DataType::F32, {B, H, Tk, D});
  ZERO_CHECK(!causal || Tq <= Tk, op, ": causal attention expects no more queries than keys ",
             "(the queries are the last Tq positions), got Tq = ", Tq, " and Tk = ", Tk);
  ZERO_CHECK(D > 0, op, ": expected a head dimension D >= 1, got q of shape ",
             shape_to_string(q.sizes()));
  ZERO_CHECK(Tk > 0 || Tq == 0, op, ": expected at least one key, got k of shape ",
             shape_to_string(k.sizes()));
  ZERO_CHECK(q.device().is_cpu() || D <= kMaxCudaHeadDim, op,
             ": the CUDA kernels support head dimensions D <= ", kMaxCudaHeadDim, ", got D = ", D);
  return {B, H, Tq, Tk, D};
}

void check_dropout_p(const char* op, float dropout_p) {
  ZERO_CHECK(dropout_p >= 0.0f && dropout_p < 1.0f, op,
             ": expected a dropout probability in [0, 1), got ", dropout_p);
}

}  // namespace

void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                       float dropout_p, uint64_t seed, uint64_t offset, const Tensor& out,
                       const Tensor& lse) {
  const char* op = "attention";
  check_same_device(op, {&q, &k, &v, &out, &lse});
  const std::vector<int64_t> s = check_qkv(op, q, k, v, causal);
  check_dropout_p(op, dropout_p);
  check_tensor(op, out, "out", DataType::F32, q.sizes());
  check_tensor(op, lse, "lse", DataType::F32, {s[0], s[1], s[2]});
  if (out.numel() == 0 && lse.numel() == 0) return;
  if (q.device().is_cpu()) {
    attention_forward_cpu(q, k, v, causal, dropout_p, seed, offset, out, lse);
  } else {
    attention_forward_cuda(q, k, v, causal, dropout_p, seed, offset, out, lse);
  }
}

void attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                        const Tensor& lse, const Tensor& grad_out, bool causal, float dropout_p,
                        uint64_t seed, uint64_t offset, const Tensor& grad_q,
                        const Tensor& grad_k, const Tensor& grad_v) {
  const char* op = "attention backward";
  check_same_device(op, {&q, &k, &v, &out, &lse, &grad_out, &grad_q, &grad_k, &grad_v});
  const std::vector<int64_t> s = check_qkv(op, q, k, v, causal);
  check_dropout_p(op, dropout_p);
  check_tensor(op, out, "out", DataType::F32, q.sizes());
  check_tensor(op, lse, "lse", DataType::F32, {s[0], s[1], s[2]});
  check_tensor(op, grad_out, "grad_out", DataType::F32, q.sizes());
  check_tensor(op, grad_q, "grad_q", DataType::F32, q.sizes());
  check_tensor(op, grad_k, "grad_k", DataType::F32, k.sizes());
  check_tensor(op, grad_v, "grad_v", DataType::F32, v.sizes());
  if (q.device().is_cpu()) {
    attention_backward_cpu(q, k, v, out, lse, grad_out, causal, dropout_p, seed, offset, grad_q,
                           grad_k, grad_v);
  } else {
    attention_backward_cuda(q, k, v, out, lse, grad_out, causal, dropout_p, seed, offset, grad_q,
                            grad_k, grad_v);
  }
}

}  // namespace zero::ops
