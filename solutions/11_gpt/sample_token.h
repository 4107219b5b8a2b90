// Exercise 11.1: draw the next token from a row of logits, with temperature and top-k.
//
// The model gives one logit per vocabulary entry. Dividing them by a temperature T
// before the softmax sharpens (T < 1) or flattens (T > 1) the distribution; keeping only
// the k largest logits removes the long tail of unlikely tokens, any one of which is
// rare but which together are drawn surprisingly often. The draw itself inverts the
// cumulative distribution at a uniform number u: walk the ids in order, adding up
// probabilities, and return the first id where the running sum passes u. train_gpt and
// sample_gpt sample with this function, so the text you see is drawn by your code.
// zero/train/sampling.cpp holds the library's version (the test compares the two).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "zero/core/error.h"

namespace zero::ex11 {

/// The id drawn from softmax(logits / temperature) over the `top_k` largest logits
/// (all of them when top_k <= 0 or top_k >= vocab; logits equal to the k-th largest
/// are kept too), at the uniform number u in [0, 1): the first id, in id order, whose
/// cumulative probability exceeds u. temperature == 0 or top_k == 1 returns the first
/// arg-max. Logits are finite or -inf (never drawn).
inline int32_t sample_token(const float* logits, int64_t vocab, float temperature, int64_t top_k,
                            float u) {
  ZERO_CHECK(vocab > 0 && temperature >= 0 && u >= 0 && u < 1,
             "sample_token: expected vocab > 0, temperature >= 0 and u in [0, 1), got vocab = ",
             vocab, ", temperature = ", temperature, ", u = ", u);
  // BEGIN SOLUTION ex11.1: greedy if T = 0 or k = 1; else top-k, exp((l - max) / T), invert at u
  int64_t best = 0;
  for (int64_t i = 1; i < vocab; ++i) {
    if (logits[i] > logits[best]) best = i;
  }
  if (temperature == 0 || top_k == 1) return static_cast<int32_t>(best);

  float threshold = -INFINITY;  // the k-th largest logit: smaller ones are dropped
  if (top_k > 0 && top_k < vocab) {
    std::vector<float> sorted(logits, logits + vocab);
    std::nth_element(sorted.begin(), sorted.begin() + (top_k - 1), sorted.end(),
                     std::greater<float>());
    threshold = sorted[top_k - 1];
  }
  // Subtracting the maximum keeps exp() from overflowing and makes the largest weight 1,
  // so even a tiny temperature gives weights 1 and 0 rather than inf / inf.
  std::vector<double> weight(vocab, 0.0);
  double total = 0;
  for (int64_t i = 0; i < vocab; ++i) {
    if (logits[i] >= threshold && logits[i] != -INFINITY) {
      weight[i] = std::exp((static_cast<double>(logits[i]) - logits[best]) / temperature);
      total += weight[i];
    }
  }
  double cumulative = 0;
  int64_t last = best;
  for (int64_t i = 0; i < vocab; ++i) {
    if (weight[i] == 0) continue;
    cumulative += weight[i];
    last = i;
    if (cumulative > u * total) return static_cast<int32_t>(i);
  }
  return static_cast<int32_t>(last);  // u * total rounded up to the very top
  // END SOLUTION
}

}  // namespace zero::ex11
