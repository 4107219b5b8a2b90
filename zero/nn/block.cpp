// The transformer block and its two halves: causal self-attention and the MLP (block.h).
// Shapes: B batch, T time, C = n_embd, H = n_head, D = C / H (head size).
#include "zero/nn/block.h"

#include <cmath>

#include "zero/autograd/cast_cache.h"
#include "zero/autograd/functional.h"

namespace zero::nn {

namespace {

// nanoGPT scales the init of each c_proj (the layers that write into the residual
// stream) by 1/sqrt(2 n_layer): the stream sums 2 n_layer such outputs, and this keeps
// its variance at init independent of depth (GPT-2 paper, section 2.3).
float residual_init_std(const GPTConfig& config) {
  return 0.02f / std::sqrt(2.0f * static_cast<float>(config.n_layer));
}

}  // namespace

// ---------------------------------------------------------------- attention

CausalSelfAttention::CausalSelfAttention(const GPTConfig& config, Generator& gen,
                                         Generator* dropout_gen)
    : n_head_(config.n_head), attn_dropout_p_(config.dropout), dropout_gen_(dropout_gen) {
  const int64_t c = config.n_embd;
  c_attn_ = RegisterModule("c_attn", std::make_shared<Linear>(c, 3 * c, gen));
  c_proj_ = RegisterModule("c_proj",
                           std::make_shared<Linear>(c, c, gen, residual_init_std(config)));
  resid_dropout_ = RegisterModule("resid_dropout",
                                  std::make_shared<Dropout>(config.dropout, dropout_gen));
}

void CausalSelfAttention::Heads_(const Tensor& x, Tensor& q, Tensor& k, Tensor& v) const {
  const int64_t b = x.size(0), t = x.size(1), c = x.size(2), h = n_head_, d = c / h;
  const std::vector<Tensor> qkv = c_attn_->Forward(x).Split(c, 2);  // 3 x (B, T, C)
  // Splitting C into (H, D) and swapping T and H are views: no copy is made here.
  q = qkv[0].View({b, t, h, d}).Transpose(1, 2);  // (B, H, T, D)
  k = qkv[1].View({b, t, h, d}).Transpose(1, 2);  // (B, H, T, D)
  v = qkv[2].View({b, t, h, d}).Transpose(1, 2);  // (B, H, T, D)
}

// y [B, T, C] holds the heads side by side. The residual, when given, goes into c_proj's
// GEMM unless a dropout must come between them; then into the dropout's pass.
Tensor CausalSelfAttention::Output_(const Tensor& y, const Tensor& residual) const {
  if (residual.defined() && !resid_dropout_->active()) return c_proj_->Forward(y, residual);
  return resid_dropout_->Forward(c_proj_->Forward(y), residual);  // (B, T, C)
}

Tensor CausalSelfAttention::Forward(const Tensor& x, const Tensor& residual) const {
  const Tensor qkv = c_attn_->Forward(x);  // (B, T, 3C)
  const float p = is_training() ? attn_dropout_p_ : 0.0f;
  // The packed op is attention(q, k, v) on the split heads of qkv followed by merging
  // them, without copying: its kernels read q, k, v from qkv and write y as [B, T, C].
  return Output_(causal_self_attention(qkv, n_head_, p, dropout_gen_), residual);  // (B, T, C)
}

Tensor CausalSelfAttention::ForwardCached(const Tensor& x, const Tensor& k_cache,
                                          const Tensor& v_cache, int64_t start,
                                          const Tensor& residual) const {
  Tensor q, k, v;
  Heads_(x, q, k, v);  // 3 x (B, H, T_new, D)
  const int64_t end = start + x.size(1);
  // Write the new keys and values behind the cached ones, then attend over everything
  // filled so far: the queries are the last T_new positions of the T_k = end keys, and
  // attention's causal mask is aligned to the end for exactly this case.
  k_cache.Slice(2, start, end).CopyFrom_(k);           // (B, H, T_new, D) of (B, H, T_max, D)
  v_cache.Slice(2, start, end).CopyFrom_(v);
  const Tensor keys = k_cache.Slice(2, 0, end);        // (B, H, end, D)
  const Tensor values = v_cache.Slice(2, 0, end);      // (B, H, end, D)
  // Generation never drops: dropout_p stays 0 whatever the mode.
  const Tensor y = attention(q, keys, values, /*causal=*/true, 0.0f);  // (B, H, T_new, D)
  // Heads side by side again: a copy (Reshape of a transposed view).
  return Output_(y.Transpose(1, 2).Reshape({x.size(0), x.size(1), -1}),
                 residual);  // (B, T_new, C)
}

// ---------------------------------------------------------------- MLP

MLP::MLP(const GPTConfig& config, Generator& gen, Generator* dropout_gen) {
  const int64_t c = config.n_embd;
  c_fc_ = RegisterModule("c_fc", std::make_shared<Linear>(c, 4 * c, gen));
  c_proj_ = RegisterModule("c_proj",
                           std::make_shared<Linear>(4 * c, c, gen, residual_init_std(config)));
  dropout_ = RegisterModule("dropout", std::make_shared<Dropout>(config.dropout, dropout_gen));
}

Tensor MLP::Forward(const Tensor& x, const Tensor& residual) const {
  // c_proj(gelu(c_fc(x))) as one op: on CUDA the GeLU runs in c_fc's GEMM epilogue, and
  // of the (B, T, 4C) hidden layer only the pre-activation is kept for the backward.
  // Each input is cast to the compute dtype, as Linear::Forward does.
  const DataType dt = compute_dtype();
  const auto cast = [dt](const Tensor& param) { return cached_cast(param, dt); };
  const bool fused = residual.defined() && !dropout_->active();
  const Tensor y = mlp(to_dtype(x, dt), cast(c_fc_->weight()), cast(c_fc_->bias()),
                       cast(c_proj_->weight()), cast(c_proj_->bias()),
                       fused ? to_dtype(residual, dt) : Tensor());  // (B, T, C)
  if (fused) return y;
  return dropout_->Forward(y, residual);  // residual + dropout(y), one pass where they match
}

// ---------------------------------------------------------------- block

Block::Block(const GPTConfig& config, Generator& gen, Generator* dropout_gen) {
  ln_1_ = RegisterModule("ln_1", std::make_shared<LayerNorm>(config.n_embd));
  attn_ = RegisterModule("attn", std::make_shared<CausalSelfAttention>(config, gen, dropout_gen));
  ln_2_ = RegisterModule("ln_2", std::make_shared<LayerNorm>(config.n_embd));
  mlp_ = RegisterModule("mlp", std::make_shared<MLP>(config, gen, dropout_gen));
}

// Each half's output is added to the stream by its last Linear where no dropout comes
// between them (Note [The residual as the GEMM's C] in kernels/cuda/blas_lt.cu).
Tensor Block::Forward(const Tensor& x) const {
  const Tensor h = attn_->Forward(ln_1_->Forward(x), x);  // x + attn(ln_1(x)), (B, T, C)
  return mlp_->Forward(ln_2_->Forward(h), h);             // h + mlp(ln_2(h)), (B, T, C)
}

Tensor Block::ForwardCached(const Tensor& x, const Tensor& k_cache, const Tensor& v_cache,
                            int64_t start) const {
  const Tensor h = attn_->ForwardCached(ln_1_->Forward(x), k_cache, v_cache, start, x);
  return mlp_->Forward(ln_2_->Forward(h), h);  // (B, T_new, C)
}

}  // namespace zero::nn
