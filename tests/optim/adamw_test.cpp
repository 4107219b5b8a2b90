// Tests of optim::AdamW (zero/optim/adamw.cpp and, on a GPU, the multi-tensor kernel
// in zero/kernels/cuda/optimizer.cu): steps against hand-computed values and a double
// reference, weight decay only on matrices, skipped parameters, state save/load, errors;
// and the step with a gradient factor on the device (optim::clip_factor's), which must
// equal clip_grad_norm then Step() to the bit and write nothing when it is not finite.
#include <gmock/gmock.h>

#include <cmath>
#include <string>
#include <vector>

#include "tests/support/test_support.h"
#include "zero/autograd/cast_cache.h"
#include "zero/autograd/grad_mode.h"
#include "zero/kernels/tensor_ops.h"
#include "zero/optim/adamw.h"
#include "zero/optim/grad_clip.h"

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

// A BF16 tensor's values, widened exactly to float, for comparing bit for bit.
std::vector<float> widened(const Tensor& t) { return to_dtype(t, DataType::F32).ToVector<float>(); }

// Two copies of 70 parameters (more than one CUDA launch takes; sizes with tails for the
// scalar loop; every third one keeping a BF16 cast, rewritten by the step): one clipped
// by clip_grad_norm and stepped with Step(), the other stepped with clip_factor's factor.
// Over and under the bound, with and without a loss scale: the same parameters, moments
// and casts to the bit after every step.
TEST_P(AdamWTest, StepWithClipFactorEqualsClipGradNormThenStepBitForBit) {
  Generator gen(21);
  std::vector<std::pair<std::string, Tensor>> named_a, named_b;
  std::vector<Tensor> a, b;
  for (int i = 0; i < 70; ++i) {
    const int64_t n = (i * 389) % 2500 + 1;
    const Tensor init = Tensor::Randn(i % 2 ? Shape{n} : Shape{1, n}, {}, &gen);  // decayed or not
    a.push_back(init.To(device()).Clone().SetRequiresGrad());
    b.push_back(init.To(device()).Clone().SetRequiresGrad());
    named_a.emplace_back("p" + std::to_string(i), a.back());
    named_b.emplace_back("p" + std::to_string(i), b.back());
  }
  optim::AdamWOptions options;
  options.lr = 1e-2f;
  optim::AdamW adam_a(named_a, options), adam_b(named_b, options);
  const struct {
    float max_norm, grad_scale;
  } cases[] = {{0.5f, 1.0f}, {1e4f, 1.0f}, {0.1f, 1024.0f}, {1e4f, 1024.0f}, {0.5f, 3.0f}};
  for (const auto& c : cases) {
    for (size_t i = 0; i < a.size(); ++i) {
      const Tensor g = Tensor::Randn(a[i].sizes(), {}, &gen).To(device());
      a[i].SetGrad(g.Clone());
      b[i].SetGrad(g.Clone());
      if (i % 3 == 0) {  // kept casts, which the steps rewrite (param_copy)
        cached_cast(a[i], DataType::BF16);
        cached_cast(b[i], DataType::BF16);
      }
    }
    optim::clip_grad_norm(a, c.max_norm, c.grad_scale);
    adam_a.Step();
    const Tensor norm_and_factor = optim::clip_factor(b, c.max_norm, c.grad_scale);
    adam_b.Step(norm_and_factor.Slice(0, 1, 2));
    ASSERT_EQ(adam_a.step(), adam_b.step());
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(a[i].ToVector<float>(), b[i].ToVector<float>())
          << "parameter " << i << ", max_norm " << c.max_norm << ", scale " << c.grad_scale;
      if (i % 3 == 0) {
        NoGradGuard no_grad;
        ASSERT_EQ(widened(cached_cast(a[i], DataType::BF16)),
                  widened(cached_cast(b[i], DataType::BF16)))
            << "the kept BF16 cast of parameter " << i;
      }
    }
    const auto state_a = adam_a.NamedState(), state_b = adam_b.NamedState();
    for (size_t i = 0; i < state_a.size(); ++i) {
      ASSERT_EQ(state_a[i].second.ToVector<float>(), state_b[i].second.ToVector<float>())
          << state_a[i].first;
    }
  }
}

