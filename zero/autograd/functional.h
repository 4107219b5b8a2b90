/// @file
/// The ops users call: `a + b`, `matmul(a, b)`, `softmax(x)`, `cross_entropy(...)`.
///
/// Each function runs one `TensorOp` (`RunOp<OpX>`) so that, when an input requires
/// grad, the result remembers how it was made and `Backward()` can differentiate it.
/// Every op is differentiable in its floating-point inputs (in the dtypes its kernels
/// take), and a gradient has its input's dtype: `to_dtype` is the one op that moves
/// values, and gradients, between dtypes. Shapes in comments: B batch, T time,
/// C channels, V vocabulary.
#pragma once

#include <vector>

#include "zero/core/generator.h"
#include "zero/core/tensor.h"

namespace zero {

/// @name Dtype
/// @{

/// `x` converted into `dtype`, differentiably: rounded to nearest (ties to even) into
/// BF16 or F16, widened exactly into F32, truncated towards zero into I32. The gradient
/// flows back converted into x's dtype, so an F32 parameter cast to BF16 for compute
/// still gets an F32 gradient. When x already has `dtype` (or is undefined) the result
/// is `x` itself, with no graph node. An I32 result carries no gradient.
Tensor to_dtype(const Tensor& x, DataType dtype);
/// @}

/// @name Element-wise arithmetic (NumPy broadcasting)
/// @{

/// `a + b`.
Tensor add(const Tensor& a, const Tensor& b);
/// `a - b`.
Tensor sub(const Tensor& a, const Tensor& b);
/// `a * b`.
Tensor mul(const Tensor& a, const Tensor& b);
/// `a / b`.
Tensor div(const Tensor& a, const Tensor& b);
/// `a + b`.
Tensor operator+(const Tensor& a, const Tensor& b);
/// `a - b`.
Tensor operator-(const Tensor& a, const Tensor& b);
/// `a * b`.
Tensor operator*(const Tensor& a, const Tensor& b);
/// `a / b`.
Tensor operator/(const Tensor& a, const Tensor& b);
/// `a + s`.
Tensor operator+(const Tensor& a, float s);
/// `a - s`.
Tensor operator-(const Tensor& a, float s);
/// `a * s`.
Tensor operator*(const Tensor& a, float s);
/// `a / s`.
Tensor operator/(const Tensor& a, float s);
/// `s + a`.
Tensor operator+(float s, const Tensor& a);
/// `s - a`.
Tensor operator-(float s, const Tensor& a);
/// `s * a`.
Tensor operator*(float s, const Tensor& a);
/// `s / a`.
Tensor operator/(float s, const Tensor& a);
/// `-a`.
Tensor operator-(const Tensor& a);
/// @}

/// @name Element-wise functions
/// @{

/// `-x`.
Tensor neg(const Tensor& x);
/// `e^x`.
Tensor exp(const Tensor& x);
/// Natural logarithm.
Tensor log(const Tensor& x);
/// Square root.
Tensor sqrt(const Tensor& x);
/// Hyperbolic tangent.
Tensor tanh(const Tensor& x);
/// `max(x, 0)`.
Tensor relu(const Tensor& x);
/// GeLU, tanh approximation: `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`.
Tensor gelu(const Tensor& x);
/// SiLU (swish), x * sigmoid(x), element-wise.
Tensor silu(const Tensor& x);
/// @}

/// @name Reductions
/// With `keepdim` the reduced dimension stays with size 1.
/// @{

/// Sum of all elements (0-d).
Tensor sum(const Tensor& x);
/// Sum over `dim`.
Tensor sum(const Tensor& x, int64_t dim, bool keepdim = false);
/// Mean of all elements (0-d).
Tensor mean(const Tensor& x);
/// Mean over `dim`.
Tensor mean(const Tensor& x, int64_t dim, bool keepdim = false);
/// Maximum of all elements (0-d); the gradient goes to the first maximal element.
Tensor max(const Tensor& x);
/// Maximum over `dim`; the gradient goes to the first maximal element of each slice.
Tensor max(const Tensor& x, int64_t dim, bool keepdim = false);
/// Position of the maximum over `dim` (I32, not differentiable).
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim = false);
/// @}

