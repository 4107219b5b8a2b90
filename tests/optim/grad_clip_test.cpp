// Tests of optim::clip_grad_norm (zero/optim/grad_clip.cpp and, on a GPU, the
// multi-tensor sum-of-squares and scale kernels): the norm and the scaled gradients
// against hand computations and a double reference, no-ops, non-finite norms, errors.
#include <gmock/gmock.h>

#include <cmath>
#include <limits>
#include <vector>

#include "tests/support/test_support.h"
#include "zero/optim/grad_clip.h"

namespace zero {
namespace {

using testing::expect_close;

class GradClipTest : public testing::DeviceTest {
 protected:
  Tensor ParamWithGrad(const std::vector<float>& grad, const Shape& sizes) const {
    const TensorOption opt = TensorOption().OnDevice(device());
    Tensor p = Tensor::Zeros(sizes, opt).SetRequiresGrad();
    p.SetGrad(Tensor::From(grad, sizes, opt));
    return p;
  }
};

TEST_P(GradClipTest, ScalesAllGradientsByOneFactorWhenOverTheBound) {
  // The gradients taken as one vector (3, 4, 12) have norm 13.
  const Tensor a = ParamWithGrad({3.0f, 4.0f}, {1, 2});
  const Tensor b = ParamWithGrad({12.0f}, {1});
  const float norm = optim::clip_grad_norm({a, b}, 1.0f);
  EXPECT_NEAR(norm, 13.0f, 1e-5f);
  const float f = 1.0f / (13.0f + 1e-6f);
  expect_close(a.Grad(), {3.0f * f, 4.0f * f}, 1e-6f, 1e-7f);
  expect_close(b.Grad(), {12.0f * f}, 1e-6f, 1e-7f);
  // Now at the bound: a second call changes nothing.
  EXPECT_NEAR(optim::clip_grad_norm({a, b}, 1.0f), 1.0f, 1e-5f);
  expect_close(b.Grad(), {12.0f * f}, 1e-6f, 1e-7f);
}

TEST_P(GradClipTest, UnderTheBoundGradientsAreUntouched) {
  const Tensor a = ParamWithGrad({0.3f, -0.4f}, {2});
  EXPECT_NEAR(optim::clip_grad_norm({a}, 1.0f), 0.5f, 1e-6f);
  expect_close(a.Grad(), {0.3f, -0.4f}, 0.0f, 0.0f);
}

TEST_P(GradClipTest, ParametersWithoutGradientAreSkipped) {
  const Tensor none = Tensor::Zeros({3}, TensorOption().OnDevice(device())).SetRequiresGrad();
  EXPECT_EQ(optim::clip_grad_norm({none}, 1.0f), 0.0f);
  const Tensor a = ParamWithGrad({6.0f, 8.0f}, {2});
  EXPECT_NEAR(optim::clip_grad_norm({none, a}, 5.0f), 10.0f, 1e-5f);
  expect_close(a.Grad(), {3.0f, 4.0f}, 1e-5f, 1e-6f);
  EXPECT_FALSE(none.Grad().defined());
}

TEST_P(GradClipTest, NonFiniteNormIsReturnedAndGradientsKept) {
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor a = ParamWithGrad({inf, 1.0f}, {2});
  EXPECT_TRUE(std::isinf(optim::clip_grad_norm({a}, 1.0f)));
  expect_close(a.Grad(), {inf, 1.0f}, 0.0f, 0.0f);
}

TEST_P(GradClipTest, ManyTensorsMatchDoubleReference) {
  Generator gen(4);
  std::vector<Tensor> params;
  std::vector<std::vector<float>> grads;
  double sum_sq = 0.0;
  for (int i = 0; i < 100; ++i) {
    const int64_t n = (i * 131) % 2500 + 1;
    grads.push_back(Tensor::Randn({n}, {}, &gen).ToVector<float>());
    for (float g : grads.back()) sum_sq += static_cast<double>(g) * g;
    params.push_back(ParamWithGrad(grads.back(), {n}));
  }
  const double norm = std::sqrt(sum_sq);
  EXPECT_NEAR(optim::clip_grad_norm(params, 2.0f), norm, 1e-5 * norm);
  const float f = static_cast<float>(2.0 / (norm + 1e-6));
  for (size_t i = 0; i < params.size(); ++i) {
    std::vector<float> expected = grads[i];
    for (float& g : expected) g *= f;
    expect_close(params[i].Grad(), expected, 1e-5f, 1e-7f);
  }
}

TEST_P(GradClipTest, RejectsNonPositiveBound) {
  const Tensor a = ParamWithGrad({1.0f}, {1});
  EXPECT_THROW(optim::clip_grad_norm({a}, 0.0f), Error);
}

ZERO_INSTANTIATE_DEVICE_TEST(GradClipTest);

}  // namespace
}  // namespace zero
