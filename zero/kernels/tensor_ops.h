/// @file
/// The kernel layer: every kernel of Zero, declared once, `ops::add(a, b, out)`.
///
/// Each function checks its arguments (devices agree, shapes fit, dtypes match),
/// then calls its kernel's stub, which runs the CPU (kernels/cpu/) or CUDA
/// (kernels/cuda/) implementation registered for the device (dispatch.h); the
/// signature written here is the one every implementation has. Outputs are allocated
/// by the caller (the autograd layer), and passed as `const Tensor&`: the handle is
/// const, the elements are not. Nothing here records gradients. Read next:
/// dispatch.h, then autograd/tensor_op.h.
#pragma once

#include <cstdint>
#include <vector>

#include "zero/core/tensor.h"

namespace zero::ops {

/// Element-wise binary operations.
enum class BinaryOp { kAdd, kSub, kMul, kDiv };
/// Element-wise unary operations. `kGelu` is the tanh approximation used by GPT-2;
/// `kSilu` is x * sigmoid(x) (also called swish).
enum class UnaryOp { kNeg, kExp, kLog, kSqrt, kTanh, kRelu, kGelu, kSilu };

/// Throws, naming both devices, unless every defined tensor is on the same device.
void check_same_device(const char* op, const std::vector<const Tensor*>& tensors);

/// @name Element-wise
/// @{

/// `out = a op b`; `a` and `b` broadcast to `out.sizes()`; any strides.
void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out);
/// `out = a op s`, or `s op a` when `scalar_first`.
void binary_scalar(BinaryOp op, const Tensor& a, float s, const Tensor& out,
                   bool scalar_first = false);
/// `out = a + b` (broadcasting).
inline void add(const Tensor& a, const Tensor& b, const Tensor& out) { binary(BinaryOp::kAdd, a, b, out); }
/// `out = a - b` (broadcasting).
inline void sub(const Tensor& a, const Tensor& b, const Tensor& out) { binary(BinaryOp::kSub, a, b, out); }
/// `out = a * b` (broadcasting).
inline void mul(const Tensor& a, const Tensor& b, const Tensor& out) { binary(BinaryOp::kMul, a, b, out); }
/// `out = a / b` (broadcasting).
inline void div(const Tensor& a, const Tensor& b, const Tensor& out) { binary(BinaryOp::kDiv, a, b, out); }
/// `out = f(x)`, same shape.
void unary(UnaryOp op, const Tensor& x, const Tensor& out);
/// `grad_x = grad_y * f'(x)`; `y = f(x)` is passed so exp, sqrt and tanh reuse it.
/// grad_x may be grad_y itself: each element is read before it is written.
void unary_backward(UnaryOp op, const Tensor& x, const Tensor& y, const Tensor& grad_y,
                    const Tensor& grad_x);
/// @}

/// @name Filling and copying
/// @{

/// Sets every element of `out` (any layout) to `value`.
void fill(const Tensor& out, float value);
/// `out[i] = start + i * step` over the row-major positions of a contiguous `out`.
void arange(const Tensor& out, double start, double step);
/// Uniform [0, 1): element i of contiguous `out` is `philox_uniform(seed, offset + i)`.
void rand_uniform(const Tensor& out, uint64_t seed, uint64_t offset);
/// Standard normal: element i of contiguous `out` is `philox_normal(seed, offset + i)`.
void rand_normal(const Tensor& out, uint64_t seed, uint64_t offset);
/// Copies `src` into `dst` element by element: same shape and dtype, any layouts,
/// any devices (a host↔device copy synchronises).
void copy(const Tensor& src, const Tensor& dst);
/// `src` converted element by element into `dst`'s dtype: same shape, same device, any
/// layouts. Floats round to nearest (ties to even) into BF16 and F16 and towards zero
/// into I32; BF16 and F16 widen to F32 exactly.
void convert(const Tensor& src, const Tensor& dst);
/// `t` itself if it is contiguous, else a contiguous copy on its device. Unlike
/// `Tensor::Contiguous` (autograd/, the layer above) it records no history, so kernels
/// use it for operands whose layout they cannot read.
Tensor contiguous(const Tensor& t);
/// `t` itself if it is contiguous, else a new, uninitialised contiguous tensor of its
/// shape, dtype and device: where a kernel that writes only row-major output puts its
/// result, to be copied into `t` afterwards unless it returned `t` itself.
Tensor contiguous_output(const Tensor& t);
/// @}

