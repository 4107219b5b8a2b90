// Exercise 11.3: causal self-attention for one head, with plain loops.
//
// Position i asks a question (its query q_i), every position j <= i offers a key k_j
// and a value v_j. The score of j for i is q_i . k_j / sqrt(D) (the scale keeps the
// scores' spread independent of the head size D); positions after i are masked out,
// because a language model must not see the token it is predicting. A softmax over
// the allowed scores turns them into weights, and the output is the weighted mean of
// the values. This is what zero::attention computes for every (batch, head) at once,
// without ever storing the T x T score matrix (chapter 11 explains how); here you may
// store one row of it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "zero/core/error.h"

namespace zero::ex11 {

/// out [T, D] = softmax(mask(q k^T / sqrt(D))) v for one head: q, k, v row-major [T, D];
/// row i attends to rows 0..i only.
inline std::vector<float> causal_attention_head(const std::vector<float>& q,
                                                const std::vector<float>& k,
                                                const std::vector<float>& v, int64_t T, int64_t D) {
  ZERO_CHECK(T > 0 && D > 0 && static_cast<int64_t>(q.size()) == T * D &&
                 static_cast<int64_t>(k.size()) == T * D && static_cast<int64_t>(v.size()) == T * D,
             "causal_attention_head: expected q, k, v of T * D = ", T * D, " values, got ",
             q.size(), ", ", k.size(), ", ", v.size());
  std::vector<float> out(T * D, 0.0f);
  // TODO(ex11.3): per row i: scores for j <= i, stable softmax, weighted sum of v
  ZERO_NOT_IMPLEMENTED("ex11.3");
  return out;
}

}  // namespace zero::ex11
