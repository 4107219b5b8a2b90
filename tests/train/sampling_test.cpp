// Tests of sampling and generation (zero/train/sampling.h): greedy limits, the use of
// the generator, and KV-cache decoding against decoding by re-running the whole
// context through GPT::Forward at every step.
#include "zero/train/sampling.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "zero/autograd/functional.h"
#include "zero/autograd/grad_mode.h"
#include "zero/core/philox.h"

namespace zero::train {
namespace {

using ::testing::HasSubstr;

Tensor random_logits(int64_t rows, int64_t vocab, uint64_t seed) {
  std::vector<float> v(rows * vocab);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 2.0f * philox_normal(seed, i);
  return Tensor::From(v, {rows, vocab});
}

std::vector<int32_t> argmax_rows(const Tensor& logits) {
  const std::vector<float> v = logits.ToVector<float>();
  const int64_t vocab = logits.size(1);
  std::vector<int32_t> out;
  for (int64_t r = 0; r < logits.size(0); ++r) {
    out.push_back(
        static_cast<int32_t>(std::max_element(v.begin() + r * vocab, v.begin() + (r + 1) * vocab) -
                             (v.begin() + r * vocab)));
  }
  return out;
}

TEST(SamplingTest, TopKOneAndZeroTemperatureAreArgmax) {
  const Tensor logits = random_logits(6, 50, 3);
  const std::vector<int32_t> want = argmax_rows(logits);
  Generator gen(5);
  EXPECT_EQ(sample_next(logits, 1.0f, 1, gen).ToVector<int32_t>(), want);
  EXPECT_EQ(sample_next(logits, 0.0f, 0, gen).ToVector<int32_t>(), want);
  EXPECT_EQ(sample_next(logits, 1e-5f, 0, gen).ToVector<int32_t>(), want);
  EXPECT_EQ(sample_next(logits, 1e-5f, 10, gen).ToVector<int32_t>(), want);
}

TEST(SamplingTest, TopKAndTemperatureShapeTheDistribution) {
  // softmax(log p) = p for p = 0.1, 0.2, 0.3, 0.4.
  const std::vector<float> l = {std::log(0.1f), std::log(0.2f), std::log(0.3f), std::log(0.4f)};
  EXPECT_EQ(sample_token(l.data(), 4, 1.0f, 0, 0.09f), 0);  // cumulative 0.1, 0.3, 0.6, 1
  EXPECT_EQ(sample_token(l.data(), 4, 1.0f, 0, 0.31f), 2);
  EXPECT_EQ(sample_token(l.data(), 4, 1.0f, 2, 0.42f), 2);  // k = 2: 3/7, 4/7
  EXPECT_EQ(sample_token(l.data(), 4, 1.0f, 2, 0.43f), 3);
  EXPECT_EQ(sample_token(l.data(), 4, 1.0f, 3, 0.21f), 1);  // k = 3: 2/9, 3/9, 4/9
  EXPECT_EQ(sample_token(l.data(), 4, 1.0f, 3, 0.23f), 2);
  EXPECT_EQ(sample_token(l.data(), 4, 2.0f, 0, 0.17f), 1);  // T = 2: sqrt(p), normalised
  EXPECT_EQ(sample_token(l.data(), 4, 2.0f, 0, 0.16f), 0);
}

TEST(SamplingTest, DrawsFromTheGeneratorAndFollowsTheSoftmax) {
  const Tensor logits = random_logits(1, 8, 11).Expand({4000, 8}).Contiguous();
  Generator gen(7);
  const std::vector<int32_t> ids = sample_next(logits, 1.0f, 0, gen).ToVector<int32_t>();
  EXPECT_EQ(gen.offset(), 4000u);  // one stream word per row
  Generator again(7);
  EXPECT_EQ(sample_next(logits, 1.0f, 0, again).ToVector<int32_t>(), ids);
  // Frequencies within 4 standard deviations of the softmax probabilities.
  const std::vector<float> p = softmax(logits.Slice(0, 0, 1)).ToVector<float>();
  for (int v = 0; v < 8; ++v) {
    const double freq = std::count(ids.begin(), ids.end(), v) / 4000.0;
    EXPECT_NEAR(freq, p[v], 4 * std::sqrt(p[v] * (1 - p[v]) / 4000) + 1e-3) << "token " << v;
  }
}

TEST(SamplingTest, UsesTheGivenSampler) {
  Generator gen(1);
  const TokenSampler last = [](const float*, int64_t vocab, float, int64_t, float) {
    return static_cast<int32_t>(vocab - 1);
  };
  EXPECT_EQ(sample_next(random_logits(3, 9, 1), 1.0f, 0, gen, last).ToVector<int32_t>(),
            (std::vector<int32_t>{8, 8, 8}));
  EXPECT_THAT([&] { sample_next(Tensor::Zeros({4}), 1.0f, 0, gen); },
              ::testing::ThrowsMessage<Error>(HasSubstr("[B, V]")));
  const std::vector<float> nan = {0.0f, NAN};
  EXPECT_THAT([&] { sample_token(nan.data(), 2, 1.0f, 0, 0.5f); },
              ::testing::ThrowsMessage<Error>(HasSubstr("logit 1")));
}

// Generation by re-running GPT::Forward over the context window at every step, with the
// window rule generate() documents: it grows to block_size tokens, then restarts from
// the last block_size / 2.
std::vector<std::vector<int32_t>> generate_by_forward(nn::GPT& model,
                                                      const std::vector<int32_t>& prompt,
                                                      int64_t n_new, float temperature,
                                                      int64_t batch, Generator& gen) {
  nn::EvalGuard eval(model);
  NoGradGuard no_grad;
  const int64_t block = model.config().block_size;
  std::vector<std::vector<int32_t>> seqs(batch, prompt);
  int64_t start = std::max<int64_t>(0, static_cast<int64_t>(prompt.size()) - block);
  for (int64_t i = 0; i < n_new; ++i) {
    const int64_t length = static_cast<int64_t>(seqs[0].size()), t = length - start;
    std::vector<int32_t> ids;
    for (const auto& s : seqs) ids.insert(ids.end(), s.begin() + start, s.end());
    const Tensor logits = model.Forward(Tensor::FromI32(ids, {batch, t}));  // (B, t, V)
    const Tensor last = logits.Slice(1, t - 1, t).Reshape({batch, -1});     // (B, V)
    const std::vector<int32_t> next = sample_next(last, temperature, 0, gen).ToVector<int32_t>();
    for (int64_t b = 0; b < batch; ++b) seqs[b].push_back(next[b]);
    if (t == block) start = length + 1 - block / 2;
  }
  return seqs;
}

TEST(SamplingTest, CachedGenerationEqualsFullForward) {
  nn::GPT model(nn::GPTConfig{13, 16, 2, 2, 16, 0.1f}, 42);
  const std::vector<int32_t> prompt = {1, 5, 7};
  for (int64_t n_new :
       {int64_t{0}, int64_t{1}, int64_t{13}, int64_t{45}}) {  // 45: the window slides
    Generator g1(9), g2(9);
    const auto cached = generate(model, prompt, n_new, 1.0f, 0, 3, g1);
    const auto reference = generate_by_forward(model, prompt, n_new, 1.0f, 3, g2);
    ASSERT_EQ(cached.size(), 3u);
    EXPECT_EQ(cached[0].size(), prompt.size() + n_new);
    EXPECT_EQ(cached, reference) << "n_new = " << n_new;
    if (n_new > 5) {
      EXPECT_NE(cached[0], cached[1]) << "the batch rows are drawn independently";
    }
  }
  EXPECT_TRUE(model.is_training()) << "generate restores the training mode";
  // A prompt longer than the block keeps its last block_size tokens.
  std::vector<int32_t> long_prompt(40);
  for (int i = 0; i < 40; ++i) long_prompt[i] = i % 13;
  Generator g1(3), g2(3);
  EXPECT_EQ(generate(model, long_prompt, 20, 0.8f, 0, 2, g1),
            generate_by_forward(model, long_prompt, 20, 0.8f, 2, g2));
  Generator g(0);
  EXPECT_THAT([&] { generate(model, {}, 3, 1.0f, 0, 1, g); },
              ::testing::ThrowsMessage<Error>(HasSubstr("prompt")));
  EXPECT_THAT([&] { generate(model, {13}, 3, 1.0f, 0, 1, g); },
              ::testing::ThrowsMessage<Error>(HasSubstr("vocabulary")));
}

}  // namespace
}  // namespace zero::train