/// @name Normalisation and losses
/// @{

/// Softmax over the last dimension.
Tensor softmax(const Tensor& x);
/// Log-softmax over the last dimension (numerically stable).
Tensor log_softmax(const Tensor& x);
/// LayerNorm over the last dimension C: `(x - mean) / sqrt(var + eps) * weight + bias`,
/// `weight` and `bias` of shape [C].
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps = 1e-5f);
/// Mean cross-entropy of `logits` [N, V] against I32 `targets` [N], skipping rows whose
/// target is `ignore_index` (0-d result).
Tensor cross_entropy(const Tensor& logits, const Tensor& targets, int ignore_index = -100);
/// @}

/// @name Linear algebra
/// @{

/// Matrix product `a[..., M, K] @ b[..., K, N]`; batch dimensions broadcast; a 1-d
/// operand is not accepted (use `Unsqueeze`). On CUDA, the environment variable
/// the precision mode (zero/kernels/precision.h: MX_FAST_MATMUL or set_matmul_precision)
/// picks the arithmetic (chapter 07): by default IEEE FP32, cuBLAS's SGEMM; `3xtf32`,
/// large unbatched products as three TF32 products on the Tensor Cores ("split TF32",
/// about 6x SGEMM's error at K = 4096 and 20x less than TF32's); `tf32` or `fp16`, one
/// Tensor-Core product in that precision.
Tensor matmul(const Tensor& a, const Tensor& b);
/// @}

/// @name Indexing, masking, joining
/// @{

/// Rows of `weight` [V, C] picked by I32 `ids` [...]: result [..., C].
Tensor embedding(const Tensor& weight, const Tensor& ids);
/// `x` with `value` wherever I32 `mask` (broadcast to x) is non-zero.
Tensor masked_fill(const Tensor& x, const Tensor& mask, float value);
/// Joins tensors along `dim`; other sizes must match.
Tensor concat(const std::vector<Tensor>& tensors, int64_t dim);
/// @}

/// @name Regularisation
/// @{

/// Zeroes each element with probability `p` and scales the rest by 1/(1-p) when
/// `training`; the identity otherwise. The mask comes from `gen`'s Philox stream
/// (the default generator when null), so it is reproducible on any device.
Tensor dropout(const Tensor& x, float p, bool training = true, Generator* gen = nullptr);
/// `residual + dropout(x, p, training, gen)`, the same values and mask, in one pass over
/// the three tensors when they share shape and dtype (a transformer block's residual
/// stream); as the two ops otherwise.
Tensor dropout_add(const Tensor& residual, const Tensor& x, float p, bool training = true,
                   Generator* gen = nullptr);
/// @}

/// @name Fused ops
/// One graph node each, doing what a composition of the ops above would do with
/// less memory traffic or memory (autograd/ops/fused_ops.h).
/// @{

/// `y = x @ weight^T + bias`. x [..., in], weight [out, in] (PyTorch layout), bias [out] or
/// undefined. On CUDA the bias is added inside the GEMM (cuBLASLt epilogue); the GEMMs
/// follow MX_FAST_MATMUL as `matmul` does. A defined `residual` (the output's shape, x's
/// dtype) is added as well, `residual + linear(x, weight, bias)` as one op: on CUDA by
/// the GEMM, rounded once (Note [The residual as the GEMM's C] in
/// kernels/cuda/blas_lt.cu), on the CPU as the separate addition, the same bits.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
              const Tensor& residual = Tensor());
