// Implementation of the shared test helpers (see test_support.h).
#include "tests/support/test_support.h"

#include <algorithm>
#include <cmath>

#include "zero/autograd/grad_mode.h"

namespace zero::testing {

void expect_close(const Tensor& actual, const std::vector<float>& expected, float rtol,
                  float atol) {
  const std::vector<float> a = actual.ToVector<float>();
  ASSERT_EQ(a.size(), expected.size()) << "element count differs";
  int reported = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const float tol = atol + rtol * std::fabs(expected[i]);
    const bool ok = std::fabs(a[i] - expected[i]) <= tol ||
                    (std::isinf(a[i]) && a[i] == expected[i]);
    if (!ok && reported++ < 8) {
      ADD_FAILURE() << "element " << i << ": got " << a[i] << ", expected " << expected[i]
                    << " (tolerance " << tol << ")";
    }
  }
}

void expect_close(const Tensor& actual, const Tensor& expected, float rtol, float atol) {
  ASSERT_EQ(actual.sizes(), expected.sizes())
      << "shape " << shape_to_string(actual.sizes()) << " vs "
      << shape_to_string(expected.sizes());
  expect_close(actual, expected.ToVector<float>(), rtol, atol);
}

double max_relative_error(const Tensor& actual, const Tensor& expected) {
  EXPECT_EQ(actual.sizes(), expected.sizes()) << "shapes differ";
  if (actual.sizes() != expected.sizes()) return INFINITY;
  const std::vector<float> a = actual.ToVector<float>(), e = expected.ToVector<float>();
  double worst = 0.0, scale = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    // A NaN on either side is an infinite error (std::max would drop it: NaN compares false).
    if (std::isnan(a[i]) || std::isnan(e[i])) return INFINITY;
    worst = std::max(worst, std::fabs(double(a[i]) - e[i]));
    scale = std::max(scale, std::fabs(double(e[i])));
  }
  return worst / scale;
}

namespace {

double projected_loss(const TensorFn& f, const std::vector<Tensor>& inputs,
                      const std::vector<float>& r) {
  NoGradGuard no_grad;
  const std::vector<float> out = f(inputs).ToVector<float>();
  double acc = 0.0;
  for (size_t i = 0; i < out.size(); ++i) acc += static_cast<double>(out[i]) * r[i];
  return acc;
}

}  // namespace

void check_gradients(const TensorFn& f, const std::vector<Tensor>& inputs, float eps, float rtol,
                     float atol) {
  Tensor out = f(inputs);
  Generator gen(1234);
  Tensor r = Tensor::Randn(out.sizes(), out.options(), &gen);
  const std::vector<float> rv = r.ToVector<float>();
  for (const Tensor& x : inputs) {
    if (x.requires_grad()) const_cast<Tensor&>(x).ZeroGrad();
  }
  sum(out * r).Backward();

  for (size_t k = 0; k < inputs.size(); ++k) {
    const Tensor& x = inputs[k];
    if (!x.requires_grad()) continue;
    ASSERT_TRUE(x.Grad().defined()) << "input " << k << " received no gradient";
    const std::vector<float> analytic = x.Grad().ToVector<float>();
    ASSERT_TRUE(x.is_contiguous()) << "check_gradients perturbs contiguous leaves only";
    std::vector<float> values = x.ToVector<float>();
    int reported = 0;
    for (size_t i = 0; i < values.size(); ++i) {
      const float saved = values[i];
      auto evaluate = [&](float v) {
        values[i] = v;
        NoGradGuard no_grad;
        const_cast<Tensor&>(x).CopyFrom_(Tensor::From(values, x.sizes()).To(x.device()));
        return projected_loss(f, inputs, rv);
      };
      const double plus = evaluate(saved + eps);
      const double minus = evaluate(saved - eps);
      evaluate(saved);
      const double numeric = (plus - minus) / (2.0 * eps);
      const double tol = atol + rtol * std::fabs(numeric);
      if (!(std::fabs(analytic[i] - numeric) <= tol) && reported++ < 8) {  // NaN fails too
        ADD_FAILURE() << "input " << k << " element " << i << ": backward gives " << analytic[i]
                      << ", finite differences give " << numeric << " (tolerance " << tol << ")";
      }
    }
  }
}

ValueAndGrads value_and_grads(const std::function<Tensor()>& f, std::vector<Tensor> leaves) {
  for (Tensor& leaf : leaves) leaf.ZeroGrad();
  const Tensor out = f();
  Generator gen(77);
  const Tensor r = Tensor::Randn(out.sizes(), TensorOption(), &gen).To(out.device());
  sum(to_dtype(out, DataType::F32) * r).Backward();
  ValueAndGrads vg{out.Detach(), {}};
  for (const Tensor& leaf : leaves) vg.grads.push_back(leaf.Grad());
  return vg;
}

Tensor randn_leaf(const Shape& sizes, Device device, uint64_t seed) {
  Generator gen(seed);
  Tensor t = Tensor::Randn(sizes, TensorOption(), &gen).To(device);
  return t.SetRequiresGrad(true);
}

void DeviceTest::SetUp() {
  if (GetParam().is_cuda() && !cuda_available()) {
    GTEST_SKIP() << (cuda_built() ? "no CUDA device visible on this machine"
                                  : "Zero was built without CUDA");
  }
}

std::string device_name(const ::testing::TestParamInfo<Device>& info) {
  return info.param.is_cpu() ? "Cpu" : "Cuda";
}

}  // namespace zero::testing