/// @name Reductions
/// `dim`-reductions write `out` with the input's shape except size 1 at `dim`.
/// @{

/// Sum over `dim`.
void sum(const Tensor& x, int dim, const Tensor& out);
/// Sum of all elements into one-element `out`.
void sum_all(const Tensor& x, const Tensor& out);
/// Mean over `dim`.
void mean(const Tensor& x, int dim, const Tensor& out);
/// Mean of all elements into one-element `out`.
void mean_all(const Tensor& x, const Tensor& out);
/// Maximum over `dim` and its (first) position as I32 `indices`.
void max(const Tensor& x, int dim, const Tensor& values, const Tensor& indices);
/// Maximum of all elements and its (first) row-major position.
void max_all(const Tensor& x, const Tensor& value, const Tensor& index);
/// Backward of `max` over `dim`: `grad_x` (overwritten) is zero except at each slice's
/// `indices` position, which gets that slice's `grad_values`. `grad_values` and `indices`
/// have `grad_x`'s shape with size 1 at `dim`. (`max_all` uses it on the flattened input.)
void max_backward(const Tensor& grad_values, const Tensor& indices, int dim,
                  const Tensor& grad_x);
/// @}

/// @name Softmax over the last dimension (contiguous inputs)
/// Every operand has one dtype (F32, BF16 or F16); row sums accumulate in FP32 or wider.
/// @{

/// `y = softmax(x)` row by row.
void softmax_forward(const Tensor& x, const Tensor& y);
/// `grad_x = y * (grad_y - sum(grad_y * y))` row by row.
void softmax_backward(const Tensor& y, const Tensor& grad_y, const Tensor& grad_x);
/// `y = x - logsumexp(x)` row by row.
void log_softmax_forward(const Tensor& x, const Tensor& y);
/// `grad_x = grad_y - exp(y) * sum(grad_y)` row by row.
void log_softmax_backward(const Tensor& y, const Tensor& grad_y, const Tensor& grad_x);
/// @}

/// @name Matrix multiplication
/// @{

/// `out[..., M, N] = a[..., M, K] @ b[..., K, N]`. Leading (batch) dimensions broadcast;
/// `a` and `b` may be transposed views (any strides); `out` is contiguous. With
/// `accumulate`, `out += a @ b` instead: the GEMM reads `out` and adds to it, which
/// saves a pass over a separate product when partial products are summed. `a` and `b`
/// share one dtype (F32, BF16 or F16); `out` has theirs or F32. 16-bit products are
/// accumulated in FP32 (on CUDA by cuBLAS on the Tensor Cores) and rounded once.
void matmul(const Tensor& a, const Tensor& b, const Tensor& out, bool accumulate = false);
/// The shape of `a @ b`, [broadcast batch..., M, N]; throws, naming both shapes, unless
/// both are at least 2-d, their inner dimensions K agree and their batch dimensions broadcast.
Shape matmul_shape(const Shape& a, const Shape& b);
/// @}

/// @name Layer normalisation over the last dimension C (contiguous inputs)
/// x, weight, bias, y, grad_y and grad_x share one dtype (F32, BF16 or F16); the
/// statistics, `mean` and `rstd` included, are FP32 whatever it is.
/// @{

/// `y = (x - mean) * rstd * weight + bias`; saves `mean` and `rstd` (one per row, F32).
void layer_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps,
                        const Tensor& y, const Tensor& mean, const Tensor& rstd);
/// Gradients of all three inputs (`grad_weight`, `grad_bias` are overwritten, not
/// accumulated). The two parameter gradients are FP32 sums over the rows, stored in x's
/// dtype or, both of them, in F32. With `grad_x_add` (like x, contiguous; it may be
/// grad_x itself), grad_x is the LayerNorm's gradient plus grad_x_add, added in FP32
/// after the gradient is rounded to x's dtype: the sum the unfused addition would make.
/// With `grad_x_sums` ([C], contiguous, x's dtype or F32), also the column sums of
/// grad_x as written, summed in FP32: the bias gradient of the Linear that made x.
void layer_norm_backward(const Tensor& grad_y, const Tensor& x, const Tensor& weight,
                         const Tensor& mean, const Tensor& rstd, const Tensor& grad_x,
                         const Tensor& grad_weight, const Tensor& grad_bias,
                         const Tensor& grad_x_add = Tensor(),
                         const Tensor& grad_x_sums = Tensor());