// ops::adamw with a non-finite grad_factor writes nothing: not the parameter, not the
// moments, not the parameter copy (here holding a value no step would write). With a
// finite factor it is the step from the gradient times the factor, to the bit. Nine
// elements: on CUDA two four-wide loads and a scalar tail.
TEST_P(AdamWTest, KernelSkipsOnANonFiniteGradFactorAndAppliesAFiniteOne) {
  const std::vector<float> p0 = {0.5f, -1.25f, 2.0f, 0.0f, -0.03f, 3.5f, 1.0f, -2.0f, 0.25f};
  const std::vector<float> g = {0.3f, -0.4f, 0.1f, 2.0f, -1.5f, 0.0f, 0.7f, -0.2f, 1e-3f};
  const std::vector<float> m0(9, 0.01f), v0(9, 0.04f), sentinel(9, 7.0f);
  ops::AdamWParams hp;
  hp.lr = 0.1f;
  hp.weight_decay = 0.1f;
  hp.step = 3;
  struct Run {
    Tensor p, grad, m, v, copy;
  };
  auto make = [&](const std::vector<float>& grad) {
    return Run{Tensor::From(p0, {3, 3}, opt()), Tensor::From(grad, {3, 3}, opt()),
               Tensor::From(m0, {3, 3}, opt()), Tensor::From(v0, {3, 3}, opt()),
               to_dtype(Tensor::From(sentinel, {3, 3}, opt()), DataType::BF16)};
  };
  for (const float bad : {NAN, INFINITY, -INFINITY}) {
    Run r = make(g);
    hp.grad_factor = Tensor::From({bad}, {1}, opt());
    ops::adamw({{r.p, r.grad, r.m, r.v, true, r.copy}}, hp);
    EXPECT_EQ(r.p.ToVector<float>(), p0) << "factor " << bad;
    EXPECT_EQ(r.m.ToVector<float>(), m0) << "factor " << bad;
    EXPECT_EQ(r.v.ToVector<float>(), v0) << "factor " << bad;
    EXPECT_EQ(widened(r.copy), sentinel) << "factor " << bad;
  }
  const float factor = 0.37f;
  std::vector<float> scaled = g;
  for (float& x : scaled) x *= factor;
  Run with = make(g), without = make(scaled);
  hp.grad_factor = Tensor::From({factor}, {1}, opt());
  ops::adamw({{with.p, with.grad, with.m, with.v, true, with.copy}}, hp);
  hp.grad_factor = Tensor();
  ops::adamw({{without.p, without.grad, without.m, without.v, true, without.copy}}, hp);
  EXPECT_NE(with.p.ToVector<float>(), p0) << "the step did nothing";
  EXPECT_EQ(with.p.ToVector<float>(), without.p.ToVector<float>());
  EXPECT_EQ(with.m.ToVector<float>(), without.m.ToVector<float>());
  EXPECT_EQ(with.v.ToVector<float>(), without.v.ToVector<float>());
  EXPECT_EQ(widened(with.copy), widened(without.copy));
  hp.grad_factor = Tensor::From({1.0f, 1.0f}, {2}, opt());
  expect_error_mentions([&] { ops::adamw({{with.p, with.grad, with.m, with.v, true}}, hp); },
                        {"grad_factor"});
}

// Step(factor) with a non-finite factor changes no parameter or moment but counts, and
// UncountStep takes the count back, so that the next step is step 2 of a run that never
// had the skipped one: the same bits as that run.
TEST_P(AdamWTest, SkippedStepIsUncountedAndLeavesNoTrace) {
  Tensor w = Leaf({1.0f, -2.0f, 0.5f, 3.0f}, {2, 2}), b = Leaf({1.0f, -1.0f}, {2});
  Tensor w_ref = Leaf({1.0f, -2.0f, 0.5f, 3.0f}, {2, 2}), b_ref = Leaf({1.0f, -1.0f}, {2});
  optim::AdamWOptions options;
  options.lr = 0.1f;
  optim::AdamW adamw({{"w", w}, {"b", b}}, options), ref({{"w", w_ref}, {"b", b_ref}}, options);
  const Tensor one = Tensor::From({1.0f}, {1}, opt());
  SetGrad(w, {0.5f, -0.25f, 2.0f, -4.0f}), SetGrad(b, {-3.0f, 0.125f});
  SetGrad(w_ref, {0.5f, -0.25f, 2.0f, -4.0f}), SetGrad(b_ref, {-3.0f, 0.125f});
  adamw.Step(one);
  ref.Step();
  const std::vector<float> w1 = w.ToVector<float>(), b1 = b.ToVector<float>();
  std::vector<std::vector<float>> state1;
  for (const auto& [name, t] : adamw.NamedState()) state1.push_back(t.ToVector<float>());
  for (const float bad : {NAN, INFINITY}) {
    SetGrad(w, {1.0f, 1.0f, 1.0f, 1.0f}), SetGrad(b, {1.0f, 1.0f});
    adamw.Step(Tensor::From({bad}, {1}, opt()));
    EXPECT_EQ(adamw.step(), 2) << "Step counts even when the device skips";
    EXPECT_EQ(w.ToVector<float>(), w1);
    EXPECT_EQ(b.ToVector<float>(), b1);
    const auto state = adamw.NamedState();
    for (size_t i = 0; i < state.size(); ++i) {
      EXPECT_EQ(state[i].second.ToVector<float>(), state1[i]) << state[i].first;
    }
    adamw.UncountStep();
    EXPECT_EQ(adamw.step(), 1);
  }
  SetGrad(w, {0.2f, 0.4f, -0.6f, 0.8f}), SetGrad(b, {0.5f, -0.5f});
  SetGrad(w_ref, {0.1f, 0.2f, -0.3f, 0.4f}), SetGrad(b_ref, {0.25f, -0.25f});
  adamw.Step(Tensor::From({0.5f}, {1}, opt()));  // halving is exact: ref gets the halves
  ref.Step();
  EXPECT_EQ(adamw.step(), 2);
  EXPECT_EQ(w.ToVector<float>(), w_ref.ToVector<float>());
  EXPECT_EQ(b.ToVector<float>(), b_ref.ToVector<float>());
  const auto state = adamw.NamedState(), state_ref = ref.NamedState();
  for (size_t i = 0; i < state.size(); ++i) {
    EXPECT_EQ(state[i].second.ToVector<float>(), state_ref[i].second.ToVector<float>());
  }
}

