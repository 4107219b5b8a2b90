// TEMPORARY (branch `model`): `linear`, `attention` and `linear_cross_entropy` composed
// from existing ops, so the nn/ layers and their tests run before the fused kernels
// (branch `fused`) land. DELETE THIS FILE when `fused` is merged: the fused versions
// define the same three functions and the link would otherwise see them twice.
// These compositions keep every intermediate ([T, T] scores, [N, V] logits) that the
// fused ops exist to avoid, so they are slow and memory-hungry; they are a reference.
#include <cmath>
#include <limits>
#include <vector>

#include "zero/autograd/functional.h"

namespace zero {

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  Tensor y = matmul(x, weight.Transpose(0, 1));  // (..., out)
  return bias.defined() ? y + bias : y;
}

Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal) {
  const int64_t tq = q.size(-2), tk = k.size(-2), d = q.size(-1);
  ZERO_CHECK(tq <= tk, "attention: expected T_q <= T_k, got T_q = ", tq, ", T_k = ", tk);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  Tensor scores = matmul(q, k.Transpose(-2, -1)) * scale;  // (B, H, Tq, Tk)
  if (causal) {
    // Query i holds position tk - tq + i and may see keys up to that position.
    std::vector<int32_t> mask(static_cast<size_t>(tq * tk));
    for (int64_t i = 0; i < tq; ++i) {
      for (int64_t j = 0; j < tk; ++j) mask[i * tk + j] = j > tk - tq + i ? 1 : 0;
    }
    const Tensor m = Tensor::FromI32(mask, {tq, tk}).To(q.device());  // (Tq, Tk)
    scores = masked_fill(scores, m, -std::numeric_limits<float>::infinity());
  }
  return matmul(softmax(scores), v);  // (B, H, Tq, D)
}

Tensor linear_cross_entropy(const Tensor& x, const Tensor& weight, const Tensor& targets,
                            int ignore_index) {
  return cross_entropy(linear(x, weight), targets, ignore_index);
}

}  // namespace zero