/// @}

/// @name Embedding
/// @{

/// `out[..., :] = weight[ids[...], :]`; throws for an id outside [0, V). `weight` and
/// `out` share one dtype (F32, BF16 or F16).
void embedding_forward(const Tensor& weight, const Tensor& ids, const Tensor& out);
/// `grad_weight` = sum of `grad_out` rows into the rows their ids name, summed in FP32
/// and stored in grad_out's dtype or in F32; with `accumulate`, added to what
/// grad_weight holds instead of overwriting it (a table whose gradient already has a
/// term from elsewhere, as a GPT's tied output head gives it).
void embedding_backward(const Tensor& grad_out, const Tensor& ids, const Tensor& grad_weight,
                        bool accumulate = false);
/// @}

/// @name Cross-entropy fused with log-softmax
/// `logits` and `grad_logits` share one dtype (F32, BF16 or F16); the log-sum-exp, the
/// loss and `lse` are FP32 whatever it is.
/// @{

/// Mean over rows whose target is not `ignore_index` of `logsumexp(logits[i]) -
/// logits[i, target[i]]`; 0 when every row is ignored. Saves `lse` [N]. Throws for a
/// target outside [0, V) that is not `ignore_index`.
void cross_entropy_forward(const Tensor& logits, const Tensor& targets, int ignore_index,
                           const Tensor& loss, const Tensor& lse);
/// `grad_logits = grad_loss * (softmax(logits) - onehot(target)) / count`, zero for ignored rows.
void cross_entropy_backward(const Tensor& logits, const Tensor& targets, const Tensor& lse,
                            const Tensor& grad_loss, int ignore_index, const Tensor& grad_logits);
/// @}

/// @name Dropout from the Philox stream (contiguous inputs)
/// Element i is kept when `philox_uniform(seed, offset + i) >= p`, then scaled by
/// 1/(1-p). The backward regenerates the mask from (seed, offset) instead of storing it.
/// Input and output share one dtype (F32, BF16 or F16), scaled in float.
/// @{

/// `y = x * mask / (1 - p)`, or with a `residual` of x's shape and dtype
/// `y = residual + x * mask / (1 - p)` in one pass, with the bits of the two ops (the
/// dropped value rounded to the dtype, then the sum rounded once).
void dropout_forward(const Tensor& x, float p, uint64_t seed, uint64_t offset, const Tensor& y,
                     const Tensor& residual = Tensor());
/// `grad_x = grad_y * mask / (1 - p)`.
void dropout_backward(const Tensor& grad_y, float p, uint64_t seed, uint64_t offset,
                      const Tensor& grad_x);
/// @}

/// @name Masking and concatenation
/// @{

/// `out = mask ? value : x`; `mask` is I32 (non-zero = fill) and broadcasts to `x`.
void masked_fill(const Tensor& x, const Tensor& mask, float value, const Tensor& out);
/// Joins `inputs` along `dim` into `out`; all other sizes must match.
void concat(const std::vector<Tensor>& inputs, int dim, const Tensor& out);
/// @}

/// @name Optimiser
/// Multi-tensor kernels: one call, and on CUDA one launch per few dozen tensors, for all
/// of a model's parameters (Note [Multi-tensor launches] in cuda/multi_tensor.cuh).
/// Every tensor is contiguous and all are on one device. Parameters and moments are F32
/// (the master weights of mixed precision); gradients may be F32, BF16 or F16, each
/// tensor its own, and are read into FP32.
/// @{