/// `gelu(linear(x, weight, bias))`, a GPT MLP's first half, as one op that keeps only the
/// pre-activation for its backward. On CUDA one cuBLASLt call whose epilogue adds the bias
/// and applies GeLU (the tanh approximation) as the output is written: y may then differ
/// from `gelu` of the pre-activation by cuBLASLt's own evaluation of tanh, and a 16-bit y
/// is rounded once, from the FP32 pre-activation. On the CPU the same kernels as the two
/// ops, and so the same bits. Shapes as in `linear`.
Tensor linear_gelu(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());
/// A GPT's MLP without its dropout, `linear(linear_gelu(x, fc_weight, fc_bias),
/// proj_weight, proj_bias)`, as one op that keeps only the [N, H] pre-activation for its
/// backward and makes the hidden layer again there, so a block keeps one [N, H] tensor
/// instead of two. x [..., C], fc_weight [H, C], fc_bias [H], proj_weight [C, H], proj_bias
/// [C], one dtype. Same values as the two ops; the gradients too on the CPU, and on CUDA
/// to within the difference between cuBLASLt's GeLU and `gelu`. A defined `residual` (x's
/// shape and dtype) is added by the second Linear, as `linear`'s residual is.
Tensor mlp(const Tensor& x, const Tensor& fc_weight, const Tensor& fc_bias,
           const Tensor& proj_weight, const Tensor& proj_bias, const Tensor& residual = Tensor());
/// Scaled dot-product attention, causal when `causal`. q [B, H, Tq, D], k, v [B, H, Tk, D]
/// -> [B, H, Tq, D]; scale 1/sqrt(D). Never materialises [Tq, Tk]: flash-style tiles with an
/// online softmax; the backward recomputes the probabilities from saved row statistics
/// (logsumexp [B, H, Tq]). With `causal`, Tq <= Tk and q holds the last Tq positions (a KV
/// cache): query i sees keys j <= Tk - Tq + i. D <= 128 on CUDA.
/// `dropout_p` in [0, 1) (pass > 0 only when training) is dropout on the probabilities,
/// as nanoGPT's attn_dropout: each P[b, h, i, j] (after the softmax, before V) is zeroed
/// with probability `dropout_p` and the rest scaled by 1/(1 - dropout_p). The mask comes
/// from `gen`'s Philox stream (the default generator when null), which advances by
/// about B*H*Tq*Tk words (`AttentionDropout::stream_words`); the backward regenerates it.
/// 0 is exactly the attention without dropout.
/// On CUDA the tile products follow the precision mode of `matmul`: FP32 fused
/// multiply-adds by default, three TF32 Tensor-Core products each for `3xtf32`, one for
/// `tf32` or `fp16` (Note [Tensor Cores in FP32] in kernels/cuda/attention_tf32.cuh).
Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal = true,
                 float dropout_p = 0.0f, Generator* gen = nullptr);
/// Causal self-attention straight from a GPT's packed projection: qkv [B, T, 3C] laid out
/// as c_attn makes it (q | k | v along the last dimension, each C = n_head * D columns
/// holding the heads side by side) -> y [B, T, C], the heads side by side again (what
/// c_proj takes). The same values, gradients and dropout mask as splitting qkv into three
/// [B, T, C] slices, viewing each as [B, n_head, T, D], calling `attention(q, k, v, true,
/// dropout_p, gen)` and merging the heads, but with no copies: the kernels read q, k and v
/// in place and write y and the one [B, T, 3C] gradient directly. D <= 128 on CUDA.
/// `dropout_p` and `gen` are as in `attention` (the stream advances by about B*n_head*T*T
/// words).
Tensor causal_self_attention(const Tensor& qkv, int64_t n_head, float dropout_p = 0.0f,
                             Generator* gen = nullptr);
/// Same value as `cross_entropy(linear(x, weight), targets, ignore_index)` for x [N, C],
/// weight [V, C], I32 targets [N], without keeping the [N, V] logits: rows are processed in
/// chunks and the backward recomputes each chunk's logits. Returns a 0-d mean loss.
Tensor linear_cross_entropy(const Tensor& x, const Tensor& weight, const Tensor& targets,
                            int ignore_index = -100);
/// @}

}  // namespace zero
