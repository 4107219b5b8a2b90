// Forward and backward of LayerNorm, embedding and dropout, and the functional API
// over them (declared in autograd/functional.h). The kernels do the arithmetic;
// these classes allocate outputs, make layouts contiguous and save what backward needs.
#include "zero/autograd/ops/nn_ops.h"

#include "zero/autograd/functional.h"
#include "zero/kernels/tensor_ops.h"

namespace zero {
namespace autograd {

// ---------------------------------------------------------------- LayerNorm

std::vector<Tensor> OpLayerNorm::OpValue_(const std::vector<Tensor>& in) {
  const Tensor& x = in[0];  // (..., C), contiguous (layer_norm() sees to it)
  ZERO_CHECK(x.dim() >= 1, "layer_norm: expected x with at least one dimension, got a 0-d tensor");
  const int64_t c = x.size(-1);
  const int64_t rows = c > 0 ? x.numel() / c : 0;
  Tensor y = Tensor::Empty(x.sizes(), x.options());  // (..., C)
  // The statistics are FP32 whatever x's dtype (BF16 and F16 too).
  const TensorOption f32 = x.options().WithDtype(DataType::F32);
  mean_ = Tensor::Empty({rows}, f32);  // (N,)
  rstd_ = Tensor::Empty({rows}, f32);  // (N,)
  ops::layer_norm_forward(x, in[1].Contiguous(), in[2].Contiguous(), eps_, y, mean_, rstd_);
  dtype_ = x.dtype();
  return {y};
}

// Note [Recomputing a LayerNorm]
// A LayerNorm keeps its input x for its own backward, and the Linear or MLP after it
// would keep its output as well: in a GPT block two [B, T, C] tensors that x and the
// statistics already determine. In FP32 the output is not kept: the next op keeps an
// edge and has it made again for its backward (Note [Recomputed inputs] in
// tensor_op.cpp). That is one more pass over x a LayerNorm, about 1% of an FP32 step
// (whose GEMMs run at a fraction of the 16-bit rate) for an eighth of the char model's
// peak memory. A 16-bit step spends a larger share of its time in such passes and its
// activations are half the size, so a 16-bit output is kept. layer_norm_forward is one
// pass per row with no atomics, so the second output has the first one's bits.
bool OpLayerNorm::RecomputesOutput_(size_t /*k*/) const { return dtype_ == DataType::F32; }

std::vector<Tensor> OpLayerNorm::Backward_(const std::vector<Tensor>& grad) {
  const Tensor& x = inputs()[0];
  const Tensor& weight = inputs()[1];
  Tensor grad_x = Tensor::Empty(x.sizes(), x.options());                // (..., C)
  // Both parameter gradients in FP32 when both are casts of FP32 parameters (Note
  // [Gradients past a cast] in engine.cpp); the kernel writes the two in one dtype.
  const DataType params = grad_dtype(weight) == grad_dtype(inputs()[2]) ? grad_dtype(weight)
                                                                        : weight.dtype();
  Tensor grad_weight = Tensor::Empty(weight.sizes(), weight.options().WithDtype(params));  // (C,)
  Tensor grad_bias = Tensor::Empty(weight.sizes(), weight.options().WithDtype(params));    // (C,)
  // One kernel produces all three; inputs that need none just drop theirs. x's gradient
  // so far is added in as grad_x is written, when it has x's dtype and layout.
  // With the engine's buffer, the kernel also sums grad_x's columns as it writes them.
  const Tensor& so_far = grad_so_far(0);
  const Tensor& sums = grad_column_sums(0);
  const bool add = so_far.defined() && so_far.dtype() == x.dtype() && so_far.is_contiguous();
  const bool fused = add || !so_far.defined();
  ops::layer_norm_backward(grad[0].Contiguous(), x, weight.Contiguous(), mean_, rstd_, grad_x,
                           grad_weight, grad_bias, add ? so_far : Tensor(),
                           fused ? sums : Tensor());
  if (so_far.defined() && !add) grad_x = grad_x + so_far;
  if (sums.defined() && !fused) {  // the sum added afterwards: its columns summed apart
    ops::linear_backward_bias(grad_x.View({-1, x.size(-1)}), sums);
  }
  return {needs_grad(0) ? grad_x : Tensor(), needs_grad(1) ? grad_weight : Tensor(),
          needs_grad(2) ? grad_bias : Tensor()};
}

void OpLayerNorm::ReleaseSaved_() {
  mean_ = Tensor();
  rstd_ = Tensor();
}

// ---------------------------------------------------------------- embedding

std::vector<Tensor> OpEmbedding::OpValue_(const std::vector<Tensor>& in) {
  const Tensor& weight = in[0];  // (V, C)
  const Tensor& ids = in[1];     // (...) i32
  ZERO_CHECK(weight.dim() == 2, "embedding: expected weight of shape [V, C], got ",
             shape_to_string(weight.sizes()));
  Shape out_sizes = ids.sizes();
  out_sizes.push_back(weight.size(1));
  Tensor out = Tensor::Empty(out_sizes, weight.options());  // (..., C)
  ops::embedding_forward(weight.Contiguous(), ids, out);
  return {out};
}

std::vector<Tensor> OpEmbedding::Backward_(const std::vector<Tensor>& grad) {
  const Tensor& weight = inputs()[0];
  if (!needs_grad(0)) return {Tensor(), Tensor()};
  // In FP32 past a cast (Note [Gradients past a cast] in engine.cpp), added into the
  // gradient the table has so far where the engine handed one over.
  const Tensor& so_far = grad_so_far(0);
  const bool adds = so_far.defined();
  Tensor grad_weight = adds ? so_far
                            : Tensor::Empty(weight.sizes(),
                                            weight.options().WithDtype(grad_dtype(weight)));
  ops::embedding_backward(grad[0].Contiguous(), inputs()[1], grad_weight, adds);  // (V, C)
  return {grad_weight, Tensor()};
}

// ---------------------------------------------------------------- dropout

std::vector<Tensor> OpDropout::OpValue_(const std::vector<Tensor>& in) {
  Tensor y = Tensor::Empty(in[0].sizes(), in[0].options());
  ops::dropout_forward(in[0], p_, seed_, offset_, y, in.size() > 1 ? in[1] : Tensor());
  return {y};
}

std::vector<Tensor> OpDropout::Backward_(const std::vector<Tensor>& grad) {
  Tensor grad_x = Tensor::Empty(grad[0].sizes(), grad[0].options());
  ops::dropout_backward(grad[0].Contiguous(), p_, seed_, offset_, grad_x);
  if (inputs().size() > 1) return {grad_x, grad[0]};  // d(residual + ...)/d residual = 1
  return {grad_x};
}

}  // namespace autograd

// ---------------------------------------------------------------- functional API

using autograd::RunOp;

Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps) {
  // Contiguous() is recorded, so the gradient still reaches a strided x.
  return RunOp<autograd::OpLayerNorm>({x.Contiguous(), weight, bias}, eps);
}

