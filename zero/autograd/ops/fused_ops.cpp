// Forward and backward of the fused ops (attention, packed attention, linear +
// cross-entropy; the Linear is in linear_op.cpp) and their functional API, which checks
// the shapes a user is most likely to get wrong before anything runs. The kernels are in
// kernels/{attention,linear_cross_entropy}.cpp.
#include "zero/autograd/ops/fused_ops.h"

#include <algorithm>
#include <utility>

#include "zero/autograd/functional.h"
#include "zero/autograd/grad_mode.h"
#include "zero/kernels/attention_dropout.h"
#include "zero/kernels/precision.h"
#include "zero/kernels/tensor_ops.h"

namespace zero {
namespace autograd {
namespace {

// F32 on t's device: the row statistics (logsumexp, loss, counts) of every dtype.
TensorOption f32_like(const Tensor& t) { return t.options().WithDtype(DataType::F32); }

}  // namespace

// ---- Attention ---------------------------------------------------------------

std::vector<Tensor> OpAttention::OpValue_(const std::vector<Tensor>& in) {
  const Tensor& q = in[0];  // (B, H, Tq, D)
  Tensor out = Tensor::Empty(q.sizes(), q.options());                        // (B, H, Tq, D)
  lse_ = Tensor::Empty({q.size(0), q.size(1), q.size(2)}, f32_like(q));     // (B, H, Tq)
  ops::attention_forward(q, in[1], in[2], causal_, dropout_p_, seed_, offset_, out, lse_);
  out_ = out.Detach();
  return {out};
}

std::vector<Tensor> OpAttention::Backward_(const std::vector<Tensor>& grad) {
  const Tensor& q = inputs()[0];
  const Tensor& k = inputs()[1];
  const Tensor& v = inputs()[2];
  Tensor grad_q = Tensor::Empty(q.sizes(), q.options());  // (B, H, Tq, D)
  Tensor grad_k = Tensor::Empty(k.sizes(), k.options());  // (B, H, Tk, D)
  Tensor grad_v = Tensor::Empty(v.sizes(), v.options());  // (B, H, Tk, D)
  ops::attention_backward(q, k, v, out_, lse_, grad[0].Contiguous(), causal_, dropout_p_, seed_,
                          offset_, grad_q, grad_k, grad_v);
  return {needs_grad(0) ? grad_q : Tensor(), needs_grad(1) ? grad_k : Tensor(),
          needs_grad(2) ? grad_v : Tensor()};
}

void OpAttention::ReleaseSaved_() {
  out_ = Tensor();
  lse_ = Tensor();
}

// ---- Packed attention ----------------------------------------------------------

Tensor OpPackedAttention::Heads_(const Tensor& t, int64_t c0, int64_t c) const {
  // Views only (recording is off here): strides (T * width, D, width, 1) for t of
  // width 3C (qkv, its gradient) or C (y, its gradient).
  return t.Slice(2, c0, c0 + c).View({t.size(0), t.size(1), n_head_, c / n_head_})
      .Transpose(1, 2);  // (B, H, T, D)
}

std::vector<Tensor> OpPackedAttention::OpValue_(const std::vector<Tensor>& in) {
  const Tensor& qkv = in[0];  // (B, T, 3C)
  const int64_t b = qkv.size(0), t = qkv.size(1), c = qkv.size(2) / 3;
  Tensor y = Tensor::Empty({b, t, c}, qkv.options());          // (B, T, C)
  lse_ = Tensor::Empty({b, n_head_, t}, f32_like(qkv));        // (B, H, T)
  ops::attention_forward(Heads_(qkv, 0, c), Heads_(qkv, c, c), Heads_(qkv, 2 * c, c),
                         /*causal=*/true, dropout_p_, seed_, offset_, Heads_(y, 0, c), lse_);
  y_ = y.Detach();
  return {y};
}

std::vector<Tensor> OpPackedAttention::Backward_(const std::vector<Tensor>& grad) {
  const Tensor& qkv = inputs()[0];  // (B, T, 3C)
  const int64_t c = qkv.size(2) / 3;
  // The kernels take any layout with contiguous rows; anything else is copied.
  const Tensor g = grad[0].stride(-1) == 1 ? grad[0] : grad[0].Contiguous();  // (B, T, C)
  Tensor grad_qkv = Tensor::Empty(qkv.sizes(), qkv.options());  // (B, T, 3C)
  ops::attention_backward(Heads_(qkv, 0, c), Heads_(qkv, c, c), Heads_(qkv, 2 * c, c),
                          Heads_(y_, 0, c), lse_, Heads_(g, 0, c), /*causal=*/true, dropout_p_,
                          seed_, offset_, Heads_(grad_qkv, 0, c), Heads_(grad_qkv, c, c),
                          Heads_(grad_qkv, 2 * c, c));
  return {grad_qkv};
}

void OpPackedAttention::ReleaseSaved_() {
  y_ = Tensor();
  lse_ = Tensor();
}

// ---- Linear + cross-entropy --------------------------------------------------

int64_t OpLinearCrossEntropy::default_chunk_rows(int64_t vocab, int64_t rows,
                                                 int64_t element_bytes) {
  // At most 512 MiB of logits, in a multiple of 64 rows: GPT-2's 50304-word vocabulary
  // gets up to 2624 rows a chunk in FP32 and 5312 in BF16 (against 1.6 GiB and 0.8 GiB
  // for the full logits of B*T = 8192 rows); a character vocabulary gets the maximum,
  // 8192 rows (2 MiB). Each chunk after the first adds its share into the head's weight
  // gradient, a [V, C] FP32 read and written again: GPT-2's BF16 step took 17.1 ms with
  // chunks of 2048 rows (256 MiB), 16.7 with 4096, for 0.19 GiB more at its peak
  // (docs/speed_notes.md, item 72). The multiple keeps the rows of the transposed
  // gradient (Note [The head's weight gradient]) and each chunk's start 256-byte
  // aligned. With 1334 rows cuBLAS ran its kernels for misaligned operands, and the op
  // took 13.0 ms of GPT-2's TF32 step instead of 8.7 (item 21). The rows are then spread
  // evenly over the chunks they need: FP32's 8192 rows take 4 chunks of 2048, not 3 of
  // 2624 and a fourth of 320 (item 42).
  constexpr int64_t kChunkBytes = int64_t{512} << 20;
  const int64_t most = std::clamp<int64_t>(
      kChunkBytes / std::max<int64_t>(element_bytes, 1) / std::max<int64_t>(vocab, 1) / 64 * 64,
      256, 8192);
  const int64_t chunks = std::max<int64_t>((rows + most - 1) / most, 1);
  const int64_t even = ((rows + chunks - 1) / chunks + 63) / 64 * 64;
  return std::clamp<int64_t>(even, 64, most);
}

// Note [Gradients in the forward pass]
// The loss is a scalar at the root of the graph, so its upstream gradient g is a
// scalar too, and d loss / d x is g times what it is for g = 1. When the caller will
// differentiate (grad mode on and x or the weight requiring grad), the forward makes the
// gradients for g = 1 while each chunk of logits is still in memory, and the backward
// only scales them by g, or hands them over as they are when g is the ones Backward()
// made for the root (`is_unit_root_gradient`). Otherwise the backward would have to
// recompute every chunk of logits: one more [N, C] x [C, V] GEMM, 12.5 ms (6%) of
// GPT-2's FP32 step. llm.c's fused classifier makes the same trade.
// Note [Forward gradients in F16]
// Made for g = 1, the gradient of the logits is (softmax - onehot) / N: for GPT-2's
// vocabulary and N = 8192 rows most entries are near 1e-9, below F16's smallest
// subnormal (6e-8), so they would round to zero before g, which carries the loss scale
// (zero/train/loss_scaler.h), could lift them. In F16 the backward therefore makes the
// gradients, with the real g in grad_loss (one more GEMM). BF16 has FP32's range: there
// the forward makes them and the backward multiplies by g rounded to BF16 (exact for
// g = 1).
// Note [The head's weight gradient]
// grad_weight (V, C) = dlogits^T x sums over the N rows. Both operands in their natural
// layouts run along that sum with a stride (dlogits is (n, V), x is (N, C)), and on the
// Tensor Cores such a GEMM runs at about half the rate of one whose operands are
// contiguous along the sum (bench_linear: 178 against 346 TFLOP/s in TF32 for GPT-2's
// head). So the chunk's backward also writes dlogits transposed, (V, n), while the tile
// is in registers, and x is transposed once, (C, N): the GEMM then reads both along the
// sum. grad_x = dlogits W keeps the row-major dlogits, contiguous along its sum over V.
// The 16-bit Tensor-Core GEMMs read either layout at full rate (the blocks' Linear layers
// rely on it), so in BF16 and F16 the GEMM takes dlogits^T and x as views instead, and
// the chunk's backward writes dlogits once (docs/speed_notes.md, item 29). In TF32 one
// operand along the sum is enough (Note [K-major weight gradients in TF32] in
// kernels/cuda/split_tf32.cuh): x alone is transposed, and the chunk's backward writes
// dlogits once, a third fewer bytes (GPT-2's TF32 step 1.0 ms less on an H100, item 62).
void OpLinearCrossEntropy::Chunks_(const Tensor& x, const Tensor& weight, const Tensor& targets,
                                   const Tensor& loss, const Tensor& grad, Tensor& grad_x,
                                   Tensor& grad_weight) {
  const int64_t n = x.size(0), vocab = weight.size(0), chunk = std::min(n, chunk_rows_);
  // Note [A padded head]
  // With V not a multiple of 8 (a character vocabulary: 65 or 193), rows of V logits
  // start at addresses cuBLAS cannot read 16 bytes at a time, and it ran its kernels for
  // misaligned operands: 11 to 16 us each of the char model's six head GEMMs, plus split-K
  // reductions (docs/speed_notes.md, item 79). So on CUDA the logits live in rows of
  // `width`, V rounded up to 8, and the product and grad_x take the weight padded with
  // zero rows: the pad columns are x times a zero row, 0, and add nothing to grad_x. The
  // loss reads the V columns that count, as a view whose rows are `width` apart, and the
  // weight gradient's GEMM makes `width` rows, of which V are kept.
  const int64_t width = x.device().is_cuda() ? (vocab + 7) / 8 * 8 : vocab;
  Tensor padded = weight;  // (width, C)
  if (width != vocab) {
    padded = Tensor::Zeros({width, weight.size(1)}, weight.options());
    ops::copy(weight, padded.Slice(0, 0, vocab));
  }
  const Tensor weight_t = padded.Transpose(0, 1);  // (C, width), a view
  Tensor buffer = Tensor::Empty({chunk, width}, x.options());  // (chunk, width)
  Tensor buffer_t, x_t;  // (chunk * V) flat, for dlogits^T; (C, N): FP32 only
  const bool copy_x = grad_weight.defined() && x.dtype() == DataType::F32;
  const bool copy_transposed = copy_x && matmul_precision() != MatmulPrecision::kTf32;
  // In BF16 or F16 the chunks add into an FP32 sum, rounded once at the end.
  const bool sum_in_f32 =
      grad_weight.defined() && grad_weight.dtype() != DataType::F32 && n > chunk_rows_;
  // A padded head's weight gradient is made in `width` rows too, the pad rows dropped,
  // except from the transposed copy, which has V rows.
  const bool own_sum =
      grad_weight.defined() && (sum_in_f32 || (width != vocab && !copy_transposed));
  Tensor grad_weight_sum =
      own_sum ? Tensor::Empty({width, weight.size(1)}, sum_in_f32 ? f32_like(grad_weight)
                                                                   : grad_weight.options())
              : grad_weight;  // (width, C)
  if (copy_transposed) buffer_t = Tensor::Empty({chunk * vocab}, x.options());
  if (copy_x) {
    x_t = Tensor::Empty({x.size(1), n}, x.options());
    ops::copy(x.Transpose(0, 1), x_t);
  }
  for (int64_t r0 = 0; r0 < n; r0 += chunk_rows_) {
    const int64_t r1 = std::min(n, r0 + chunk_rows_), rows = r1 - r0;
    const Tensor x_chunk = x.Slice(0, r0, r1);          // (rows, C)
    const Tensor full = buffer.Slice(0, 0, rows);       // (rows, width)
    const Tensor logits = full.Slice(1, 0, vocab);      // (rows, V), rows width apart
    ops::matmul(x_chunk, weight_t, full);
    const bool wanted = grad_x.defined() || grad_weight.defined();
    // With no transposed copy to write, the forward makes dlogits too, reading each
    // row once (Note [One read of the head's rows] in kernels/cuda/linear_ce.cu).
    const bool at_once = loss.defined() && wanted && !copy_transposed;
    if (loss.defined()) {
      ops::cross_entropy_chunk_forward(logits, targets.Slice(0, r0, r1), ignore_index_, count_,
                                       lse_.Slice(0, r0, r1), loss, at_once ? grad : Tensor());
    }
    if (!wanted) continue;
    const Tensor logits_t = copy_transposed
                                ? buffer_t.Slice(0, 0, rows * vocab).View({vocab, rows})
                                : Tensor();  // (V, rows)
    if (!at_once) {
      ops::cross_entropy_chunk_backward(logits, targets.Slice(0, r0, r1), lse_.Slice(0, r0, r1),
                                        grad, count_, ignore_index_, logits_t);  // -> dlogits
    }
    if (grad_x.defined()) ops::matmul(full, padded, grad_x.Slice(0, r0, r1));  // (rows, C)
    // (width, C): the first chunk writes grad_weight, the others add into it.
    if (copy_x) {
      ops::matmul(copy_transposed ? logits_t : full.Transpose(0, 1),
                  x_t.Slice(1, r0, r1).Transpose(0, 1), grad_weight_sum, /*accumulate=*/r0 > 0);
    } else if (grad_weight.defined()) {
      ops::matmul(full.Transpose(0, 1), x_chunk, grad_weight_sum, /*accumulate=*/r0 > 0);
    }
  }
  if (own_sum) ops::convert(grad_weight_sum.Slice(0, 0, vocab), grad_weight);
}

namespace {

// Gradient buffers for `x` (N, C) and `weight` (V, C), undefined where not wanted.
// With no rows there are no chunks to write grad_weight, so it starts as zeros. A weight
// that is a cast of an FP32 parameter gets its gradient in FP32, where the chunks' sums
// then go directly (Note [Gradients past a cast] in engine.cpp).
void make_grads(const Tensor& x, const Tensor& weight, bool want_x, bool want_weight,
                Tensor& grad_x, Tensor& grad_weight) {
  if (want_x) grad_x = Tensor::Empty(x.sizes(), x.options());  // (N, C)
  if (want_weight) {
    const TensorOption options = weight.options().WithDtype(grad_dtype(weight));
    grad_weight = x.size(0) > 0 ? Tensor::Empty(weight.sizes(), options)
                                : Tensor::Zeros(weight.sizes(), options);  // (V, C)
  }
}

// `t` times the one-element F32 gradient `g`, in t's dtype (g rounded to it first).
Tensor scaled_by(const Tensor& t, const Tensor& g) {
  if (t.dtype() == g.dtype()) return t * g;
  Tensor g_t = Tensor::Empty(g.sizes(), g.options().WithDtype(t.dtype()));  // ()
  ops::convert(g, g_t);
  return t * g_t;
}

}  // namespace

std::vector<Tensor> OpLinearCrossEntropy::OpValue_(const std::vector<Tensor>& in) {
  const Tensor& x = in[0];        // (N, C)
  const Tensor& weight = in[1];   // (V, C)
  const Tensor& targets = in[2];  // (N)
  // The loss, its logsumexps and the count are FP32 whatever the dtype of x and weight.
  count_ = Tensor::Empty({}, f32_like(x));  // ()
  ops::cross_entropy_count(targets, ignore_index_, weight.size(0), count_);
  Tensor loss = Tensor::Zeros({}, f32_like(x));  // () the chunks add into it
  lse_ = Tensor::Empty({x.size(0)}, f32_like(x));  // (N)
  make_grads(x, weight, grad_x_in_forward_, grad_weight_in_forward_, grad_x_, grad_weight_);
  const Tensor one = grad_x_.defined() || grad_weight_.defined() ? Tensor::Ones({}, f32_like(x))
                                                                 : Tensor();
  Chunks_(x, weight, targets, loss, one, grad_x_, grad_weight_);
  return {loss};
}

std::vector<Tensor> OpLinearCrossEntropy::Backward_(const std::vector<Tensor>& grad) {
  Tensor grad_x, grad_weight;
  if (grad_x_in_forward_ || grad_weight_in_forward_) {
    // Made for g = 1 in the forward (Note [Gradients in the forward pass]): scaled by g,
    // or, when g is the ones Backward() gave the root, handed over as they are (the
    // multiplication read and wrote GPT-2's 154 MB head gradient); a second backward
    // through a kept graph then recomputes them.
    const bool unit = is_unit_root_gradient(grad[0]);
    const auto scaled = [&](Tensor& g_made) {
      return unit ? std::exchange(g_made, Tensor()) : scaled_by(g_made, grad[0]);
    };
    if (needs_grad(0) && grad_x_.defined()) grad_x = scaled(grad_x_);                 // (N, C)
    if (needs_grad(1) && grad_weight_.defined()) grad_weight = scaled(grad_weight_);  // (V, C)
  }
  const bool missing_x = needs_grad(0) && !grad_x.defined();
  const bool missing_weight = needs_grad(1) && !grad_weight.defined();
  if (missing_x || missing_weight) {  // not made in the forward: recompute the logits
    const Tensor& x = inputs()[0];
    const Tensor& weight = inputs()[1];
    Tensor gx, gw;
    make_grads(x, weight, missing_x, missing_weight, gx, gw);
    Chunks_(x, weight, inputs()[2], Tensor(), grad[0], gx, gw);
    if (missing_x) grad_x = gx;
    if (missing_weight) grad_weight = gw;
  }
  return {grad_x, grad_weight, Tensor()};
}

void OpLinearCrossEntropy::ReleaseSaved_() {
  lse_ = Tensor();
  count_ = Tensor();
  grad_x_ = Tensor();
  grad_weight_ = Tensor();
}

}  // namespace autograd

// ---- Functional API ------------------------------------------------------------

namespace {

// The Philox stream of an attention dropout mask over `bh_count` slices of tq x tk
// probabilities: the words AttentionDropout::stream_words asks for, taken from `gen` (the
// default generator when null), one per probability, masked or not, so that the mask's
// index formula needs no causal case. {0, 0} (unused) without dropout.
std::pair<uint64_t, uint64_t> attention_dropout_stream(float dropout_p, Generator* gen,
                                                       int64_t bh_count, int64_t tq, int64_t tk) {
  if (dropout_p == 0.0f) return {0, 0};
  Generator& g = gen ? *gen : default_generator();
  const uint64_t seed = g.seed();
  return {seed, g.Reserve(ops::AttentionDropout::stream_words(g.offset(), bh_count, tq, tk))};
}

}  // namespace

Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, float dropout_p,
                 Generator* gen) {
  ZERO_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4,
             "attention: expected q, k, v of shape [B, H, T, D], got ", shape_to_string(q.sizes()),
             ", ", shape_to_string(k.sizes()), ", ", shape_to_string(v.sizes()));
  ZERO_CHECK(dropout_p >= 0.0f && dropout_p < 1.0f,
             "attention: expected a dropout probability in [0, 1), got ", dropout_p);
  const auto [seed, offset] =
      attention_dropout_stream(dropout_p, gen, q.size(0) * q.size(1), q.size(2), k.size(2));
  return autograd::RunOp<autograd::OpAttention>({q.Contiguous(), k.Contiguous(), v.Contiguous()},
                                                causal, dropout_p, seed, offset);
}