TEST_P(AdamWTest, StepWithFactorAndUncountStepRejectBadUse) {
  Tensor p = Leaf({1.0f, 2.0f}, {2});
  optim::AdamW adamw({{"p", p}}, {});
  expect_error_mentions([&] { adamw.UncountStep(); }, {"UncountStep"});
  SetGrad(p, {1.0f, 1.0f});
  expect_error_mentions([&] { adamw.Step(Tensor()); }, {"grad_factor"});
  expect_error_mentions([&] { adamw.Step(Tensor::From({1.0f, 1.0f}, {2}, opt())); },
                        {"one-element f32 grad_factor"});
  if (device().is_cuda()) {
    expect_error_mentions([&] { adamw.Step(Tensor::From({1.0f}, {1})); }, {"grad_factor on"});
  }
  EXPECT_EQ(adamw.step(), 0) << "a rejected step must not count";
  EXPECT_EQ(p.ToVector<float>(), (std::vector<float>{1.0f, 2.0f}));
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

// PrepareStep + ApplyStep (a step captured as a CUDA graph, train/step_graph.cpp) reads
// the learning rate and bias correction on the device: the same bits as Step, over steps
// whose learning rate changes, with a factor, and the halves refused on the CPU.
TEST(AdamWCudaTest, StepInTwoHalvesEqualsStepBitForBit) {
  optim::AdamW on_cpu({{"w", Tensor::Zeros({2}).SetRequiresGrad()}}, {});
  expect_error_mentions([&] { on_cpu.PrepareStep(); }, {"CUDA"});
  expect_error_mentions([&] { on_cpu.ApplyStep(Tensor::Ones({1})); }, {"PrepareStep"});
  if (!cuda_available()) GTEST_SKIP() << "needs a CUDA GPU";
  Generator gen(4);
  std::vector<std::pair<std::string, Tensor>> whole, halves;
  for (int i = 0; i < 3; ++i) {
    const Shape shape = i == 1 ? Shape{37} : Shape{5, 41};  // decayed and not
    const Tensor init = Tensor::Randn(shape, {}, &gen).Cuda();
    whole.emplace_back("p" + std::to_string(i), init.Clone().SetRequiresGrad());
    halves.emplace_back("p" + std::to_string(i), init.Clone().SetRequiresGrad());
  }
  optim::AdamW a(whole, {}), b(halves, {});
  const Tensor factor = Tensor::Full({1}, 0.75f).Cuda();
  for (int t = 0; t < 4; ++t) {
    for (size_t i = 0; i < whole.size(); ++i) {
      const Tensor g = Tensor::Randn(whole[i].second.sizes(), {}, &gen).Cuda();
      whole[i].second.SetGrad(g);
      halves[i].second.SetGrad(g.Clone());
    }
    a.SetLr(1e-3f * static_cast<float>(t + 1));
    b.SetLr(1e-3f * static_cast<float>(t + 1));
    a.Step(factor);
    b.PrepareStep();
    b.ApplyStep(factor);
    EXPECT_EQ(a.step(), b.step());
  }
  for (size_t i = 0; i < whole.size(); ++i) {
    EXPECT_EQ(whole[i].second.ToVector<float>(), halves[i].second.ToVector<float>()) << i;
  }
}

}  // namespace
}  // namespace zero
