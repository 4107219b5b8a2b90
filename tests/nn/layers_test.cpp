// Tests of the basic layers (zero/nn/layers.cpp): parameter names, shapes and
// initialisation; each Forward against an independent reference (a naive loop or a
// composition of functional ops); gradients reaching the parameters; Dropout's mode.
#include <gmock/gmock.h>

#include <cmath>
#include <vector>

#include "tests/support/test_support.h"
#include "zero/autograd/grad_mode.h"
#include "zero/nn/layers.h"

namespace zero {
namespace {

using ::testing::ElementsAre;
using testing::expect_close;

std::vector<std::string> names_of(const nn::Module& m) {
  std::vector<std::string> names;
  for (const auto& named : m.NamedParameters()) names.push_back(named.first);
  return names;
}

// Mean and standard deviation of a tensor's elements, on the host.
std::pair<double, double> moments(const Tensor& t) {
  const std::vector<float> v = t.ToVector<float>();
  double mean = 0.0, sq = 0.0;
  for (float x : v) mean += x / static_cast<double>(v.size());
  for (float x : v) sq += (x - mean) * (x - mean) / static_cast<double>(v.size());
  return {mean, std::sqrt(sq)};
}

class LayersTest : public testing::DeviceTest {
 protected:
  TensorOption opt() const { return TensorOption().OnDevice(device()); }
};

TEST_P(LayersTest, LinearHasPyTorchLayoutAndInit) {
  Generator gen(1);
  nn::Linear layer(64, 96, gen, 0.5f);
  EXPECT_THAT(names_of(layer), ElementsAre("weight", "bias"));
  EXPECT_EQ(layer.weight().sizes(), (Shape{96, 64}));
  EXPECT_EQ(layer.bias().sizes(), (Shape{96}));
  const auto [mean, std] = moments(layer.weight());
  EXPECT_NEAR(mean, 0.0, 0.02);
  EXPECT_NEAR(std, 0.5, 0.02);
  expect_close(layer.bias(), std::vector<float>(96, 0.0f));

  nn::Linear no_bias(4, 3, gen, 0.02f, /*bias=*/false);
  EXPECT_THAT(names_of(no_bias), ElementsAre("weight"));
  EXPECT_FALSE(no_bias.bias().defined());
}

TEST_P(LayersTest, LinearForwardMatchesNaiveLoop) {
  Generator gen(2);
  nn::Linear layer(5, 3, gen, 1.0f);
  {
    NoGradGuard no_grad;
    Tensor(layer.bias()).CopyFrom_(Tensor::From({0.5f, -1.0f, 2.0f}, {3}));
  }
  layer.To(device());
  const Tensor x = Tensor::Randn({2, 4, 5}, opt(), &gen);  // (B, T, in)
  const Tensor y = layer.Forward(x);
  ASSERT_EQ(y.sizes(), (Shape{2, 4, 3}));
  const std::vector<float> vx = x.ToVector<float>(), w = layer.weight().ToVector<float>(),
                           b = layer.bias().ToVector<float>();
  std::vector<float> expected(2 * 4 * 3);
  for (int r = 0; r < 8; ++r) {
    for (int o = 0; o < 3; ++o) {
      double acc = b[o];
      for (int i = 0; i < 5; ++i) acc += static_cast<double>(vx[r * 5 + i]) * w[o * 5 + i];
      expected[r * 3 + o] = static_cast<float>(acc);
    }
  }
  expect_close(y, expected, 1e-5f, 1e-5f);
}

TEST_P(LayersTest, LinearGradientsReachWeightAndBias) {
  Generator gen(3);
  nn::Linear layer(3, 2, gen, 1.0f);
  layer.To(device());
  const Tensor x = Tensor::Randn({4, 3}, opt(), &gen);
  sum(layer.Forward(x)).Backward();
  // d sum(x W^T + b) / dW[o, i] = sum over rows of x[:, i]; / db[o] = rows.
  const std::vector<float> vx = x.ToVector<float>();
  std::vector<float> col(3, 0.0f);
  for (int r = 0; r < 4; ++r) {
    for (int i = 0; i < 3; ++i) col[i] += vx[r * 3 + i];
  }
  expect_close(layer.weight().Grad(), {col[0], col[1], col[2], col[0], col[1], col[2]}, 1e-5f,
               1e-5f);
  expect_close(layer.bias().Grad(), {4.0f, 4.0f});
}

TEST_P(LayersTest, LayerNormMatchesCompositionOfOps) {
  nn::LayerNorm norm(6);
  EXPECT_THAT(names_of(norm), ElementsAre("weight", "bias"));
  expect_close(norm.weight(), std::vector<float>(6, 1.0f));
  expect_close(norm.bias(), std::vector<float>(6, 0.0f));
  Generator gen(4);
  {
    NoGradGuard no_grad;
    Tensor(norm.weight()).CopyFrom_(Tensor::Randn({6}, {}, &gen));
    Tensor(norm.bias()).CopyFrom_(Tensor::Randn({6}, {}, &gen));
  }
  norm.To(device());
  const Tensor x = Tensor::Randn({3, 2, 6}, opt(), &gen) * 2.0f + 1.0f;
  const Tensor centred = x - mean(x, -1, true);                    // (3, 2, 6)
  const Tensor var = mean(centred * centred, -1, true);            // (3, 2, 1)
  const Tensor expected = centred / sqrt(var + 1e-5f) * norm.weight() + norm.bias();
  expect_close(norm.Forward(x), expected, 1e-4f, 1e-5f);
}

TEST_P(LayersTest, EmbeddingGathersRowsOfItsTable) {
  Generator gen(5);
  nn::Embedding table(10, 4, gen, 1.0f);
  EXPECT_THAT(names_of(table), ElementsAre("weight"));
  EXPECT_EQ(table.weight().sizes(), (Shape{10, 4}));
  table.To(device());
  const Tensor ids = Tensor::FromI32({3, 0, 9, 3}, {2, 2}, opt());
  const Tensor y = table.Forward(ids);
  ASSERT_EQ(y.sizes(), (Shape{2, 2, 4}));
  const std::vector<float> w = table.weight().ToVector<float>();
  std::vector<float> expected;
  for (int id : {3, 0, 9, 3}) {
    for (int j = 0; j < 4; ++j) expected.push_back(w[id * 4 + j]);
  }
  expect_close(y, expected, 0.0f, 0.0f);
}

TEST_P(LayersTest, DropoutFollowsTheModuleMode) {
  Generator gen(6), same(6);
  nn::Dropout drop(0.5f, &gen);
  const Tensor x = Tensor::Ones({1000}, opt());
  const Tensor y = drop.Forward(x);
  // Training: the functional dropout from the same stream position, and the stream moved.
  expect_close(y, dropout(x, 0.5f, true, &same), 0.0f, 0.0f);
  EXPECT_EQ(gen.offset(), same.offset());
  EXPECT_GT(gen.offset(), 0u);
  const std::vector<float> v = y.ToVector<float>();
  int zeros = 0;
  for (float e : v) zeros += e == 0.0f;
  EXPECT_GT(zeros, 400);
  EXPECT_LT(zeros, 600);
  // Evaluation: the identity, drawing nothing.
  drop.Eval();
  const uint64_t before = gen.offset();
  expect_close(drop.Forward(x), x, 0.0f, 0.0f);
  EXPECT_EQ(gen.offset(), before);
}

TEST(LayersErrorTest, BadSizesAreRejected) {
  Generator gen(0);
  EXPECT_THROW(nn::Linear(0, 3, gen), Error);
  EXPECT_THROW(nn::LayerNorm(0), Error);
  EXPECT_THROW(nn::Embedding(5, 0, gen), Error);
  EXPECT_THROW(nn::Dropout(1.0f), Error);
}

ZERO_INSTANTIATE_DEVICE_TEST(LayersTest);

}  // namespace
}  // namespace zero
