// Tests of softmax and log-softmax over the last dimension (autograd/ops/softmax_ops.cpp):
// values against a double-precision reference, rows summing to 1, log_softmax equal
// to log(softmax), finite results for logits of +-1000, strided inputs, and gradients
// against finite differences.
#include <cmath>
#include <string>

#include "tests/support/test_support.h"

namespace zero {
namespace {

using testing::check_gradients;
using testing::expect_close;
using testing::randn_leaf;

class SoftmaxOpsTest : public testing::DeviceTest {};

// Softmax (or log-softmax) of each row of length `cols` of row-major `x`, in double.
std::vector<float> softmax_reference(const std::vector<float>& x, int64_t cols, bool log) {
  std::vector<float> out(x.size());
  for (size_t r = 0; r < x.size() / cols; ++r) {
    const float* row = x.data() + r * cols;
    double m = row[0], s = 0.0;
    for (int64_t j = 0; j < cols; ++j) m = std::max<double>(m, row[j]);
    for (int64_t j = 0; j < cols; ++j) s += std::exp(row[j] - m);
    for (int64_t j = 0; j < cols; ++j) {
      const double log_p = row[j] - m - std::log(s);
      out[r * cols + j] = static_cast<float>(log ? log_p : std::exp(log_p));
    }
  }
  return out;
}

TEST_P(SoftmaxOpsTest, RowsSumToOneAndMatchReference) {
  Tensor x = (randn_leaf({2, 3, 7}, device(), 1) * 3.0f).Detach();
  Tensor y = softmax(x);
  EXPECT_EQ(y.sizes(), x.sizes());
  expect_close(y, softmax_reference(x.ToVector<float>(), 7, false), 1e-5f, 1e-7f);
  expect_close(sum(y, -1), std::vector<float>(6, 1.0f));
}

TEST_P(SoftmaxOpsTest, LogSoftmaxIsLogOfSoftmax) {
  Tensor x = (randn_leaf({4, 9}, device(), 2) * 3.0f).Detach();
  Tensor ls = log_softmax(x);
  expect_close(ls, softmax_reference(x.ToVector<float>(), 9, true), 1e-5f, 1e-5f);
  expect_close(ls, log(softmax(x)), 1e-5f, 1e-5f);
}

TEST_P(SoftmaxOpsTest, LargeLogitsStayFinite) {
  // Without subtracting the row maximum, exp(1000) overflows to inf and gives NaN.
  Tensor x = Tensor::From({1000, -1000, 999, 1000, 1000, -1000}, {2, 3}).To(device());
  const double e = std::exp(-1.0);
  expect_close(softmax(x), {static_cast<float>(1 / (1 + e)), 0.0f, static_cast<float>(e / (1 + e)),
                            0.5f, 0.5f, 0.0f});
  const float l2 = std::log(2.0f);
  const float l1e = static_cast<float>(std::log1p(e));
  expect_close(log_softmax(x), {-l1e, -2000 - l1e, -1 - l1e, -l2, -l2, -2000 - l2}, 1e-6f, 1e-4f);

  // Long rows, enough of them for the multi-threaded path.
  std::vector<float> big(16 * 4096);
  for (size_t i = 0; i < big.size(); ++i) big[i] = (i % 3 == 0) ? 1000.0f : -1000.0f;
  Tensor xb = Tensor::From(big, {16, 4096}).To(device());
  for (const Tensor& t : {softmax(xb), log_softmax(xb)}) {
    for (float v : t.ToVector<float>()) ASSERT_TRUE(std::isfinite(v)) << v;
  }
  expect_close(sum(softmax(xb), -1), std::vector<float>(16, 1.0f));
  expect_close(log_softmax(xb), softmax_reference(big, 4096, true), 1e-6f, 1e-3f);
}

TEST_P(SoftmaxOpsTest, TransposedInput) {
  Tensor x = randn_leaf({6, 4}, device(), 3).Transpose(0, 1);  // (4, 6), strided
  const std::vector<float> values = x.ToVector<float>();
  expect_close(softmax(x), softmax_reference(values, 6, false), 1e-5f, 1e-7f);
  expect_close(log_softmax(x), softmax_reference(values, 6, true), 1e-5f, 1e-5f);
}

TEST_P(SoftmaxOpsTest, Gradients) {
  Tensor x = randn_leaf({3, 5}, device(), 4);
  Tensor x3 = randn_leaf({2, 3, 4}, device(), 5);
  for (const Tensor& in : {x, x3}) {
    check_gradients([](const std::vector<Tensor>& v) { return softmax(v[0]); }, {in});
    check_gradients([](const std::vector<Tensor>& v) { return log_softmax(v[0]); }, {in});
  }
  // Strided input: the gradient flows back through the contiguous copy.
  check_gradients([](const std::vector<Tensor>& v) { return softmax(v[0].Transpose(0, 1)); }, {x});
  check_gradients([](const std::vector<Tensor>& v) { return log_softmax(v[0].Transpose(0, 1)); },
                  {x});
}

TEST_P(SoftmaxOpsTest, BroadcastGradientIsHandled) {
  // sum() sends back a stride-0 gradient; each softmax row sums to 1, so d/dx = 0.
  Tensor x = randn_leaf({3, 5}, device(), 6);
  sum(softmax(x)).Backward();
  expect_close(x.Grad(), std::vector<float>(15, 0.0f), 0.0f, 1e-6f);
  // log_softmax: d/dx_j sum_k y_k = 1 - C softmax_j.
  x.ZeroGrad();
  sum(log_softmax(x)).Backward();
  const std::vector<float> p = softmax(x).ToVector<float>();
  std::vector<float> expected(p.size());
  for (size_t i = 0; i < p.size(); ++i) expected[i] = 1.0f - 5.0f * p[i];
  expect_close(x.Grad(), expected, 1e-5f, 1e-6f);
}

TEST_P(SoftmaxOpsTest, ZeroDimensionalInputIsAnError) {
  Tensor s = Tensor::Scalar(1.0f).To(device());
  for (auto f : {softmax, log_softmax}) {
    try {
      f(s);
      ADD_FAILURE() << "expected a zero::Error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("0-d"), std::string::npos) << e.what();
    }
  }
}

ZERO_INSTANTIATE_DEVICE_TEST(SoftmaxOpsTest);

}  // namespace
}  // namespace zero
