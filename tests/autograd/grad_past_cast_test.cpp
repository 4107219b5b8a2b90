// Tests of gradients that go past a cast (Note [Gradients past a cast] in
// autograd/engine.cpp): a BF16 Linear on casts of FP32 parameters gives them FP32
// gradients with FP32's error, not BF16's; a cast that also feeds an op without that
// path gets the sum of both; a leaf is announced to the hook once, with its whole
// gradient; a table tied to the output head gets both gradients; and a BF16 GPT's
// backward runs no cast backward at all. On the CPU and CUDA.
#include <cmath>
#include <string>
#include <vector>

#include "tests/support/test_support.h"
#include "zero/autograd/cast_cache.h"
#include "zero/autograd/functional.h"
#include "zero/autograd/leaf_grad_hook.h"
#include "zero/autograd/profiler.h"
#include "zero/nn/gpt.h"

namespace zero {
namespace {

using testing::randn_leaf;

std::vector<float> floats(const Tensor& t) { return to_dtype(t, DataType::F32).ToVector<float>(); }

// A detached BF16 tensor of random values.
Tensor bf16_randn(const Shape& sizes, Device device, uint64_t seed) {
  return to_dtype(randn_leaf(sizes, device, seed).Detach(), DataType::BF16);
}

// The largest |got - want| over the elements, relative to the largest |want|.
double max_relative_error(const std::vector<float>& got, const std::vector<double>& want) {
  double err = 0.0, scale = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    err = std::max(err, std::fabs(got[i] - want[i]));
    scale = std::max(scale, std::fabs(want[i]));
  }
  return err / scale;
}

class GradPastCastTest : public testing::DeviceTest {};

// y = x W^T + b in BF16 on casts of FP32 W and b: W's gradient g^T x, summed over 64
// rows, has FP32's error against a float64 sum of the same BF16 values (about 1e-7),
// where a BF16 gradient would have BF16's (up to 2^-9 = 2e-3).
TEST_P(GradPastCastTest, ALinearGivesFp32ParametersFp32Gradients) {
  const int64_t n = 64, in = 24, out = 8;
  const Tensor w = randn_leaf({out, in}, device(), 1), b = randn_leaf({out}, device(), 2);
  const Tensor x = bf16_randn({n, in}, device(), 3), g = bf16_randn({n, out}, device(), 4);
  linear(x, cached_cast(w, DataType::BF16), cached_cast(b, DataType::BF16)).Backward(g);
  ASSERT_TRUE(w.Grad().defined() && b.Grad().defined());
  EXPECT_EQ(w.Grad().dtype(), DataType::F32);
  EXPECT_EQ(b.Grad().dtype(), DataType::F32);
  const std::vector<float> xs = floats(x), gs = floats(g);
  std::vector<double> want_w(out * in, 0.0), want_b(out, 0.0);
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t o = 0; o < out; ++o) {
      want_b[o] += gs[r * out + o];
      for (int64_t i = 0; i < in; ++i) {
        want_w[o * in + i] += double{gs[r * out + o]} * xs[r * in + i];
      }
    }
  }
  EXPECT_LT(max_relative_error(floats(w.Grad()), want_w), 1e-5);
  EXPECT_LT(max_relative_error(floats(b.Grad()), want_b), 1e-5);
}

// One cast read by a Linear (whose gradient goes past it in FP32) and by a product (whose
// BF16 gradient goes through the cast's backward): the parameter gets both, summed.
TEST_P(GradPastCastTest, ACastReadByTwoKindsOfOpGetsBothGradients) {
  const Tensor w = randn_leaf({3, 5}, device(), 5);
  const Tensor x = bf16_randn({4, 5}, device(), 6), r = bf16_randn({3, 5}, device(), 7);
  const Tensor cast = to_dtype(w, DataType::BF16);
  const Tensor loss = sum(to_dtype(linear(x, cast), DataType::F32)) +
                      sum(to_dtype(cast * r, DataType::F32));
  loss.Backward();
  // d/dW of sum(x W^T) is the column sums of x in every row; of sum(W * r), r.
  const std::vector<float> xs = floats(x), rs = floats(r);
  std::vector<double> want(15, 0.0);
  for (int o = 0; o < 3; ++o) {
    for (int i = 0; i < 5; ++i) {
      for (int row = 0; row < 4; ++row) want[o * 5 + i] += xs[row * 5 + i];
      want[o * 5 + i] += rs[o * 5 + i];
    }
  }
  ASSERT_EQ(w.Grad().dtype(), DataType::F32);
  EXPECT_LT(max_relative_error(floats(w.Grad()), want), 1e-6);
}

