// Linear, LayerNorm, Embedding, Dropout: parameters, initialisation, and a Forward that
// is one functional op. Parameters are made on the CPU; Module::To moves them.
#include "zero/nn/layers.h"

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

Tensor Linear::Forward(const Tensor& x) const { return linear(x, weight_, bias_); }

LayerNorm::LayerNorm(int64_t features, float eps) : eps_(eps) {
  ZERO_CHECK(features > 0, "LayerNorm: expected a positive feature count, got ", features);
  weight_ = RegisterParameter("weight", Tensor::Ones({features}));
  bias_ = RegisterParameter("bias", Tensor::Zeros({features}));
}

Tensor LayerNorm::Forward(const Tensor& x) const { return layer_norm(x, weight_, bias_, eps_); }

Embedding::Embedding(int64_t num_embeddings, int64_t dim, Generator& gen, float init_std) {
  ZERO_CHECK(num_embeddings > 0 && dim > 0, "Embedding: expected positive sizes, got ",
             num_embeddings, " x ", dim);
  weight_ = RegisterParameter("weight", Tensor::Randn({num_embeddings, dim}, {}, &gen) * init_std);
}

Tensor Embedding::Forward(const Tensor& ids) const { return embedding(weight_, ids); }

Dropout::Dropout(float p, Generator* gen) : p_(p), gen_(gen) {
  ZERO_CHECK(p >= 0.0f && p < 1.0f, "Dropout: expected p in [0, 1), got ", p);
}

Tensor Dropout::Forward(const Tensor& x) const { return dropout(x, p_, is_training(), gen_); }

}  // namespace zero::nn
