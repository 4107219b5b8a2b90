// Tests of the reductions (autograd/ops/reduce_ops.cpp): sum, mean and max over
// every dimension and over everything, against naive double-precision loops, on
// contiguous and transposed inputs; argmax; gradients against finite differences;
// and the errors for bad dimensions and empty reductions.
#include <cmath>
#include <limits>
#include <string>

#include "tests/support/test_support.h"

namespace zero {
namespace {

using testing::expect_error_mentions;

using testing::check_gradients;
using testing::expect_close;
using testing::randn_leaf;

class ReduceOpsTest : public testing::DeviceTest {};

// The naive reduction of row-major `x` of shape `sizes` over `dim`: sum, mean, max
// (the first maximum) and its position, in row-major order of the remaining dims.
struct Reference {
  std::vector<float> sum, mean, max;
  std::vector<int32_t> argmax;
};

Reference reduce_reference(const std::vector<float>& x, const Shape& sizes, int dim) {
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; ++d) outer *= sizes[d];
  for (int d = dim + 1; d < static_cast<int>(sizes.size()); ++d) inner *= sizes[d];
  const int64_t n = sizes[dim];
  Reference r;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      double s = 0.0;
      int32_t best = 0;
      for (int64_t k = 0; k < n; ++k) {
        const float v = x[(o * n + k) * inner + i];
        s += v;
        if (v > x[(o * n + best) * inner + i]) best = static_cast<int32_t>(k);
      }
      r.sum.push_back(static_cast<float>(s));
      r.mean.push_back(static_cast<float>(s / n));
      r.max.push_back(x[(o * n + best) * inner + i]);
      r.argmax.push_back(best);
    }
  }
  return r;
}

// Small integers, so that maxima tie and "the first maximum" is actually tested.
Tensor integer_valued(const Shape& sizes, uint64_t seed) {
  Generator gen(seed);
  std::vector<float> v = Tensor::Randn(sizes, {}, &gen).ToVector<float>();
  for (float& e : v) e = std::round(e * 1.5f);
  return Tensor::From(v, sizes);
}

// Distinct values 0.1 apart in a scrambled order: finite differences of max need a
// gap wider than their step between the largest and the runner-up.
Tensor distinct_leaf(const Shape& sizes, Device device) {
  const int64_t n = shape_numel(sizes);  // 37 must be coprime with n for a permutation
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = 0.1f * static_cast<float>((i * 37) % n) - 0.05f * n;
  return Tensor::From(v, sizes).To(device).SetRequiresGrad();
}

TEST_P(ReduceOpsTest, EveryDimMatchesDoubleReference) {
  const Tensor base = integer_valued({4, 3, 5}, 7).To(device());
  // The same check on a contiguous tensor and on a transposed (strided) view.
  for (const Tensor& x : {base, base.Transpose(0, 2)}) {
    const std::vector<float> values = x.ToVector<float>();
    for (int64_t dim = -3; dim < 3; ++dim) {
      const int d = static_cast<int>(dim < 0 ? dim + 3 : dim);
      const Reference ref = reduce_reference(values, x.sizes(), d);
      for (bool keepdim : {false, true}) {
        SCOPED_TRACE("strides " + shape_to_string(x.strides()) + " dim " + std::to_string(dim) +
                     (keepdim ? " keepdim" : ""));
        Shape expected = x.sizes();
        if (keepdim) {
          expected[d] = 1;
        } else {
          expected.erase(expected.begin() + d);
        }
        const Tensor s = sum(x, dim, keepdim), m = mean(x, dim, keepdim);
        const Tensor mx = max(x, dim, keepdim), am = argmax(x, dim, keepdim);
        for (const Tensor& t : {s, m, mx, am}) EXPECT_EQ(t.sizes(), expected);
        expect_close(s, ref.sum);
        expect_close(m, ref.mean);
        expect_close(mx, ref.max);
        EXPECT_EQ(am.dtype(), DataType::I32);
        EXPECT_EQ(am.ToVector<int32_t>(), ref.argmax);
      }
    }
  }
}

TEST_P(ReduceOpsTest, AllElementsMatchDoubleReference) {
  const Tensor base = integer_valued({4, 3, 5}, 8).To(device());
  for (const Tensor& x : {base, base.Transpose(0, 2)}) {
    const std::vector<float> values = x.ToVector<float>();
    double s = 0.0;
    float m = values[0];
    for (float v : values) {
      s += v;
      m = std::max(m, v);
    }
    const Tensor total = sum(x), avg = mean(x), top = max(x);
    for (const Tensor& t : {total, avg, top}) EXPECT_EQ(t.dim(), 0);
    expect_close(total, {static_cast<float>(s)});
    expect_close(avg, {static_cast<float>(s / values.size())});
    expect_close(top, {m});
  }
}

TEST_P(ReduceOpsTest, MaxOfLargeTensorFindsFirstMaximum) {
  // Large enough for the multi-threaded path; the maximum appears twice.
  const int64_t n = 100000;
  std::vector<float> v(n, -std::numeric_limits<float>::infinity());
  Tensor all_neg_inf = Tensor::From(v, {n}).To(device());
  EXPECT_EQ(max(all_neg_inf).Item(), v[0]);  // a valid result even when nothing exceeds -inf
  Tensor x0 = all_neg_inf.SetRequiresGrad();
  Tensor m0 = max(x0);
  m0.Backward();
  EXPECT_EQ(x0.Grad().ToVector<float>()[0], 1.0f);  // every element ties: the first wins

  v.assign(n, 0.0f);
  v[70001] = 3.0f;
  v[90000] = 3.0f;
  Tensor x = Tensor::From(v, {n}).To(device()).SetRequiresGrad();
  Tensor m = max(x);
  EXPECT_EQ(m.Item(), 3.0f);
  m.Backward();
  const std::vector<float> g = x.Grad().ToVector<float>();
  EXPECT_EQ(g[70001], 1.0f);
  EXPECT_EQ(g[90000], 0.0f);
  EXPECT_EQ(sum(x.Grad()).Item(), 1.0f);
}

