// Tests of optim::clip_grad_norm (zero/optim/grad_clip.cpp and, on a GPU, the
// multi-tensor sum-of-squares and scale kernels): the norm and the scaled gradients
// against hand computations and a double reference, no-ops, non-finite norms, errors.
// And of optim::clip_factor (the ops::clip_factor kernel): clip_grad_norm's norm and
// factor to the bit, NaN for a non-finite norm, no gradients, errors.
#include <gmock/gmock.h>

#include <cmath>
#include <limits>
#include <vector>

#include "tests/support/test_support.h"
#include "zero/kernels/tensor_ops.h"
#include "zero/optim/grad_clip.h"

namespace zero {
namespace {

using testing::expect_close;
using testing::expect_error_mentions;

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

// clip_factor on one copy of 70 gradients (more than one CUDA launch takes),
// clip_grad_norm on another: the same norm, the factor clip_grad_norm's rule gives for
// it, and that factor times each gradient is the gradient clip_grad_norm left, all to the
// bit; clip_factor itself writes no gradient. Over and under the bound, with a loss
// scale of 1, a power of two and one whose division rounds.
TEST_P(GradClipTest, ClipFactorIsClipGradNormsDecisionToTheBit) {
  struct Case {
    float max_norm, grad_scale;
    bool over;  // whether the true norm is over the bound (checked)
  };
  const Case cases[] = {{0.5f, 1.0f, true},  {1e4f, 1.0f, false}, {0.1f, 1024.0f, true},
                        {1e4f, 1024.0f, false}, {0.5f, 3.0f, true}, {1e4f, 0.37f, false}};
  Generator gen(11);
  std::vector<std::vector<float>> grads;
  std::vector<Shape> shapes;
  for (int i = 0; i < 70; ++i) {
    const int64_t n = (i * 389) % 2500 + 1;
    shapes.push_back(i % 2 ? Shape{n} : Shape{1, n});
    grads.push_back(Tensor::Randn(shapes.back(), {}, &gen).ToVector<float>());
  }
  for (const Case& c : cases) {
    std::vector<Tensor> clipped, kept;
    for (size_t i = 0; i < grads.size(); ++i) {
      clipped.push_back(ParamWithGrad(grads[i], shapes[i]));
      kept.push_back(ParamWithGrad(grads[i], shapes[i]));
    }
    const Tensor out = optim::clip_factor(kept, c.max_norm, c.grad_scale);
    ASSERT_EQ(out.sizes(), (Shape{2}));
    ASSERT_EQ(out.dtype(), DataType::F32);
    ASSERT_EQ(out.device(), device());
    const float norm = optim::clip_grad_norm(clipped, c.max_norm, c.grad_scale);
    const std::vector<float> got = out.ToVector<float>();
    EXPECT_EQ(got[0], norm) << "max_norm " << c.max_norm << ", grad_scale " << c.grad_scale;
    ASSERT_EQ(norm > c.max_norm, c.over) << "the case does not test what it says";
    const float clip = norm > c.max_norm ? c.max_norm / (norm + 1e-6f) : 1.0f;
    EXPECT_EQ(got[1], c.grad_scale == 1.0f ? clip : clip / c.grad_scale);
    for (size_t i = 0; i < grads.size(); ++i) {
      EXPECT_EQ(kept[i].Grad().ToVector<float>(), grads[i]) << "clip_factor wrote gradient " << i;
      std::vector<float> expected = grads[i];
      for (float& g : expected) g *= got[1];
      EXPECT_EQ(clipped[i].Grad().ToVector<float>(), expected) << "gradient " << i;
    }
  }
}

// An inf or NaN gradient, or finite ones whose squares overflow the sum: the norm is what
// clip_grad_norm returns (inf or NaN) and the factor is NaN, which makes AdamW skip.
TEST_P(GradClipTest, ClipFactorIsNanWhenTheNormIsNotFinite) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const float bad : {inf, -inf, nan, 1e20f}) {
    for (const float grad_scale : {1.0f, 1024.0f}) {
      const std::vector<float> values = {0.5f, bad, -2.0f};
      const std::vector<float> got =
          optim::clip_factor({ParamWithGrad(values, {3})}, 1.0f, grad_scale).ToVector<float>();
      const float norm = optim::clip_grad_norm({ParamWithGrad(values, {3})}, 1.0f, grad_scale);
      EXPECT_EQ(std::isnan(got[0]), std::isnan(norm)) << "gradient " << bad;
      EXPECT_EQ(std::isinf(got[0]), std::isinf(norm)) << "gradient " << bad;
      EXPECT_FALSE(std::isfinite(got[0])) << "gradient " << bad;
      EXPECT_TRUE(std::isnan(got[1])) << "gradient " << bad << ", grad_scale " << grad_scale;
    }
  }
}

TEST_P(GradClipTest, ClipFactorWithoutGradientsIsOneAndChecksItsArguments) {
  const Tensor none = Tensor::Zeros({3}, TensorOption().OnDevice(device())).SetRequiresGrad();
  const Tensor out = optim::clip_factor({none}, 1.0f);
  EXPECT_EQ(out.device(), device());
  EXPECT_EQ(out.ToVector<float>(), (std::vector<float>{0.0f, 1.0f}));
  const Tensor a = ParamWithGrad({1.0f}, {1});
  expect_error_mentions([&] { optim::clip_factor({a}, 0.0f); }, {"clip_factor", "max_norm"});
  expect_error_mentions([&] { optim::clip_factor({a}, 1.0f, 0.0f); }, {"grad_scale"});
  expect_error_mentions([&] { optim::clip_factor({a}, 1.0f, INFINITY); }, {"grad_scale"});
  const TensorOption opt = TensorOption().OnDevice(device());
  expect_error_mentions(
      [&] { ops::clip_factor(Tensor::Zeros({1}, opt), 1.0f, 1.0f, Tensor::Empty({3}, opt)); },
      {"norm and factor", "[2]"});
}

ZERO_INSTANTIATE_DEVICE_TEST(GradClipTest);

}  // namespace
}  // namespace zero
