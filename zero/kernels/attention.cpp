// Dispatch for fused scaled dot-product attention (forward and backward). The
// kernels never store the [Tq, Tk] score matrix: see cpu/attention_cpu.cpp for the
// row-by-row reference and Note [Flash attention] in cuda/attention.cuh for the tiles.
// Shapes: q [B, H, Tq, D], k and v [B, H, Tk, D], out like q, lse [B, H, Tq]. q, k, v, out
// and the gradients are F32, BF16 or F16 (all one dtype); lse is always F32.
// q, k, v, out and the gradients may be any views whose last dimension is contiguous
// (the GPT passes column ranges of its packed [B, T, 3C] qkv); the CUDA kernels read
// them in place, and so does the CPU's row loop (Note [Attention on strided rows]). lse is
// always contiguous.
// Dropout on the probabilities (Note [Attention dropout] in cpu/attention_cpu.cpp) is
// a mask recomputed from Philox, never stored.
// 16-bit operands go to the backends as they are: the CPU and the CUDA reference widen
// them (Note [16-bit attention through the FP32 kernels] in attention_widen.h), the fast
// CUDA kernels multiply them on the 16-bit Tensor Cores.
#include "zero/kernels/checks.h"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {

ZERO_DEFINE_KERNEL(attention_forward);
ZERO_DEFINE_KERNEL(attention_backward);
ZERO_DEFINE_KERNEL(attention_reference_forward);
ZERO_DEFINE_KERNEL(attention_reference_backward);

namespace {

// The CUDA kernels keep a [64, D] tile of each operand in shared memory.
constexpr int64_t kMaxCudaHeadDim = 128;

// `t` has `dtype`, exactly `sizes` and a last dimension of stride 1 (rows of D floats,
// the one layout requirement of the kernels); other strides are free.
void check_rows(const char* op, const Tensor& t, const char* what, const Shape& sizes,
                DataType dtype) {
  check_dtype(op, t, what, dtype);
  check_shape(op, t, what, sizes);
  ZERO_CHECK(t.size(-1) == 1 || t.stride(-1) == 1, op, ": expected ", what,
             " with a contiguous last dimension (stride 1), got strides ",
             shape_to_string(t.strides()), "; call .Contiguous()");
}

// Checks q, k, v against each other; returns {B, H, Tq, Tk, D}.
std::vector<int64_t> check_qkv(const char* op, const Tensor& q, const Tensor& k, const Tensor& v,
                               bool causal) {
  ZERO_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, op,
             ": expected q, k, v of shape [B, H, T, D], got ", shape_to_string(q.sizes()), ", ",
             shape_to_string(k.sizes()), ", ", shape_to_string(v.sizes()));
  const int64_t B = q.size(0), H = q.size(1), Tq = q.size(2), D = q.size(3), Tk = k.size(2);
  ZERO_CHECK(q.dtype() == DataType::F32 || q.dtype() == DataType::BF16 ||
                 q.dtype() == DataType::F16,
             op, ": expected q of dtype f32, bf16 or f16, got ", to_string(q.dtype()));
  check_rows(op, q, "q", q.sizes(), q.dtype());
  check_rows(op, k, "k", {B, H, Tk, D}, q.dtype());
  check_rows(op, v, "v", {B, H, Tk, D}, q.dtype());
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

// The forward's checks: q, k, v against each other, p, out and lse; false when there
// is nothing to compute.
bool check_forward(const char* op, const Tensor& q, const Tensor& k, const Tensor& v,
                   bool causal, float dropout_p, const Tensor& out, const Tensor& lse) {
  check_same_device(op, {&q, &k, &v, &out, &lse});
  const std::vector<int64_t> s = check_qkv(op, q, k, v, causal);
  check_drop_probability(op, dropout_p);
  check_rows(op, out, "out", q.sizes(), q.dtype());
  check_tensor(op, lse, "lse", DataType::F32, {s[0], s[1], s[2]});
  return out.numel() > 0 || lse.numel() > 0;
}

void check_backward(const char* op, const Tensor& q, const Tensor& k, const Tensor& v,
                    const Tensor& out, const Tensor& lse, const Tensor& grad_out, bool causal,
                    float dropout_p, const Tensor& grad_q, const Tensor& grad_k,
                    const Tensor& grad_v) {
  check_same_device(op, {&q, &k, &v, &out, &lse, &grad_out, &grad_q, &grad_k, &grad_v});
  const std::vector<int64_t> s = check_qkv(op, q, k, v, causal);
  check_drop_probability(op, dropout_p);
  check_rows(op, out, "out", q.sizes(), q.dtype());
  check_tensor(op, lse, "lse", DataType::F32, {s[0], s[1], s[2]});
  check_rows(op, grad_out, "grad_out", q.sizes(), q.dtype());
  check_rows(op, grad_q, "grad_q", q.sizes(), q.dtype());
  check_rows(op, grad_k, "grad_k", k.sizes(), q.dtype());
  check_rows(op, grad_v, "grad_v", v.sizes(), q.dtype());
}

}  // namespace

void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                       float dropout_p, uint64_t seed, uint64_t offset, const Tensor& out,
                       const Tensor& lse) {
  if (!check_forward("attention", q, k, v, causal, dropout_p, out, lse)) return;
  attention_forward_stub(q.device(), q, k, v, causal, dropout_p, seed, offset, out, lse);
}

void attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                        const Tensor& lse, const Tensor& grad_out, bool causal, float dropout_p,
                        uint64_t seed, uint64_t offset, const Tensor& grad_q,
                        const Tensor& grad_k, const Tensor& grad_v) {
  check_backward("attention backward", q, k, v, out, lse, grad_out, causal, dropout_p, grad_q,
                 grad_k, grad_v);
  attention_backward_stub(q.device(), q, k, v, out, lse, grad_out, causal, dropout_p, seed,
                          offset, grad_q, grad_k, grad_v);
}

void attention_reference_forward(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                                 float dropout_p, uint64_t seed, uint64_t offset,
                                 const Tensor& out, const Tensor& lse) {
  if (!check_forward("attention reference", q, k, v, causal, dropout_p, out, lse)) return;
  attention_reference_forward_stub(q.device(), q, k, v, causal, dropout_p, seed, offset, out,
                                     lse);
}

void attention_reference_backward(const Tensor& q, const Tensor& k, const Tensor& v,
                                  const Tensor& out, const Tensor& lse, const Tensor& grad_out,
                                  bool causal, float dropout_p, uint64_t seed, uint64_t offset,
                                  const Tensor& grad_q, const Tensor& grad_k,
                                  const Tensor& grad_v) {
  check_backward("attention reference backward", q, k, v, out, lse, grad_out, causal, dropout_p,
                 grad_q, grad_k, grad_v);
  attention_reference_backward_stub(q.device(), q, k, v, out, lse, grad_out, causal,
                                      dropout_p, seed, offset, grad_q, grad_k, grad_v);
}

}  // namespace zero::ops