/// Hyper-parameters of one AdamW step.
struct AdamWParams {
  float lr = 1e-3f;           ///< Learning rate.
  float beta1 = 0.9f;         ///< First-moment decay.
  float beta2 = 0.999f;       ///< Second-moment decay.
  float eps = 1e-8f;          ///< Added to the root of the second moment.
  float weight_decay = 0.0f;  ///< Decoupled decay, applied as `p -= lr * wd * p`.
  int64_t step = 1;           ///< 1-based step number, for bias correction.
  /// Optional: a one-element F32 tensor on the parameters' device, read where the kernel
  /// runs (no copy to the host). When defined, every gradient element is multiplied by
  /// it in FP32 before the moments (the clip and loss unscale of optim::clip_factor,
  /// with no pass of their own), and when it is not finite the step writes nothing: no
  /// parameter, moment or param_copy changes (a skipped step). Undefined: no factor.
  Tensor grad_factor{};
  /// Optional, CUDA only: three F32 elements on the parameters' device that
  /// `adamw_scalars` wrote, the constants of a step. When defined the update reads them
  /// there and ignores `lr`, `weight_decay` and `step`, so that a CUDA graph's replays
  /// each take their own step's (core/cuda_graph.h). Undefined: computed here.
  Tensor scalars{};
};
/// One parameter of an AdamW step: four (or five) tensors of one shape.
struct AdamWTensor {
  Tensor param;       ///< F32, updated in place.
  Tensor grad;        ///< Read: F32, BF16 or F16.
  Tensor exp_avg;     ///< First moment (F32), updated in place.
  Tensor exp_avg_sq;  ///< Second moment (F32), updated in place.
  bool decay = true;  ///< Whether `weight_decay` applies to this parameter.
  /// Optional: receives the updated `param` rounded to its own dtype (BF16 or F16, for
  /// the next forward's 16-bit weights) in the same pass; undefined to skip.
  Tensor param_copy{};
};
/// One AdamW step in place on every entry (`hp.weight_decay` only where `decay`). With
/// `hp.grad_factor` and F32 gradients the result is, to the bit, that of `scale` by the
/// factor and then the step without it; a 16-bit gradient times the factor is not
/// rounded back to 16 bits first, as `scale` would round it.
void adamw(const std::vector<AdamWTensor>& tensors, const AdamWParams& hp);
/// Writes into `out` (three F32 elements on a GPU, for `AdamWParams::scalars`) the
/// constants `adamw` would compute from `hp` for step `hp.step`, by a launch of their own.
void adamw_scalars(const AdamWParams& hp, const Tensor& out);
/// One AdamW step in place on contiguous `param`, `m`, `v` from `grad`: `adamw` on one entry.
void adamw_update(const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v,
                  const AdamWParams& hp);
/// The sum of the squares of every element of every tensor (F32, BF16 or F16, summed
/// in FP32), as a one-element F32 tensor on their device (0 for an empty list).
/// Deterministic: a fixed order of partial sums.
Tensor sum_of_squares(const std::vector<Tensor>& tensors);
/// Multiplies every element of every tensor (F32, BF16 or F16) by `factor`, in place:
/// in FP32, rounded once into the tensor's dtype.
void scale(const std::vector<Tensor>& tensors, float factor);
/// The clip of optim::clip_grad_norm from `sum_sq`, the one-element F32 output of
/// `sum_of_squares`, without reading it on the host: writes `out`, two F32 elements on
/// the same device, with the true norm `float(sqrt(double(sum_sq)) / grad_scale)` and
/// the factor to multiply the gradients by, `clip / grad_scale` (just `clip` when
/// `grad_scale` is 1) where `clip = max_norm / (norm + 1e-6)` over the bound and 1
/// otherwise, in clip_grad_norm's float and double arithmetic to the bit. When the norm
/// is not finite the factor is NaN, which makes `adamw` skip the step.
/// One thread on CUDA: its cost is the launch.
void clip_factor(const Tensor& sum_sq, float max_norm, float grad_scale, const Tensor& out);
/// @}

/// @name Fused ops: Linear, attention, chunked cross-entropy
/// The kernels behind `linear`, `attention` and `linear_cross_entropy`
/// (autograd/ops/fused_ops.h). All tensors are F32 and contiguous unless stated.
/// @{

/// `out[N, out] = x[N, in] @ weight[out, in]^T + bias[out]`; `bias` may be undefined.
/// On CUDA one cuBLASLt call with the bias epilogue. All four share one dtype (F32,
/// BF16 or F16); the product is accumulated in FP32 and the bias added before `out`'s
/// one rounding. A defined `residual` [N, out] of that dtype is added too, `out =
/// residual + x @ weight^T + bias` (a GPT's c_proj onto its residual stream; it must not
/// overlap `out`): on CUDA it is the GEMM's C operand, added before the one rounding
/// (Note [The residual as the GEMM's C] in cuda/blas_lt.cu); on the CPU it is the
/// separate addition after the rounded Linear, the same bits as `linear` then `add`.
void linear_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& out,
                    const Tensor& residual = Tensor());
