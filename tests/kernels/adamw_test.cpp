// Tests of the AdamW kernel (kernels/optimizer.cpp, cpu/optimizer_cpu.cpp): one and three
// steps against a scalar reference written here in double, with weight decay and
// bias correction, and the argument checks.
#include <gmock/gmock.h>

#include <cmath>
#include <vector>

#include "tests/support/test_support.h"
#include "zero/kernels/tensor_ops.h"

namespace zero {
namespace {

using ::testing::HasSubstr;
using testing::expect_close;

// The reference: PyTorch's AdamW written out for one scalar, in double.
struct ScalarAdamW {
  double p, m = 0.0, v = 0.0;

  void Step(double g, const ops::AdamWParams& hp) {
    p -= static_cast<double>(hp.lr) * hp.weight_decay * p;
    m = hp.beta1 * m + (1.0 - hp.beta1) * g;
    v = hp.beta2 * v + (1.0 - hp.beta2) * g * g;
    const double m_hat = m / (1.0 - std::pow(static_cast<double>(hp.beta1), hp.step));
    const double v_hat = v / (1.0 - std::pow(static_cast<double>(hp.beta2), hp.step));
    p -= hp.lr * m_hat / (std::sqrt(v_hat) + hp.eps);
  }
};

class AdamWTest : public testing::DeviceTest {
 protected:
  // Runs `steps` AdamW steps on the kernel and on the reference, with gradient
  // values that change every step, and compares param, m and v.
  void RunAndCompare(int steps, const ops::AdamWParams& base) {
    const std::vector<float> p0 = {0.5f, -1.25f, 2.0f, 0.0f, -0.03f, 3.5f};
    const Shape shape = {2, 3};
    const TensorOption opt = TensorOption().OnDevice(device());
    Tensor param = Tensor::From(p0, shape, opt);
    Tensor m = Tensor::Zeros(shape, opt), v = Tensor::Zeros(shape, opt);
    std::vector<ScalarAdamW> ref;
    for (float p : p0) ref.push_back({p});

    ops::AdamWParams hp = base;
    for (int s = 1; s <= steps; ++s) {
      hp.step = s;
      std::vector<float> g(p0.size());
      for (size_t i = 0; i < g.size(); ++i) g[i] = 0.3f * s - 0.4f * i + 0.1f * s * i;
      ops::adamw_update(param, Tensor::From(g, shape, opt), m, v, hp);
      for (size_t i = 0; i < g.size(); ++i) ref[i].Step(g[i], hp);
    }
    std::vector<float> ep, em, ev;
    for (const ScalarAdamW& r : ref) {
      ep.push_back(static_cast<float>(r.p));
      em.push_back(static_cast<float>(r.m));
      ev.push_back(static_cast<float>(r.v));
    }
    expect_close(param, ep, 1e-5f, 1e-6f);
    expect_close(m, em, 1e-5f, 1e-7f);
    expect_close(v, ev, 1e-5f, 1e-8f);
  }
};

TEST_P(AdamWTest, OneStepMatchesReference) {
  ops::AdamWParams hp;
  hp.lr = 0.1f;
  hp.weight_decay = 0.1f;
  RunAndCompare(1, hp);
}

TEST_P(AdamWTest, ThreeStepsMatchReference) {
  ops::AdamWParams hp;
  hp.lr = 0.05f;
  hp.beta1 = 0.8f;
  hp.beta2 = 0.95f;
  hp.eps = 1e-6f;
  hp.weight_decay = 0.5f;
  RunAndCompare(3, hp);
}

TEST_P(AdamWTest, FirstStepMovesEachParameterByAboutLr) {
  // With bias correction, step 1 gives m_hat = g and v_hat = g^2: p moves by lr * sign(g).
  const TensorOption opt = TensorOption().OnDevice(device());
  Tensor param = Tensor::From({1.0f, 1.0f}, {2}, opt);
  Tensor m = Tensor::Zeros({2}, opt), v = Tensor::Zeros({2}, opt);
  ops::AdamWParams hp;
  hp.lr = 0.01f;
  ops::adamw_update(param, Tensor::From({3.0f, -0.002f}, {2}, opt), m, v, hp);
  expect_close(param, {0.99f, 1.01f}, 1e-5f, 1e-6f);
}

TEST_P(AdamWTest, WeightDecayIsDecoupledFromTheGradient) {
  // A zero gradient leaves m = v = 0, so only the decay p *= 1 - lr * wd acts.
  const TensorOption opt = TensorOption().OnDevice(device());
  Tensor param = Tensor::From({2.0f, -4.0f}, {2}, opt);
  Tensor m = Tensor::Zeros({2}, opt), v = Tensor::Zeros({2}, opt);
  ops::AdamWParams hp;
  hp.lr = 0.1f;
  hp.weight_decay = 0.5f;
  ops::adamw_update(param, Tensor::Zeros({2}, opt), m, v, hp);
  expect_close(param, {1.9f, -3.8f}, 1e-6f, 1e-7f);
}

TEST_P(AdamWTest, RejectsMismatchedShapesAndBadStep) {
  const TensorOption opt = TensorOption().OnDevice(device());
  Tensor param = Tensor::Zeros({2, 3}, opt);
  Tensor state = Tensor::Zeros({2, 3}, opt);
  Tensor bad = Tensor::Zeros({3, 2}, opt);
  try {
    ops::adamw_update(param, bad, state, state, {});
    FAIL() << "expected zero::Error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("[2, 3]"));
    EXPECT_THAT(e.what(), HasSubstr("[3, 2]"));
  }
  ops::AdamWParams hp;
  hp.step = 0;
  EXPECT_THROW(ops::adamw_update(param, state, state, state, hp), Error);
  Tensor ints = Tensor::Zeros({2, 3}, opt.WithDtype(DataType::I32));
  EXPECT_THROW(ops::adamw_update(param, state, ints, state, {}), Error);
}

ZERO_INSTANTIATE_DEVICE_TEST(AdamWTest);

}  // namespace
}  // namespace zero
