/// @file
/// Fused ops of the GPT chapter: `OpLinear`, `OpLinearGelu`, `OpMlp`, `OpAttention`,
/// `OpPackedAttention`, `OpLinearCrossEntropy`.
///
/// Each does in one graph node what a composition of smaller ops would do in several,
/// to save memory traffic (Linear: bias, and a residual, added inside the GEMM; Linear +
/// GeLU: the activation too) or memory outright (the MLP never keeps its hidden layer;
/// attention never stores the [T, T] probabilities; linear + cross-entropy never stores
/// the [N, V] logits). The backwards recompute what was not stored. Each is tested against
/// the unfused composition (tests/autograd/fused_ops_test.cpp,
/// tests/autograd/packed_attention_test.cpp, tests/autograd/linear_gelu_op_test.cpp,
/// tests/autograd/mlp_op_test.cpp, tests/autograd/linear_residual_test.cpp).
#pragma once

#include <cstdint>

#include "zero/autograd/tensor_op.h"

namespace zero::autograd {

/// `y = x @ weight^T + bias` on inputs {x [..., in], weight [out, in]} or
/// {x, weight, bias [out]}, all contiguous: the leading dimensions of x are flattened
/// into rows. With `adds_residual`, a last input `residual` of the output's shape is
/// added, `y = residual + x @ weight^T + bias` (on CUDA inside the GEMM: Note [The
/// residual as the GEMM's C] in kernels/cuda/blas_lt.cu). Backward: `grad_x = g @
/// weight`, `grad_weight = g^T @ x`, `grad_bias` = column sums of g (one cuBLASLt call
/// for both on CUDA) and `grad_residual = g`.
class OpLinear : public TensorOp {
 public:
  /// A Linear whose last input is a residual to add when `adds_residual`.
  explicit OpLinear(bool adds_residual = false) : adds_residual_(adds_residual) {}
  /// "OpLinear".
  const char* name() const override { return "OpLinear"; }
  /// The bias gradient's buffer, for the output's consumer to fill (Note [Column sums
  /// made by the consumer] in engine.cpp), when there is a bias that needs a gradient.
  Tensor ColumnSumsOfGrad(size_t k) override;

 protected:
  /// Calls `ops::linear_forward`.
  std::vector<Tensor> OpValue_(const std::vector<Tensor>& inputs) override;
  /// `ops::matmul` for x, `ops::linear_backward_params` for weight and bias.
  std::vector<Tensor> Backward_(const std::vector<Tensor>& grad_outputs) override;
  /// Not the residual (input 2 without a bias, 3 with one): the backward does not read it.
  bool KeepsInput_(size_t i) const override {
    return !adds_residual_ || i < 2 || (i == 2 && bias_);
  }

 private:
  bool adds_residual_;
  bool bias_ = false;  // set by OpValue_: whether input 2 is a bias
  Tensor grad_bias_;   // handed out by ColumnSumsOfGrad, for the next Backward_
};

/// The Linear's backward for the op `op` whose inputs begin {x [..., in], weight [out,
/// in]} and, when `has_bias`, bias, given `g` [N, out], the gradient of its
/// pre-activation output flattened to rows: {grad_x [..., in], grad_weight[,
/// grad_bias]}, each undefined where `op` needs none. OpLinear's backward, and
/// OpLinearGelu's and OpMlp's after the GeLU. A defined `grad_bias` was made already, by
/// the pass that made g, and is returned as is.
std::vector<Tensor> linear_grads(const TensorOp& op, const Tensor& g, bool has_bias,
                                 Tensor grad_bias = Tensor());

/// `y = gelu(x @ weight^T + bias)` (GeLU's tanh approximation, `ops::UnaryOp::kGelu`) on
/// the inputs of `OpLinear`: the first half of a GPT's MLP in one node. Saves the
/// pre-activation `pre = x @ weight^T + bias` [N, out] in place of the GeLU's input and
/// output: y is not kept, as the next Linear keeps it. Backward: `dpre = g * gelu'(pre)`,
/// then OpLinear's backward with dpre. On CUDA the forward is one cuBLASLt call (Note
/// [GeLU in the GEMM's epilogue] in kernels/cuda/gelu_epilogue.cu); on the CPU it computes
/// the same values, and gradients, as `gelu(linear(x, weight, bias))` bit for bit.
class OpLinearGelu : public TensorOp {
 public:
  /// "OpLinearGelu".
  const char* name() const override { return "OpLinearGelu"; }