/// `grad_weight = grad_out^T @ x` [out, in] and `grad_bias` = column sums of `grad_out`
/// [out], both overwritten; either may be undefined (not computed). The input gradient
/// `grad_out @ weight` is a plain `matmul`. `grad_out` has x's dtype; each gradient has
/// it too or is F32, and both are FP32 sums rounded once.
void linear_backward_params(const Tensor& grad_out, const Tensor& x, const Tensor& grad_weight,
                            const Tensor& grad_bias);
/// `grad_bias` = column sums of `grad_out` [N, out] alone: `linear_backward_params`
/// without a weight gradient, for a bias whose sum is made apart from its weight's.
void linear_backward_bias(const Tensor& grad_out, const Tensor& grad_bias);
/// The first half of a GPT's MLP: `pre[N, out] = x @ weight^T + bias` (as
/// `linear_forward`) and `y = gelu(pre)` (the tanh approximation of `UnaryOp::kGelu`).
/// Writes both, `pre` for the backward's GeLU derivative. On the CPU this is exactly
/// `linear_forward` then `unary(kGelu)`. On CUDA it is one cuBLASLt call whose epilogue
/// adds the bias, stores `pre` and writes `y` (Note [GeLU in the GEMM's epilogue] in
/// cuda/gelu_epilogue.cu); `y` can then differ from `unary(kGelu, pre)` by cuBLASLt's own
/// evaluation of the formula, and a 16-bit `y` is rounded from the FP32 `pre` rather
/// than from the rounded one. Dtypes as in `linear_forward`; `y` and `pre` share x's.
void linear_gelu_forward(const Tensor& x, const Tensor& weight, const Tensor& bias,
                         const Tensor& y, const Tensor& pre);
/// The backward's step through the MLP's second Linear and its GeLU:
/// `grad_pre[N, H] = (grad_y[N, C] @ weight[C, H]) * dgelu(pre[N, H])`, dgelu being
/// GeLU's derivative, `weight` the second Linear's [out = C, in = H] and `pre` what
/// `linear_gelu_forward` stored; and, when `hidden` is defined, `hidden = gelu(pre)` [N,
/// H] in the same pass over pre, for a backward that did not keep the hidden layer. On
/// the CPU, and on CUDA for F32 in every precision mode, the results are exactly those of
/// `matmul`, then `unary_backward(kGelu)` and `unary(kGelu)`. For BF16 and F16 CUDA's
/// element-wise pass after the GEMM evaluates tanh with the hardware's approximation
/// (Note [GeLU's derivative after the GEMM] in cuda/gelu_epilogue.cu), which can move
/// either result by about 2^-11 of its size before the rounding to 16 bits. All share one
/// dtype (F32, BF16 or F16); `grad_pre` and `hidden` must not overlap the inputs or each
/// other. When `grad_bias` ([H], in that dtype or F32) is defined it receives the column
/// sums of grad_pre, the first Linear's bias gradient: FP32 sums of the stored values,
/// made on CUDA in the same pass (Note [The bias gradient in the GeLU pass]).
void matmul_gelu_backward(const Tensor& grad_y, const Tensor& weight, const Tensor& pre,
                          const Tensor& grad_pre, const Tensor& hidden = Tensor(),
                          const Tensor& grad_bias = Tensor());
/// `out = softmax(q k^T / sqrt(D) [+ causal mask]) v` for q [B, H, Tq, D], k and v
/// [B, H, Tk, D]; saves `lse` [B, H, Tq], each row's logsumexp of the scaled scores.
/// With `causal`, Tq <= Tk and query i sees keys j <= Tk - Tq + i (the mask is aligned
/// to the end, so q may hold only the newest positions). D <= 128 on CUDA.
/// With `dropout_p` in (0, 1), probability P[b, h, i, j] is kept (and scaled by
/// 1/(1 - p)) iff `AttentionDropout(p, seed, offset, Tq, Tk).factor(b*H + h, i, j)` is not
/// 0 (attention_dropout.h: one Philox block per 2 x 2 square of queries and keys); `lse`
/// is of the undropped scores. `dropout_p` = 0 ignores `seed` and `offset`.
/// q, k, v and out may be any views whose last dimension has stride 1 (e.g. column
/// ranges of a packed [B, T, 3C] qkv viewed as [B, H, T, D]): both devices read and write
/// them in place. `lse` is contiguous; `out` must not
/// overlap the inputs. q, k, v and out are F32, BF16 or F16, one dtype (CUDA multiplies
/// 16-bit operands on 16-bit Tensor Cores, straight from 16-bit tiles: Note [16-bit
/// fragments] in cuda/attention_tf32.cuh); lse is F32.
void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                       float dropout_p, uint64_t seed, uint64_t offset, const Tensor& out,
                       const Tensor& lse);