// The hook sees each leaf once, after the last contribution: past the cast or through it.
TEST_P(GradPastCastTest, TheHookAnnouncesEachLeafOnceWithItsWholeGradient) {
  const Tensor w = randn_leaf({3, 5}, device(), 8), v = randn_leaf({3, 5}, device(), 9);
  const Tensor x = bf16_randn({4, 5}, device(), 10), r = bf16_randn({3, 5}, device(), 11);
  std::vector<std::pair<const TensorImpl*, std::vector<float>>> seen;
  {
    autograd::LeafGradHookGuard guard(
        [&](const Tensor& leaf) { seen.push_back({leaf.impl(), floats(leaf.Grad())}); });
    const Tensor cast = to_dtype(w, DataType::BF16);
    const Tensor only_past = to_dtype(v, DataType::BF16);
    (sum(to_dtype(linear(x, cast), DataType::F32)) + sum(to_dtype(cast * r, DataType::F32)) +
     sum(to_dtype(linear(x, only_past), DataType::F32)))
        .Backward();
  }
  ASSERT_EQ(seen.size(), 2u);
  for (const auto& [leaf, grad] : seen) {
    const Tensor& p = leaf == w.impl() ? w : v;
    EXPECT_EQ(grad, floats(p.Grad())) << "announced before its gradient was whole";
  }
  EXPECT_NE(seen[0].first, seen[1].first);
}

// A table read by an embedding and, tied, by the output head (a GPT's wte), in FP32 and
// through BF16 casts: the head's backward gives the table its .grad first, and the
// embedding's backward adds its rows into it (Note [Sums made by the op] in engine.cpp).
// The same as the gradients of two separate copies of the table, summed; and a second
// pass adds to the first.
TEST_P(GradPastCastTest, ATiedTableGetsTheSumOfBothGradients) {
  const int64_t vocab = 13, n = 20;
  std::vector<int32_t> ids(n), targets(n);
  for (int i = 0; i < n; ++i) ids[i] = (3 * i + 1) % vocab, targets[i] = (5 * i + 2) % vocab;
  const TensorOption on = TensorOption().OnDevice(device());
  const Tensor id = Tensor::FromI32(ids, {n}, on), target = Tensor::FromI32(targets, {n}, on);
  for (DataType dtype : {DataType::F32, DataType::BF16}) {
    SCOPED_TRACE(to_string(dtype));
    const auto loss = [&](const Tensor& table, const Tensor& head) {
      const Tensor x = embedding(cached_cast(table, dtype), id);  // (n, 8)
      return linear_cross_entropy(x, cached_cast(head, dtype), target);
    };
    const Tensor tied = randn_leaf({vocab, 8}, device(), 12);
    const Tensor table = randn_leaf({vocab, 8}, device(), 12);
    const Tensor head = randn_leaf({vocab, 8}, device(), 12);
    loss(tied, tied).Backward();
    loss(table, head).Backward();
    ASSERT_TRUE(tied.Grad().defined() && table.Grad().defined() && head.Grad().defined());
    EXPECT_EQ(tied.Grad().dtype(), DataType::F32);
    const std::vector<float> want = floats(table.Grad() + head.Grad());
    testing::expect_close(tied.Grad(), want, 1e-6f, 1e-7f);
    loss(tied, tied).Backward();
    std::vector<float> twice = want;
    for (float& v : twice) v *= 2.0f;
    testing::expect_close(tied.Grad(), twice, 1e-6f, 1e-7f);
  }
}

// A BF16 GPT: every parameter's gradient is FP32 and none went through a cast's
// backward, so the profile of the backward has no row for it.
TEST_P(GradPastCastTest, ABf16GptRunsNoCastBackward) {
  nn::GPT model(nn::GPTConfig{13, 8, 2, 2, 16, 0.0f}, 12);
  model.To(device());
  model.SetComputeDtype(DataType::BF16);
  std::vector<int32_t> ids(16), targets(16);
  for (int i = 0; i < 16; ++i) ids[i] = i % 13, targets[i] = (5 * i + 3) % 13;
  const TensorOption on = TensorOption().OnDevice(device());
  const Tensor loss =
      model.Loss(Tensor::FromI32(ids, {2, 8}, on), Tensor::FromI32(targets, {2, 8}, on));
  profiler::Start(device());
  loss.Backward();
  const std::vector<profiler::Row> rows = profiler::Stop();
  bool backward_ran = false;
  for (const profiler::Row& row : rows) {
    EXPECT_NE(row.name, "OpToDtype backward") << row.calls << " casts converted a gradient";
    backward_ran = backward_ran || row.name == "OpLinear backward";
  }
  EXPECT_TRUE(backward_ran) << "the profile recorded no backward at all";
  for (const auto& [name, p] : model.NamedParameters()) {
    ASSERT_TRUE(p.Grad().defined()) << name;
    EXPECT_EQ(p.Grad().dtype(), DataType::F32) << name;
  }
}

ZERO_INSTANTIATE_DEVICE_TEST(GradPastCastTest);

}  // namespace
}  // namespace zero