 protected:
  /// Calls `ops::linear_gelu_forward`; saves pre.
  std::vector<Tensor> OpValue_(const std::vector<Tensor>& inputs) override;
  /// `ops::unary_backward` for dpre, then `ops::matmul` for x and
  /// `ops::linear_backward_params` for weight and bias.
  std::vector<Tensor> Backward_(const std::vector<Tensor>& grad_outputs) override;
  /// Drops pre.
  void ReleaseSaved_() override { pre_ = Tensor(); }

 private:
  Tensor pre_;  // (N, out), detached
};

/// A GPT's MLP without its dropout, `y = gelu(x @ fc_weight^T + fc_bias) @ proj_weight^T +
/// proj_bias`, on inputs {x [..., C], fc_weight [H, C], fc_bias [H], proj_weight [C, H],
/// proj_bias [C]}, all contiguous, and optionally a sixth, `residual` [..., C], added
/// to y by the second Linear as `OpLinear` adds it (its gradient is y's). Saves only the
/// pre-activation `pre` [N, H]: the hidden layer gelu(pre), which two separate ops would
/// keep as well (the second Linear's input), is made again in the backward (Note
/// [Recomputing the GeLU] in mlp_op.cpp). Forward: `ops::linear_gelu_forward`, then
/// `ops::linear_forward`.
class OpMlp : public TensorOp {
 public:
  /// "OpMlp".
  const char* name() const override { return "OpMlp"; }
  /// proj_bias's gradient buffer, as `OpLinear::ColumnSumsOfGrad` gives its bias's.
  Tensor ColumnSumsOfGrad(size_t k) override;

 protected:
  /// Both Linears, the GeLU in the first; saves pre.
  std::vector<Tensor> OpValue_(const std::vector<Tensor>& inputs) override;
  /// `ops::matmul_gelu_backward` for dpre and the hidden layer in one pass; the second
  /// Linear's parameter gradients, the hidden layer freed; then the first Linear's
  /// backward (`linear_grads`).
  std::vector<Tensor> Backward_(const std::vector<Tensor>& grad_outputs) override;
  /// Drops pre.
  void ReleaseSaved_() override { pre_ = Tensor(); }
  /// Not the residual: the backward does not read it.
  bool KeepsInput_(size_t i) const override { return i < 5; }

 private:
  Tensor pre_;             // (N, H), detached
  Tensor grad_proj_bias_;  // handed out by ColumnSumsOfGrad, for the next Backward_
};

/// Scaled dot-product attention on inputs {q [B, H, Tq, D], k, v [B, H, Tk, D]}
/// (contiguous), scale 1/sqrt(D). With `causal`, query i sees keys j <= Tk - Tq + i.
/// With `dropout_p` > 0, each probability P[b, h, i, j] is zeroed with probability
/// `dropout_p` and the rest scaled by 1/(1 - dropout_p), by the mask of
/// `AttentionDropout(dropout_p, seed, offset, Tq, Tk)` (kernels/attention_dropout.h, Note
/// [Attention dropout] in kernels/cpu/attention_cpu.cpp).
/// Saves the output and one logsumexp per query row [B, H, Tq] (of the undropped
/// scores): the backward recomputes the probabilities from them, tile by tile, and the
/// dropout mask from (seed, offset).
class OpAttention : public TensorOp {
 public:
  /// `causal` masks keys after each query's position; `dropout_p` in [0, 1) drops
  /// probabilities with the mask of Philox stream words `offset`.. of `seed`.
  OpAttention(bool causal, float dropout_p, uint64_t seed, uint64_t offset)
      : causal_(causal), dropout_p_(dropout_p), seed_(seed), offset_(offset) {}
  /// "OpAttention".
  const char* name() const override { return "OpAttention"; }

 protected:
  /// Calls `ops::attention_forward`; saves out and lse.
  std::vector<Tensor> OpValue_(const std::vector<Tensor>& inputs) override;
  /// Calls `ops::attention_backward`.
  std::vector<Tensor> Backward_(const std::vector<Tensor>& grad_outputs) override;
  /// Drops out and lse.
  void ReleaseSaved_() override;

 private:
  bool causal_;
  float dropout_p_;
  uint64_t seed_;
  uint64_t offset_;
  Tensor out_;  // (B, H, Tq, D), detached
  Tensor lse_;  // (B, H, Tq)
};

/// Causal `OpAttention` on the packed input {qkv [B, T, 3C]} (last dimension of stride
/// 1) of a GPT block, giving y [B, T, C]: q, k and v are the column ranges [0, C),
/// [C, 2C) and [2C, 3C) of qkv, each viewed as [B, H, T, D] (head h is the h-th run of
/// D columns of its range), and y holds the heads side by side. The kernels read and write
/// these views in place (Note [Flash attention] in kernels/cuda/attention.cuh), so the
/// split, the head transposes and the merge of the unpacked path copy nothing, and the
/// backward writes dq, dk, dv into one [B, T, 3C] gradient instead of three zero-padded
/// ones that would then be summed. Dropout as in `OpAttention` (row index (b*H + h)*T + i).
class OpPackedAttention : public TensorOp {
 public:
  /// `n_head` heads; `dropout_p`, `seed` and `offset` as in `OpAttention`.
  OpPackedAttention(int64_t n_head, float dropout_p, uint64_t seed, uint64_t offset)
      : n_head_(n_head), dropout_p_(dropout_p), seed_(seed), offset_(offset) {}
  /// "OpPackedAttention".
  const char* name() const override { return "OpPackedAttention"; }