Tensor causal_self_attention(const Tensor& qkv, int64_t n_head, float dropout_p,
                             Generator* gen) {
  ZERO_CHECK(qkv.dim() == 3, "causal_self_attention: expected qkv of shape [B, T, 3C], got ",
             shape_to_string(qkv.sizes()));
  ZERO_CHECK(n_head >= 1, "causal_self_attention: expected n_head >= 1, got ", n_head);
  ZERO_CHECK(qkv.size(2) % (3 * n_head) == 0 && qkv.size(2) > 0,
             "causal_self_attention: expected the last dimension of qkv [B, T, 3C] to be a ",
             "positive multiple of 3 * n_head = ", 3 * n_head, ", got qkv of shape ",
             shape_to_string(qkv.sizes()));
  ZERO_CHECK(dropout_p >= 0.0f && dropout_p < 1.0f,
             "causal_self_attention: expected a dropout probability in [0, 1), got ", dropout_p);
  const int64_t t = qkv.size(1);
  const auto [seed, offset] =
      attention_dropout_stream(dropout_p, gen, qkv.size(0) * n_head, t, t);
  const Tensor rows = qkv.stride(-1) == 1 ? qkv : qkv.Contiguous();  // (B, T, 3C)
  return autograd::RunOp<autograd::OpPackedAttention>({rows}, n_head, dropout_p, seed, offset);
}