TEST_P(ReduceOpsTest, MaxPropagatesNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = Tensor::From({1, nan, 5, 2, 3, 4}, {2, 3}).To(device());
  const std::vector<float> rows = max(x, 1).ToVector<float>();
  EXPECT_TRUE(std::isnan(rows[0]));
  EXPECT_EQ(rows[1], 4.0f);
  EXPECT_TRUE(std::isnan(max(x).Item()));
}

TEST_P(ReduceOpsTest, MaxGradientGoesToFirstMaximumOnly) {
  Tensor x = Tensor::From({3, 1, 3, 2, 2, 0}, {2, 3}).To(device()).SetRequiresGrad();
  max(x, 1).Backward(Tensor::From({10, 20}, {2}).To(device()));
  expect_close(x.Grad(), {10, 0, 0, 20, 0, 0});
  x.ZeroGrad();
  max(x).Backward();
  expect_close(x.Grad(), {1, 0, 0, 0, 0, 0});
}

TEST_P(ReduceOpsTest, ArgmaxHasNoGradient) {
  Tensor x = randn_leaf({3, 4}, device(), 3);
  Tensor idx = argmax(x, -1, /*keepdim=*/true);
  EXPECT_EQ(idx.sizes(), (Shape{3, 1}));
  EXPECT_EQ(idx.dtype(), DataType::I32);
  EXPECT_FALSE(idx.requires_grad());
}

using Inputs = std::vector<Tensor>;

TEST_P(ReduceOpsTest, GradientsPerDimAndAll) {
  Tensor x = randn_leaf({3, 4, 5}, device(), 11);
  Tensor distinct = distinct_leaf({3, 4, 5}, device());
  for (int64_t dim : {0, 1, 2, -1}) {
    for (bool keepdim : {false, true}) {
      SCOPED_TRACE("dim " + std::to_string(dim) + (keepdim ? " keepdim" : ""));
      check_gradients([=](const Inputs& in) { return sum(in[0], dim, keepdim); }, {x});
      check_gradients([=](const Inputs& in) { return mean(in[0], dim, keepdim); }, {x});
      check_gradients([=](const Inputs& in) { return max(in[0], dim, keepdim); }, {distinct});
    }
  }
  check_gradients([](const Inputs& in) { return sum(in[0]); }, {x});
  check_gradients([](const Inputs& in) { return mean(in[0]); }, {x});
  check_gradients([](const Inputs& in) { return max(in[0]); }, {distinct});
}

TEST_P(ReduceOpsTest, GradientsThroughTransposedInput) {
  Tensor x = randn_leaf({3, 4, 5}, device(), 12);
  Tensor distinct = distinct_leaf({3, 4, 5}, device());
  for (int64_t dim : {0, 1, 2}) {
    SCOPED_TRACE("dim " + std::to_string(dim));
    check_gradients([=](const Inputs& in) { return sum(in[0].Transpose(0, 2), dim); }, {x});
    check_gradients([=](const Inputs& in) { return mean(in[0].Transpose(0, 2), dim); }, {x});
    check_gradients([=](const Inputs& in) { return max(in[0].Transpose(0, 2), dim); }, {distinct});
  }
  check_gradients([](const Inputs& in) { return max(in[0].Transpose(1, 2)); }, {distinct});
  check_gradients([](const Inputs& in) { return mean(in[0].Transpose(1, 2)); }, {x});
}

TEST_P(ReduceOpsTest, BadDimensionNamesTheRange) {
  Tensor x = Tensor::Zeros({2, 3, 4}).To(device());
  expect_error_mentions([&] { sum(x, 3); }, {"[-3, 2]", "3"});
  expect_error_mentions([&] { mean(x, -4); }, {"[-3, 2]", "-4"});
  expect_error_mentions([&] { max(x, 5); }, {"[-3, 2]", "5"});
  expect_error_mentions([&] { argmax(x, 3); }, {"[-3, 2]"});
  expect_error_mentions([&] { max(Tensor::Scalar(1.0f).To(device()), 0); }, {"0-d"});
}

TEST_P(ReduceOpsTest, MaxOfEmptyIsAnError) {
  Tensor x = Tensor::Zeros({2, 0, 3}).To(device());
  expect_error_mentions([&] { max(x, 1); }, {"empty", "[2, 0, 3]"});
  expect_error_mentions([&] { argmax(x, 1); }, {"empty"});
  expect_error_mentions([&] { max(x); }, {"non-empty", "[2, 0, 3]"});
  EXPECT_EQ(max(x, 2).sizes(), (Shape{2, 0}));  // reducing a non-empty dim is fine
  EXPECT_EQ(sum(x, 1).ToVector<float>(), std::vector<float>(6, 0.0f));
}

ZERO_INSTANTIATE_DEVICE_TEST(ReduceOpsTest);

}  // namespace
}  // namespace zero