 protected:
  /// Calls `ops::attention_forward` on views of qkv and y; saves y and lse.
  std::vector<Tensor> OpValue_(const std::vector<Tensor>& inputs) override;
  /// Calls `ops::attention_backward` with views of one [B, T, 3C] gradient.
  std::vector<Tensor> Backward_(const std::vector<Tensor>& grad_outputs) override;
  /// Drops y and lse.
  void ReleaseSaved_() override;

 private:
  // Columns [c0, c0 + C) of t [B, T, *] viewed as (B, H, T, D), with C = H * D.
  Tensor Heads_(const Tensor& t, int64_t c0, int64_t c) const;

  int64_t n_head_;
  float dropout_p_;
  uint64_t seed_;
  uint64_t offset_;
  Tensor y_;    // (B, T, C), detached
  Tensor lse_;  // (B, H, T)
};

/// `cross_entropy(x @ weight^T, targets, ignore_index)` on inputs {x [N, C],
/// weight [V, C], I32 targets [N]} (contiguous), computed `chunk_rows` rows at a
/// time so that only a [chunk_rows, V] block of logits ever exists. x and weight share
/// one dtype (F32, BF16 or F16), which the logits have too; the loss is F32. Saves the
/// per-row logsumexp [N] and the count of non-ignored targets; the backward
/// recomputes each chunk's logits, turns them into their gradient in place and
/// accumulates `grad_x` and `grad_weight` from it.
class OpLinearCrossEntropy : public TensorOp {
 public:
  /// Rows whose target is `ignore_index` are skipped; `chunk_rows` > 0 rows of
  /// logits are made at a time (see `default_chunk_rows`). With `grad_x_in_forward` /
  /// `grad_weight_in_forward` the forward also makes those gradients, while each chunk
  /// of logits exists, and the backward only scales them (Note [Gradients in the
  /// forward pass] in fused_ops.cpp); otherwise the backward recomputes the logits.
  OpLinearCrossEntropy(int ignore_index, int64_t chunk_rows, bool grad_x_in_forward = false,
                       bool grad_weight_in_forward = false)
      : ignore_index_(ignore_index),
        chunk_rows_(chunk_rows),
        grad_x_in_forward_(grad_x_in_forward),
        grad_weight_in_forward_(grad_weight_in_forward) {}
  /// "OpLinearCrossEntropy".
  const char* name() const override { return "OpLinearCrossEntropy"; }
  /// Rows per chunk for `rows` rows over vocabulary size `vocab`, logits of
  /// `element_bytes` each: at most as many as fit in a fixed budget of logits (big
  /// enough chunks keep the GEMMs efficient and the gradient accumulations few), between
  /// 256 and 8192, then spread evenly over the chunks (a multiple of 64, at least 64).
  static int64_t default_chunk_rows(int64_t vocab, int64_t rows, int64_t element_bytes);

 protected:
  /// Runs the chunks forward; saves lse and count.
  std::vector<Tensor> OpValue_(const std::vector<Tensor>& inputs) override;
  /// Scales the gradients made in the forward, or runs the chunks backward.
  std::vector<Tensor> Backward_(const std::vector<Tensor>& grad_outputs) override;
  /// Drops lse, count and the gradients made in the forward.
  void ReleaseSaved_() override;

 private:
  // One pass over the row chunks: the logits, then the loss and lse (if `loss` is
  // defined), then the defined gradients for the loss's upstream gradient `grad`.
  void Chunks_(const Tensor& x, const Tensor& weight, const Tensor& targets, const Tensor& loss,
               const Tensor& grad, Tensor& grad_x, Tensor& grad_weight);

  int ignore_index_;
  int64_t chunk_rows_;
  bool grad_x_in_forward_, grad_weight_in_forward_;
  Tensor lse_;          // (N)
  Tensor count_;        // () non-ignored targets, on the device
  Tensor grad_x_;       // (N, C) made in the forward for an upstream gradient of 1
  Tensor grad_weight_;  // (V, C) likewise
};

}  // namespace zero::autograd
