// Exercise 11 tests: token sampling (sample_token.h), one AdamW step (adamw_step.h) and
// one head of causal attention (attention_head.h), each against hand-computed values
// and against the library code that does the same job (zero::train::sample_token,
// zero::optim::AdamW, zero::attention).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "adamw_step.h"
#include "attention_head.h"
#include "exercise_test.h"
#include "sample_token.h"
#include "zero/autograd/functional.h"
#include "zero/autograd/grad_mode.h"
#include "zero/core/philox.h"
#include "zero/optim/adamw.h"
#include "zero/train/sampling.h"

namespace zero::ex11 {
namespace {

// logits = log(p) for p = 0.1, 0.2, 0.3, 0.4: softmax gives p back.
const std::vector<float> kLogits = {std::log(0.1f), std::log(0.2f), std::log(0.3f), std::log(0.4f)};

TEST(SampleTokenTest, InvertsTheCumulativeDistribution) {
  ZERO_EXERCISE("ex11.1");
  // Cumulative 0.1, 0.3, 0.6, 1.0.
  EXPECT_EQ(sample_token(kLogits.data(), 4, 1.0f, 0, 0.0f), 0);
  EXPECT_EQ(sample_token(kLogits.data(), 4, 1.0f, 0, 0.05f), 0);
  EXPECT_EQ(sample_token(kLogits.data(), 4, 1.0f, 0, 0.15f), 1);
  EXPECT_EQ(sample_token(kLogits.data(), 4, 1.0f, 0, 0.35f), 2);
  EXPECT_EQ(sample_token(kLogits.data(), 4, 1.0f, 0, 0.65f), 3);
  EXPECT_EQ(sample_token(kLogits.data(), 4, 1.0f, 0, 0.9999f), 3);
}

TEST(SampleTokenTest, TopKKeepsOnlyTheLargest) {
  ZERO_EXERCISE("ex11.1");
  // k = 2 keeps ids 2 and 3 with probabilities 3/7 and 4/7.
  EXPECT_EQ(sample_token(kLogits.data(), 4, 1.0f, 2, 0.0f), 2);
  EXPECT_EQ(sample_token(kLogits.data(), 4, 1.0f, 2, 0.42f), 2);
  EXPECT_EQ(sample_token(kLogits.data(), 4, 1.0f, 2, 0.43f), 3);
  // Ties with the k-th largest are kept: three equal logits, k = 2, u near 1 -> the third.
  const std::vector<float> ties = {0.0f, 1.0f, 1.0f, 1.0f};
  EXPECT_EQ(sample_token(ties.data(), 4, 1.0f, 2, 0.99f), 3);
}

TEST(SampleTokenTest, TemperatureReshapesTheDistribution) {
  ZERO_EXERCISE("ex11.1");
  // T = 2 turns p into sqrt(p) / sum(sqrt(p)): 0.163, 0.230, 0.282, 0.325 (cumulative
  // 0.163, 0.393, 0.675, 1).
  EXPECT_EQ(sample_token(kLogits.data(), 4, 2.0f, 0, 0.16f), 0);
  EXPECT_EQ(sample_token(kLogits.data(), 4, 2.0f, 0, 0.17f), 1);
  EXPECT_EQ(sample_token(kLogits.data(), 4, 2.0f, 0, 0.67f), 2);
  EXPECT_EQ(sample_token(kLogits.data(), 4, 2.0f, 0, 0.68f), 3);
}

TEST(SampleTokenTest, GreedyCases) {
  ZERO_EXERCISE("ex11.1");
  const std::vector<float> logits = {0.5f, 3.0f, -1.0f, 3.0f, 2.9f};
  for (float u : {0.0f, 0.5f, 0.999f}) {
    EXPECT_EQ(sample_token(logits.data(), 5, 0.0f, 0, u), 1) << "temperature 0, u = " << u;
    EXPECT_EQ(sample_token(logits.data(), 5, 1.0f, 1, u), 1) << "top_k 1, u = " << u;
    // A tiny temperature leaves the two tied maxima (1 and 3) and nothing else.
    const int32_t id = sample_token(logits.data(), 5, 1e-6f, 0, u);
    EXPECT_TRUE(id == 1 || id == 3) << "temperature 1e-6 gave " << id;
  }
  const std::vector<float> masked = {-INFINITY, 1.0f, -INFINITY};
  EXPECT_EQ(sample_token(masked.data(), 3, 1.0f, 0, 0.99f), 1);
}

TEST(SampleTokenTest, LargeLogitsDoNotOverflow) {
  ZERO_EXERCISE("ex11.1");
  // Logits 1000, 1001, 1002 have the probabilities of 0, 1, 2: e^0, e^1, e^2 over their
  // sum, cumulative 0.090, 0.335, 1. exp(1000) overflows even a double, so the largest
  // logit must be subtracted before exp().
  const std::vector<float> big = {1000.0f, 1001.0f, 1002.0f};
  EXPECT_EQ(sample_token(big.data(), 3, 1.0f, 0, 0.05f), 0) << "u = 0.05 (exp overflow?)";
  EXPECT_EQ(sample_token(big.data(), 3, 1.0f, 0, 0.2f), 1) << "u = 0.2 (exp overflow?)";
  EXPECT_EQ(sample_token(big.data(), 3, 1.0f, 0, 0.5f), 2) << "u = 0.5 (exp overflow?)";
}

TEST(SampleTokenTest, TheDrawIsTheFirstIdWhoseCumulativeSumExceedsU) {
  ZERO_EXERCISE("ex11.1");
  // Two equal logits: cumulative 0.5, 1. At u = 0.5 the first sum only equals u, so the
  // draw is the second id (exact in floating point: the weights are 1 and 1).
  const std::vector<float> two = {0.0f, 0.0f};
  EXPECT_EQ(sample_token(two.data(), 2, 1.0f, 0, 0.5f), 1) << "0.5 does not exceed u = 0.5";
  EXPECT_EQ(sample_token(two.data(), 2, 1.0f, 0, 0.25f), 0);
}

TEST(SampleTokenTest, TopKOfTheWholeVocabularyOrMoreKeepsEverything) {
  ZERO_EXERCISE("ex11.1");
  for (const int64_t k : {4, 10}) {
    EXPECT_EQ(sample_token(kLogits.data(), 4, 1.0f, k, 0.05f), 0) << "top_k " << k << " of 4";
    EXPECT_EQ(sample_token(kLogits.data(), 4, 1.0f, k, 0.65f), 3) << "top_k " << k << " of 4";
  }
}

TEST(SampleTokenTest, MatchesTheLibrary) {
  ZERO_EXERCISE("ex11.1");
  const int64_t vocab = 37;
  std::vector<float> logits(vocab);
  for (uint64_t trial = 0; trial < 200; ++trial) {
    for (int64_t i = 0; i < vocab; ++i) logits[i] = 3.0f * philox_normal(trial, i);
    const float temperature = 0.25f + 0.01f * static_cast<float>(trial % 150);
    const int64_t top_k = static_cast<int64_t>(trial % 7) * 6;  // 0 (all), 6, ..., 36
    const float u = philox_uniform(99, trial);
    EXPECT_EQ(sample_token(logits.data(), vocab, temperature, top_k, u),
              train::sample_token(logits.data(), vocab, temperature, top_k, u))
        << "trial " << trial << ", T = " << temperature << ", k = " << top_k << ", u = " << u;
  }
}

TEST(AdamWStepTest, FirstStepMovesByLr) {
  ZERO_EXERCISE("ex11.2");
  // After one step m_hat = g and v_hat = g^2, so the update is lr * g / (|g| + eps):
  // lr against the sign of the gradient, whatever its size; the decay comes first.
  AdamWHyper h;
  h.lr = 0.01f;
  h.weight_decay = 0.5f;
  const AdamWScalar s = adamw_step({2.0f, 0.0f, 0.0f}, 1000.0f, h, 1);
  EXPECT_NEAR(s.param, 2.0f * (1 - 0.01f * 0.5f) - 0.01f, 1e-6f)
      << "2 decayed by lr * wd = 0.5%, then moved by lr = 0.01 against the gradient";
  EXPECT_NEAR(s.exp_avg, 100.0f, 1e-3f) << "m = (1 - beta1) * g = 0.1 * 1000";
  EXPECT_NEAR(s.exp_avg_sq, 10000.0f, 1e-1f) << "v = (1 - beta2) * g^2 = 0.01 * 1000^2";
}

TEST(AdamWStepTest, EpsIsAddedOutsideTheSquareRoot) {
  ZERO_EXERCISE("ex11.2");
  // g = eps = 1e-3 on the first step: m_hat = g, v_hat = g^2, so the step is
  // lr * g / (|g| + eps) = lr / 2. With eps inside the root, sqrt(g^2 + eps) is 0.0316
  // and the step 30 times smaller.
  AdamWHyper h;
  h.lr = 0.1f;
  h.eps = 1e-3f;
  h.weight_decay = 0.0f;
  const AdamWScalar s = adamw_step({1.0f, 0.0f, 0.0f}, 1e-3f, h, 1);
  EXPECT_NEAR(s.param, 1.0f - 0.05f, 1e-6f)
      << "step 1: m_hat = g, v_hat = g^2; expected p -= lr * m_hat / (sqrt(v_hat) + eps)"
      << " = 0.1 * 1e-3 / (1e-3 + 1e-3)";
}

TEST(AdamWStepTest, LaterStepsUseTheBiasCorrectionOfTheirStep) {
  ZERO_EXERCISE("ex11.2");
  // Step 3 with m = 0.5, v = 0.02 before it and g = 1, no decay (hand-computed):
  // m = 0.9 * 0.5 + 0.1 = 0.55, v = 0.99 * 0.02 + 0.01 = 0.0298,
  // m_hat = 0.55 / (1 - 0.9^3) = 2.02952, v_hat = 0.0298 / (1 - 0.99^3) = 1.00333,
  // step = 0.01 * 2.02952 / sqrt(1.00333) = 0.0202615.
  AdamWHyper h;
  h.lr = 0.01f;
  h.weight_decay = 0.0f;
  const AdamWScalar s = adamw_step({1.0f, 0.5f, 0.02f}, 1.0f, h, 3);
  EXPECT_NEAR(s.exp_avg, 0.55f, 1e-6f) << "m = beta1 * m + (1 - beta1) * g";
  EXPECT_NEAR(s.exp_avg_sq, 0.0298f, 1e-7f) << "v = beta2 * v + (1 - beta2) * g^2";
  EXPECT_NEAR(s.param, 1.0f - 0.0202615f, 2e-6f)
      << "expected m_hat = m / (1 - beta1^3), v_hat = v / (1 - beta2^3) at step 3";
}

TEST(AdamWStepTest, MatchesTheOptimizer) {
  ZERO_EXERCISE("ex11.2");
  // A [1, 1] parameter is a matrix, so zero::optim::AdamW decays it; a [1] one is not.
  for (const Shape& shape : {Shape{1, 1}, Shape{1}}) {
    optim::AdamWOptions options;
    options.lr = 0.05f;
    Tensor p = Tensor::Full(shape, 1.5f).SetRequiresGrad();
    optim::AdamW opt({{"p", p}}, options);
    AdamWHyper h{options.lr, options.beta1, options.beta2, options.eps,
                 shape.size() == 2 ? options.weight_decay : 0.0f};
    AdamWScalar s{1.5f, 0.0f, 0.0f};
    const float grads[] = {0.3f, -1.2f, 0.01f, 2.5f, -0.7f};
    for (int64_t step = 1; step <= 5; ++step) {
      p.SetGrad(Tensor::Full(shape, grads[step - 1]));
      opt.Step();
      s = adamw_step(s, grads[step - 1], h, step);
      EXPECT_NEAR(s.param, p.Item(), 1e-6f) << "step " << step << ", dims " << shape.size();
    }
  }
}

std::vector<float> values(int64_t n, uint64_t seed) {
  std::vector<float> out(n);
  for (int64_t i = 0; i < n; ++i) out[i] = philox_normal(seed, i);
  return out;
}

TEST(CausalAttentionHeadTest, KnownValues) {
  ZERO_EXERCISE("ex11.3");
  // Row 0 sees only itself: out = v0. Row 1 has equal scores (k rows equal): the mean.
  const std::vector<float> q = {1, 0, 0, 1}, k = {1, 1, 1, 1}, v = {1, 2, 3, 6};
  const std::vector<float> out = causal_attention_head(q, k, v, 2, 2);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_FLOAT_EQ(out[0], 1.0f);
  EXPECT_FLOAT_EQ(out[1], 2.0f);
  EXPECT_FLOAT_EQ(out[2], 2.0f);
  EXPECT_FLOAT_EQ(out[3], 4.0f);
  // Scores 0 and 2 / sqrt(2) for row 1 of q = (1, 1), k = (0, 0), (1, 1).
  const std::vector<float> out2 =
      causal_attention_head({0, 0, 1, 1}, {0, 0, 1, 1}, {0, 0, 1, 1}, 2, 2);
  const double w = std::exp(std::sqrt(2.0)) / (1 + std::exp(std::sqrt(2.0)));
  EXPECT_NEAR(out2[2], w, 1e-6);
  EXPECT_NEAR(out2[3], w, 1e-6);
}

TEST(CausalAttentionHeadTest, LargeScoresDoNotOverflow) {
  ZERO_EXERCISE("ex11.3");
  // D = 1 (scale 1), row 1 scores q1 * k0 = 1000 and q1 * k1 = 1000 + 1.1 or so: exp of
  // either overflows even a double unless the row's largest score is subtracted first.
  // The weights depend only on the difference: w1 = 1 / (1 + exp(s0 - s1)).
  const std::vector<float> q = {1.0f, 1000.0f}, k = {1.0f, 1.0011f}, v = {2.0f, 6.0f};
  const std::vector<float> out = causal_attention_head(q, k, v, 2, 1);
  ASSERT_EQ(out.size(), 2u);
  const double s0 = double(q[1]) * k[0], s1 = double(q[1]) * k[1];
  const double w1 = 1 / (1 + std::exp(s0 - s1));
  EXPECT_FLOAT_EQ(out[0], 2.0f) << "row 0 sees only v0";
  EXPECT_NEAR(out[1], (1 - w1) * 2.0 + w1 * 6.0, 1e-4)
      << "scores near 1000 (exp overflows unless the row's maximum is subtracted)";
}

TEST(CausalAttentionHeadTest, MatchesZeroAttention) {
  ZERO_EXERCISE("ex11.3");
  for (auto [T, D] : {std::pair<int64_t, int64_t>{1, 4}, {5, 3}, {17, 8}}) {
    const std::vector<float> q = values(T * D, 1), k = values(T * D, 2), v = values(T * D, 3);
    NoGradGuard no_grad;
    const Tensor expected = attention(Tensor::From(q, {1, 1, T, D}), Tensor::From(k, {1, 1, T, D}),
                                      Tensor::From(v, {1, 1, T, D}), true);  // (1, 1, T, D)
    const std::vector<float> want = expected.ToVector<float>();
    const std::vector<float> got = causal_attention_head(q, k, v, T, D);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i], want[i], 1e-5f * (1 + std::abs(want[i]))) << "T " << T << ", i " << i;
    }
  }
}

}  // namespace
}  // namespace zero::ex11
