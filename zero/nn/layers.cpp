// Linear, LayerNorm, Embedding, Dropout: parameters, initialisation, and a Forward that
// is one functional op. Parameters are made on the CPU; Module::To moves them.
#include "zero/nn/layers.h"

#include "zero/autograd/cast_cache.h"
#include "zero/autograd/functional.h"

namespace zero::nn {

Linear::Linear(int64_t in_features, int64_t out_features, Generator& gen, float init_std,
               bool bias) {
  ZERO_CHECK(in_features > 0 && out_features > 0, "Linear: expected positive sizes, got in = ",
             in_features, ", out = ", out_features);
  weight_ = RegisterParameter("weight",
                              Tensor::Randn({out_features, in_features}, {}, &gen) * init_std);
  if (bias) bias_ = RegisterParameter("bias", Tensor::Zeros({out_features}));
}

// Each Forward casts its input and parameters to the compute dtype (identity in F32),
// the parameters through the cache of casts: Note [Mixed precision] in module.h.
Tensor Linear::Forward(const Tensor& x, const Tensor& residual) const {
  const DataType dt = compute_dtype();
  return linear(to_dtype(x, dt), cached_cast(weight_, dt), cached_cast(bias_, dt),
                residual.defined() ? to_dtype(residual, dt) : residual);
}

Tensor Linear::ForwardGelu(const Tensor& x) const {
  const DataType dt = compute_dtype();
  return linear_gelu(to_dtype(x, dt), cached_cast(weight_, dt), cached_cast(bias_, dt));
}

LayerNorm::LayerNorm(int64_t features, float eps) : eps_(eps) {
  ZERO_CHECK(features > 0, "LayerNorm: expected a positive feature count, got ", features);
  weight_ = RegisterParameter("weight", Tensor::Ones({features}));
  bias_ = RegisterParameter("bias", Tensor::Zeros({features}));
}

Tensor LayerNorm::Forward(const Tensor& x) const {
  const DataType dt = compute_dtype();
  return layer_norm(to_dtype(x, dt), cached_cast(weight_, dt), cached_cast(bias_, dt), eps_);
}

Embedding::Embedding(int64_t num_embeddings, int64_t dim, Generator& gen, float init_std) {
  ZERO_CHECK(num_embeddings > 0 && dim > 0, "Embedding: expected positive sizes, got ",
             num_embeddings, " x ", dim);
  weight_ = RegisterParameter("weight", Tensor::Randn({num_embeddings, dim}, {}, &gen) * init_std);
}

Tensor Embedding::Forward(const Tensor& ids) const {
  return embedding(cached_cast(weight_, compute_dtype()), ids);
}

Dropout::Dropout(float p, Generator* gen) : p_(p), gen_(gen) {
  ZERO_CHECK(p >= 0.0f && p < 1.0f, "Dropout: expected p in [0, 1), got ", p);
}

Tensor Dropout::Forward(const Tensor& x) const { return dropout(x, p_, is_training(), gen_); }

Tensor Dropout::Forward(const Tensor& x, const Tensor& residual) const {
  if (!residual.defined()) return Forward(x);
  return dropout_add(residual, x, p_, is_training(), gen_);
}

}  // namespace zero::nn
