// Tests of optim::AdamW (zero/optim/adamw.cpp and, on a GPU, the multi-tensor kernel
// in zero/kernels/cuda/optimizer.cu): steps against hand-computed values and a double
// reference, weight decay only on matrices, skipped parameters, state save/load, errors.
#include <gmock/gmock.h>

#include <cmath>
#include <string>
#include <vector>

#include "tests/support/test_support.h"
#include "zero/autograd/grad_mode.h"
#include "zero/optim/adamw.h"

namespace zero {
namespace {

using testing::expect_close;
using testing::expect_error_mentions;


// AdamW in double, element by element: the reference the steps are checked against.
struct ReferenceAdamW {
  std::vector<double> p, m, v;
  void Step(const std::vector<float>& g, int64_t t, double lr, double wd) {
    const double b1 = 0.9, b2 = 0.99, eps = 1e-8;
    for (size_t i = 0; i < p.size(); ++i) {
      m[i] = b1 * m[i] + (1 - b1) * g[i];
      v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
      const double m_hat = m[i] / (1 - std::pow(b1, t)), v_hat = v[i] / (1 - std::pow(b2, t));
      p[i] = p[i] * (1 - lr * wd) - lr * m_hat / (std::sqrt(v_hat) + eps);
    }
  }
};

std::vector<float> as_float(const std::vector<double>& v) { return {v.begin(), v.end()}; }

class AdamWTest : public testing::DeviceTest {
 protected:
  TensorOption opt() const { return TensorOption().OnDevice(device()); }
  Tensor Leaf(const std::vector<float>& values, const Shape& sizes) const {
    return Tensor::From(values, sizes, opt()).SetRequiresGrad();
  }
  static void SetGrad(Tensor& p, const std::vector<float>& g) {
    p.SetGrad(Tensor::From(g, p.sizes(), p.options()));
  }
};

TEST_P(AdamWTest, FirstStepMatchesHandComputation) {
  // Step 1: m_hat = g and v_hat = g^2, so each element moves by lr * sign(g), after
  // the matrix is decayed by (1 - lr * wd) = 0.99; the bias is not decayed.
  Tensor w = Leaf({1.0f, -2.0f, 0.5f, 3.0f}, {2, 2});
  Tensor b = Leaf({1.0f, -1.0f}, {2});
  optim::AdamWOptions options;
  options.lr = 0.1f;
  options.weight_decay = 0.1f;
  optim::AdamW adamw({{"w", w}, {"b", b}}, options);
  EXPECT_TRUE(adamw.decays("w"));
  EXPECT_FALSE(adamw.decays("b"));
  SetGrad(w, {0.5f, -0.25f, 2.0f, -4.0f});
  SetGrad(b, {-3.0f, 0.125f});
  adamw.Step();
  EXPECT_EQ(adamw.step(), 1);
  expect_close(w, {0.99f - 0.1f, -1.98f + 0.1f, 0.495f - 0.1f, 2.97f + 0.1f}, 1e-6f, 1e-6f);
  expect_close(b, {1.0f + 0.1f, -1.0f - 0.1f}, 1e-6f, 1e-6f);
  // The moments are PyTorch's exp_avg = (1 - b1) g and exp_avg_sq = (1 - b2) g^2.
  const auto state = adamw.NamedState();
  ASSERT_EQ(state.size(), 4u);
  EXPECT_EQ(state[0].first, "w.exp_avg");
  EXPECT_EQ(state[1].first, "w.exp_avg_sq");
  EXPECT_EQ(state[2].first, "b.exp_avg");
  expect_close(state[2].second, {-0.3f, 0.0125f}, 1e-6f, 1e-7f);
  expect_close(state[3].second, {0.09f, 0.00015625f}, 1e-5f, 1e-9f);
}

TEST_P(AdamWTest, SeveralStepsMatchDoubleReference) {
  Generator gen(3);
  const Tensor w0 = Tensor::Randn({7, 5}, {}, &gen);
  const Tensor b0 = Tensor::Randn({5}, {}, &gen);
  Tensor w = w0.To(device()).SetRequiresGrad(), b = b0.Clone().To(device()).SetRequiresGrad();
  optim::AdamW adamw({{"w", w}, {"b", b}}, {});
  ReferenceAdamW ref_w{{}, std::vector<double>(35), std::vector<double>(35)};
  ReferenceAdamW ref_b{{}, std::vector<double>(5), std::vector<double>(5)};
  for (float x : w0.ToVector<float>()) ref_w.p.push_back(x);
  for (float x : b0.ToVector<float>()) ref_b.p.push_back(x);
  for (int t = 1; t <= 4; ++t) {
    const std::vector<float> gw = Tensor::Randn({35}, {}, &gen).ToVector<float>();
    const std::vector<float> gb = Tensor::Randn({5}, {}, &gen).ToVector<float>();
    SetGrad(w, gw);
    SetGrad(b, gb);
    const float lr = 1e-3f * static_cast<float>(t);  // the schedule changes lr between steps
    adamw.SetLr(lr);
    EXPECT_FLOAT_EQ(adamw.lr(), lr);
    adamw.Step();
    ref_w.Step(gw, t, lr, 0.1);
    ref_b.Step(gb, t, lr, 0.0);
  }
  EXPECT_EQ(adamw.step(), 4);
  expect_close(w, as_float(ref_w.p), 1e-5f, 1e-6f);
  expect_close(b, as_float(ref_b.p), 1e-5f, 1e-6f);
}

TEST_P(AdamWTest, ParametersWithoutGradientAreLeftAlone) {
  Tensor a = Leaf({1.0f, 2.0f}, {2});
  Tensor c = Leaf({3.0f, 4.0f}, {2});
  optim::AdamW adamw({{"a", a}, {"c", c}}, {});
  SetGrad(a, {1.0f, 1.0f});
  adamw.Step();
  expect_close(c, {3.0f, 4.0f}, 0.0f, 0.0f);
  expect_close(adamw.NamedState()[2].second, {0.0f, 0.0f}, 0.0f, 0.0f);
  EXPECT_NE(a.ToVector<float>(), (std::vector<float>{1.0f, 2.0f}));
  adamw.ZeroGrad();
  EXPECT_FALSE(a.Grad().defined());
}

TEST_P(AdamWTest, LoadStateResumesTheSameTrajectory) {
  Generator gen(5);
  const Tensor init = Tensor::Randn({3, 4}, {}, &gen);
  Tensor p1 = init.Clone().To(device()).SetRequiresGrad();
  Tensor p2 = init.Clone().To(device()).SetRequiresGrad();
  optim::AdamW first({{"p", p1}}, {});
  std::vector<std::vector<float>> grads;
  for (int t = 0; t < 3; ++t) grads.push_back(Tensor::Randn({12}, {}, &gen).ToVector<float>());
  SetGrad(p1, grads[0]);
  first.Step();
  SetGrad(p1, grads[1]);
  first.Step();
  {
    NoGradGuard no_grad;
    p2.CopyFrom_(p1);
  }
  optim::AdamW second({{"p", p2}}, {});
  std::vector<std::pair<std::string, Tensor>> saved;  // as a checkpoint would: CPU copies
  for (const auto& [name, t] : first.NamedState()) saved.emplace_back(name, t.Cpu().Clone());
  second.LoadState(saved, first.step());
  EXPECT_EQ(second.step(), 2);
  SetGrad(p1, grads[2]);
  SetGrad(p2, grads[2]);
  first.Step();
  second.Step();
  expect_close(p2, p1, 0.0f, 0.0f);
}

TEST_P(AdamWTest, LoadStateRejectsMissingUnknownAndMisshapenEntries) {
  Tensor p = Leaf({1.0f, 2.0f}, {2});
  optim::AdamW adamw({{"p", p}}, {});
  const Tensor two = Tensor::Zeros({2}), three = Tensor::Zeros({3});
  expect_error_mentions([&] { adamw.LoadState({{"p.exp_avg", two}}, 1); }, {"p.exp_avg_sq"});
  expect_error_mentions(
      [&] { adamw.LoadState({{"p.exp_avg", two}, {"p.exp_avg_sq", two}, {"q.exp_avg", two}}, 1); },
      {"q.exp_avg"});
  expect_error_mentions([&] { adamw.LoadState({{"p.exp_avg", three}, {"p.exp_avg_sq", two}}, 1); },
                        {"[3]"});
  EXPECT_EQ(adamw.step(), 0);  // nothing was loaded
}

TEST_P(AdamWTest, ConstructionRejectsBadParameters) {
  Tensor p = Leaf({1.0f}, {1});
  expect_error_mentions([&] { optim::AdamW({{"p", p}, {"tied", p}}, {}); },
                        {"\"tied\" is listed twice"});
  expect_error_mentions([&] { optim::AdamW({{"x", Tensor::Zeros({1}, opt())}}, {}); }, {"\"x\""});
  optim::AdamWOptions bad;
  bad.beta2 = 1.0f;
  expect_error_mentions([&] { optim::AdamW({{"p", p}}, bad); }, {"beta2 = 1"});
  optim::AdamW adamw({{"p", p}}, {});
  expect_error_mentions([&] { adamw.decays("nope"); }, {"\"nope\""});
}

ZERO_INSTANTIATE_DEVICE_TEST(AdamWTest);

// More tensors than one launch's table holds, of sizes around the chunk size, empty
// ones among them: the multi-tensor CUDA step against the CPU step, for three steps.
TEST(AdamWCudaTest, MultiTensorStepMatchesCpu) {
  if (!cuda_available()) GTEST_SKIP() << "needs a CUDA GPU";
  Generator gen(9);
  std::vector<std::pair<std::string, Tensor>> on_cpu, on_gpu;
  for (int i = 0; i < 150; ++i) {
    const int64_t n = (i % 7 == 3) ? 0 : (i * 997) % 3000 + 1;
    const Shape shape = i % 2 ? Shape{n} : Shape{1, n};  // decayed and not
    const Tensor init = Tensor::Randn(shape, {}, &gen);
    on_cpu.emplace_back("p" + std::to_string(i), init.Clone().SetRequiresGrad());
    on_gpu.emplace_back("p" + std::to_string(i), init.Cuda().SetRequiresGrad());
  }
  optim::AdamW cpu_opt(on_cpu, {}), gpu_opt(on_gpu, {});
  for (int t = 0; t < 3; ++t) {
    for (size_t i = 0; i < on_cpu.size(); ++i) {
      const Tensor g = Tensor::Randn(on_cpu[i].second.sizes(), {}, &gen);
      on_cpu[i].second.SetGrad(g);
      on_gpu[i].second.SetGrad(g.Cuda());
    }
    cpu_opt.Step();
    gpu_opt.Step();
  }
  for (size_t i = 0; i < on_cpu.size(); ++i) {
    expect_close(on_gpu[i].second, on_cpu[i].second, 1e-5f, 1e-6f);
  }
}

}  // namespace
}  // namespace zero