/// Gradients of `attention_forward` (all three overwritten), recomputing the
/// probabilities from the saved `out` and `lse` and the dropout mask from
/// (`dropout_p`, `seed`, `offset`), which must be those of the forward. Layouts as in
/// the forward: `grad_out` and the three gradients may be views with a last-dimension
/// stride of 1 (one packed [B, T, 3C] buffer for all three); the gradients must not
/// overlap each other or the inputs. On CUDA grad_q is summed over key tiles by atomic
/// additions, so its last bits can differ from run to run (Note [dQ by atomic additions]
/// in cuda/attention_backward.cu); grad_k and grad_v are deterministic.
void attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                        const Tensor& lse, const Tensor& grad_out, bool causal, float dropout_p,
                        uint64_t seed, uint64_t offset, const Tensor& grad_q,
                        const Tensor& grad_k, const Tensor& grad_v);
/// The plain kernels that `attention_forward` computes fast: the same arguments, checks
/// and results (within rounding), one thread per query row on CUDA
/// (cuda/attention_reference.cu), and on the CPU the same row loop as the fast path.
/// The way into the fused kernel for a reader, and what its test compares it with.
void attention_reference_forward(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                                 float dropout_p, uint64_t seed, uint64_t offset,
                                 const Tensor& out, const Tensor& lse);
/// The plain kernels of `attention_backward` (one thread per query row for `grad_q`,
/// one per key row for `grad_k` and `grad_v` on CUDA).
void attention_reference_backward(const Tensor& q, const Tensor& k, const Tensor& v,
                                  const Tensor& out, const Tensor& lse, const Tensor& grad_out,
                                  bool causal, float dropout_p, uint64_t seed, uint64_t offset,
                                  const Tensor& grad_q, const Tensor& grad_k,
                                  const Tensor& grad_v);
/// One-element F32 `count` = how many I32 `targets` [N] are not `ignore_index`. On the
/// CPU, also throws for a target outside [0, vocab) (naming its row); on CUDA such a
/// target makes the chunk's loss NaN.
void cross_entropy_count(const Tensor& targets, int ignore_index, int64_t vocab,
                         const Tensor& count);
/// One chunk of rows of a cross-entropy whose mean runs over a larger batch (logits
/// F32, BF16 or F16, and the transposed gradient of the backward the same): writes
/// `lse` [n] = row logsumexp of `logits` [n, V] and adds the chunk's summed row losses
/// divided by the batch's `count` to one-element `loss` (adds 0 when count is 0).
/// With a one-element F32 `grad_loss` it then also turns `logits` into their gradient
/// in place, as cross_entropy_chunk_backward with no transposed copy would (on CUDA
/// with one read of each row where it fits in shared memory).
void cross_entropy_chunk_forward(const Tensor& logits, const Tensor& targets, int ignore_index,
                                 const Tensor& count, const Tensor& lse, const Tensor& loss,
                                 const Tensor& grad_loss = Tensor());
/// In place: turns a chunk's `logits` [n, V] into their gradient
/// `grad_loss / count * (softmax(logits) - onehot(target))`, zero rows for ignored targets.
/// When `transposed` (contiguous [V, n]) is given it receives the same gradient
/// transposed, for a weight-gradient GEMM that reduces over the rows (the layout the
/// Tensor Cores read fastest, Note [FP32 GEMMs on TF32 Tensor Cores]).
void cross_entropy_chunk_backward(const Tensor& logits, const Tensor& targets, const Tensor& lse,
                                  const Tensor& grad_loss, const Tensor& count, int ignore_index,
                                  const Tensor& transposed = Tensor());
/// @}

}  // namespace zero::ops
