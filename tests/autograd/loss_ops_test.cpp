// Tests of the fused cross-entropy (autograd/ops/loss_ops.cpp): a hand-computed loss
// with an ignored row, a double-precision reference, all rows ignored, large logits,
// gradients against finite differences and against softmax - onehot, and the errors
// for bad targets and shapes.
#include <cmath>
#include <string>

#include "tests/support/test_support.h"

namespace zero {
namespace {

using testing::expect_error_mentions;

using testing::check_gradients;
using testing::expect_close;
using testing::randn_leaf;

class LossOpsTest : public testing::DeviceTest {};

Tensor targets_of(const std::vector<int32_t>& t, Device device) {
  return Tensor::FromI32(t, {static_cast<int64_t>(t.size())}).To(device);
}

TEST_P(LossOpsTest, HandComputedValueWithIgnoredRow) {
  Tensor logits = Tensor::From({1, 2, 3, 1, 1, 1, 0, 0, 5}, {3, 3}).To(device());
  // Row 0: log(e + e^2 + e^3) - 3 = 0.40760596; row 1 ignored; row 2: log(2 + e^5) - 0.
  Tensor loss = cross_entropy(logits, targets_of({2, -100, 0}, device()));
  EXPECT_EQ(loss.dim(), 0);
  expect_close(loss, {(0.40760596444438013f + 5.013385901721449f) / 2});
  // Another ignore index: row 1 (target 1) now counts, row 0 (target 1) too.
  Tensor loss2 = cross_entropy(logits, targets_of({1, 1, 7}, device()), /*ignore_index=*/7);
  expect_close(loss2, {(1.40760596444438013f + 1.0986122886681098f) / 2});
}

TEST_P(LossOpsTest, MatchesDoubleReference) {
  const int64_t n = 8, v = 11;
  Tensor logits = (randn_leaf({n, v}, device(), 1) * 2.0f).Detach();
  const std::vector<int32_t> t = {3, 0, -100, 10, 5, -100, 7, 2};
  const std::vector<float> x = logits.ToVector<float>();
  double total = 0.0;
  int count = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (t[i] == -100) continue;
    double s = 0.0;
    for (int64_t j = 0; j < v; ++j) s += std::exp(static_cast<double>(x[i * v + j]));
    total += std::log(s) - x[i * v + t[i]];
    ++count;
  }
  expect_close(cross_entropy(logits, targets_of(t, device())), {static_cast<float>(total / count)});
}

TEST_P(LossOpsTest, AllIgnoredGivesZeroLossAndZeroGradient) {
  Tensor logits = randn_leaf({3, 4}, device(), 2);
  Tensor loss = cross_entropy(logits, targets_of({-100, -100, -100}, device()));
  EXPECT_EQ(loss.Item(), 0.0f);
  loss.Backward();
  expect_close(logits.Grad(), std::vector<float>(12, 0.0f), 0.0f, 0.0f);
}

TEST_P(LossOpsTest, LargeLogitsStayFinite) {
  Tensor logits = Tensor::From({1000, -1000, -1000, 1000}, {2, 2}).To(device());
  // Row 0 picks its small logit: loss 2000; row 1 picks its large one: loss ~0.
  expect_close(cross_entropy(logits, targets_of({1, 1}, device())), {1000.0f});
}

TEST_P(LossOpsTest, GradientIsSoftmaxMinusOneHotOverCount) {
  Tensor logits = randn_leaf({3, 4}, device(), 3);
  cross_entropy(logits, targets_of({1, -100, 3}, device())).Backward();
  const std::vector<float> p = softmax(logits).ToVector<float>();
  std::vector<float> expected(12, 0.0f);
  for (int j = 0; j < 4; ++j) {
    expected[j] = (p[j] - (j == 1)) / 2;
    expected[8 + j] = (p[8 + j] - (j == 3)) / 2;
  }
  expect_close(logits.Grad(), expected, 1e-5f, 1e-6f);
}

TEST_P(LossOpsTest, GradientsAgainstFiniteDifferences) {
  Tensor logits = randn_leaf({5, 6}, device(), 4);
  Tensor targets = targets_of({0, 5, -100, 2, 2}, device());
  check_gradients([&](const std::vector<Tensor>& in) { return cross_entropy(in[0], targets); },
                  {logits});
  Tensor other = targets_of({0, 5, 3, 3, 2}, device());
  check_gradients([&](const std::vector<Tensor>& in) { return cross_entropy(in[0], other, 3); },
                  {logits});
  // Strided logits: the gradient flows back through the contiguous copy.
  Tensor wide = randn_leaf({6, 5}, device(), 5);
  check_gradients(
      [&](const std::vector<Tensor>& in) { return cross_entropy(in[0].Transpose(0, 1), other); },
      {wide});
}

TEST_P(LossOpsTest, TargetOutOfRangeNamesTargetRowAndVocabulary) {
  Tensor logits = Tensor::Zeros({3, 5}).To(device());
  if (device().is_cuda()) {
    // Note [Bad indices on the GPU]: a kernel cannot throw without a host sync, so the
    // CUDA loss turns NaN instead; the CPU run names the culprit.
    EXPECT_TRUE(std::isnan(cross_entropy(logits, targets_of({0, 7, 1}, device())).Item()));
    return;
  }
  expect_error_mentions([&] { cross_entropy(logits, targets_of({0, 7, 1}, device())); },
                        {"target 7", "row 1", "V = 5"});
  expect_error_mentions([&] { cross_entropy(logits, targets_of({0, 1, -1}, device())); },
                        {"target -1", "row 2"});
}

TEST_P(LossOpsTest, BadShapesAndDtypesAreErrors) {
  Tensor logits = Tensor::Zeros({4, 5}).To(device());
  expect_error_mentions([&] { cross_entropy(Tensor::Zeros({2, 2, 5}).To(device()),
                                            targets_of({0, 0}, device())); },
                        {"[N, V]", "[2, 2, 5]"});
  expect_error_mentions([&] { cross_entropy(logits, targets_of({0, 1, 2}, device())); },
                        {"[4]", "[3]"});
  expect_error_mentions([&] { cross_entropy(logits, Tensor::Zeros({4}).To(device())); },
                        {"i32", "f32"});
}

ZERO_INSTANTIATE_DEVICE_TEST(LossOpsTest);

}  // namespace
}  // namespace zero
