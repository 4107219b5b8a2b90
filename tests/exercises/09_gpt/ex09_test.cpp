// Exercise 09 tests: token sampling (sample_token.h), one AdamW step (adamw_step.h) and
// one head of causal attention (attention_head.h), each against hand-computed values
// and against the library code that does the same job (zero::train::sample_token,
// zero::optim::AdamW, zero::attention).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "adamw_step.h"
#include "attention_head.h"
#include "sample_token.h"
#include "zero/autograd/functional.h"
#include "zero/autograd/grad_mode.h"
#include "zero/core/philox.h"
#include "zero/optim/adamw.h"
#include "zero/train/sampling.h"

namespace zero::ex09 {
namespace {

// logits = log(p) for p = 0.1, 0.2, 0.3, 0.4: softmax gives p back.
const std::vector<float> kLogits = {std::log(0.1f), std::log(0.2f), std::log(0.3f), std::log(0.4f)};

TEST(SampleTokenTest, InvertsTheCumulativeDistribution) {
  // Cumulative 0.1, 0.3, 0.6, 1.0.
  EXPECT_EQ(sample_token(kLogits.data(), 4, 1.0f, 0, 0.0f), 0);
  EXPECT_EQ(sample_token(kLogits.data(), 4, 1.0f, 0, 0.05f), 0);
  EXPECT_EQ(sample_token(kLogits.data(), 4, 1.0f, 0, 0.15f), 1);
  EXPECT_EQ(sample_token(kLogits.data(), 4, 1.0f, 0, 0.35f), 2);
  EXPECT_EQ(sample_token(kLogits.data(), 4, 1.0f, 0, 0.65f), 3);
  EXPECT_EQ(sample_token(kLogits.data(), 4, 1.0f, 0, 0.9999f), 3);
}

TEST(SampleTokenTest, TopKKeepsOnlyTheLargest) {
  // k = 2 keeps ids 2 and 3 with probabilities 3/7 and 4/7.
  EXPECT_EQ(sample_token(kLogits.data(), 4, 1.0f, 2, 0.0f), 2);
  EXPECT_EQ(sample_token(kLogits.data(), 4, 1.0f, 2, 0.42f), 2);
  EXPECT_EQ(sample_token(kLogits.data(), 4, 1.0f, 2, 0.43f), 3);
  // Ties with the k-th largest are kept: three equal logits, k = 2, u near 1 -> the third.
  const std::vector<float> ties = {0.0f, 1.0f, 1.0f, 1.0f};
  EXPECT_EQ(sample_token(ties.data(), 4, 1.0f, 2, 0.99f), 3);
}

TEST(SampleTokenTest, TemperatureReshapesTheDistribution) {
  // T = 2 turns p into sqrt(p) / sum(sqrt(p)): 0.163, 0.230, 0.282, 0.325 (cumulative
  // 0.163, 0.393, 0.675, 1).
  EXPECT_EQ(sample_token(kLogits.data(), 4, 2.0f, 0, 0.16f), 0);
  EXPECT_EQ(sample_token(kLogits.data(), 4, 2.0f, 0, 0.17f), 1);
  EXPECT_EQ(sample_token(kLogits.data(), 4, 2.0f, 0, 0.67f), 2);
  EXPECT_EQ(sample_token(kLogits.data(), 4, 2.0f, 0, 0.68f), 3);
}

TEST(SampleTokenTest, GreedyCases) {
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

TEST(SampleTokenTest, MatchesTheLibrary) {
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
  // After one step m_hat = g and v_hat = g^2, so the update is lr * g / (|g| + eps):
  // lr against the sign of the gradient, whatever its size; the decay comes first.
  AdamWHyper h;
  h.lr = 0.01f;
  h.weight_decay = 0.5f;
  const AdamWScalar s = adamw_step({2.0f, 0.0f, 0.0f}, 1000.0f, h, 1);
  EXPECT_NEAR(s.param, 2.0f * (1 - 0.01f * 0.5f) - 0.01f, 1e-6f);
  EXPECT_NEAR(s.exp_avg, 100.0f, 1e-3f);       // (1 - 0.9) * 1000
  EXPECT_NEAR(s.exp_avg_sq, 10000.0f, 1e-1f);  // (1 - 0.99) * 1000^2
}

TEST(AdamWStepTest, MatchesTheOptimizer) {
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

TEST(CausalAttentionHeadTest, MatchesZeroAttention) {
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
}  // namespace zero::ex09