Tensor linear_cross_entropy(const Tensor& x, const Tensor& weight, const Tensor& targets,
                            int ignore_index) {
  ZERO_CHECK(x.dim() == 2 && weight.dim() == 2 && x.size(1) == weight.size(1),
             "linear_cross_entropy: expected x [N, C] and weight [V, C], got ",
             shape_to_string(x.sizes()), " and ", shape_to_string(weight.sizes()),
             "; flatten (B, T, C) activations with Reshape({-1, C})");
  ZERO_CHECK(is_floating_point(x.dtype()) && weight.dtype() == x.dtype(),
             "linear_cross_entropy: expected x and weight of one floating-point dtype (f32, "
             "bf16 or f16), got ", to_string(x.dtype()), " and ", to_string(weight.dtype()));
  ZERO_CHECK(targets.dtype() == DataType::I32, "linear_cross_entropy: expected i32 targets, got ",
             to_string(targets.dtype()));
  ZERO_CHECK(targets.dim() == 1 && targets.size(0) == x.size(0),
             "linear_cross_entropy: expected targets of shape [", x.size(0), "] for x ",
             shape_to_string(x.sizes()), ", got ", shape_to_string(targets.sizes()));
  // Whether the caller will differentiate: then the forward makes the gradients too,
  // except in F16 (Note [Forward gradients in F16]).
  const bool recording = GradMode::enabled() && x.dtype() != DataType::F16;
  return autograd::RunOp<autograd::OpLinearCrossEntropy>(
      {x.Contiguous(), weight.Contiguous(), targets.Contiguous()}, ignore_index,
      autograd::OpLinearCrossEntropy::default_chunk_rows(weight.size(0), x.size(0),
                                                          dtype_size(x.dtype())),
      recording && x.requires_grad(), recording && weight.requires_grad());
}

}  // namespace zero