Tensor embedding(const Tensor& weight, const Tensor& ids) {
  return RunOp<autograd::OpEmbedding>({weight, ids});
}

namespace {

void check_drop_probability(const char* op, float p) {
  ZERO_CHECK(p >= 0.0f && p < 1.0f, op, ": expected a drop probability p in [0, 1), got ", p,
             p == 1.0f ? " (p = 1 would drop everything and scale by 1/0: use p < 1)" : "");
}

}  // namespace

Tensor dropout(const Tensor& x, float p, bool training, Generator* gen) {
  check_drop_probability("dropout", p);
  if (!training || p == 0.0f) return x;
  Generator& g = gen ? *gen : default_generator();
  const uint64_t offset = g.Reserve(static_cast<uint64_t>(x.numel()));
  return RunOp<autograd::OpDropout>({x.Contiguous()}, p, g.seed(), offset);
}

Tensor dropout_add(const Tensor& residual, const Tensor& x, float p, bool training,
                   Generator* gen) {
  check_drop_probability("dropout_add", p);
  if (!training || p == 0.0f || residual.sizes() != x.sizes() ||
      residual.dtype() != x.dtype() || residual.device() != x.device()) {
    return residual + dropout(x, p, training, gen);
  }
  Generator& g = gen ? *gen : default_generator();
  const uint64_t offset = g.Reserve(static_cast<uint64_t>(x.numel()));
  return RunOp<autograd::OpDropout>({x.Contiguous(), residual.Contiguous()}, p, g.seed(),
                                    offset);
}

}  // namespace zero
