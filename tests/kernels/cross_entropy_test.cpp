// Tests of the cross-entropy kernels called directly (kernels/cross_entropy.cpp):
// the saved per-row log-sum-exp, the gradient scaled by a grad_loss tensor, and the
// argument checks of the dispatch. The user-facing op is tested in
// tests/autograd/loss_ops_test.cpp.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "tests/support/test_support.h"
#include "zero/kernels/tensor_ops.h"

namespace zero {
namespace {

using testing::expect_close;

class CrossEntropyTest : public testing::DeviceTest {};

TEST_P(CrossEntropyTest, SavesLogSumExpOfEveryRow) {
  Tensor logits = Tensor::From({0, 0, 1000, 1000, 3, -2}, {3, 2}).To(device());
  Tensor targets = Tensor::FromI32({1, -100, 0}, {3}).To(device());
  Tensor loss = Tensor::Empty({}, logits.options());
  Tensor lse = Tensor::Empty({3}, logits.options());
  ops::cross_entropy_forward(logits, targets, -100, loss, lse);
  const float l2 = std::log(2.0f), l3 = static_cast<float>(3.0 + std::log1p(std::exp(-5.0)));
  expect_close(lse, {l2, 1000 + l2, l3});  // ignored rows get their lse too
  expect_close(loss, {(l2 + (l3 - 3)) / 2});
}

TEST_P(CrossEntropyTest, BackwardScalesByGradLoss) {
  Tensor logits = Tensor::From({0, 0, 1, 1}, {2, 2}).To(device());
  Tensor targets = Tensor::FromI32({0, 1}, {2}).To(device());
  Tensor loss = Tensor::Empty({}, logits.options());
  Tensor lse = Tensor::Empty({2}, logits.options());
  ops::cross_entropy_forward(logits, targets, -100, loss, lse);
  Tensor grad = Tensor::Empty({2, 2}, logits.options());
  ops::cross_entropy_backward(logits, targets, lse, Tensor::Scalar(4.0f).To(device()), -100, grad);
  // (softmax - onehot) * 4 / 2 with softmax = 0.5 everywhere.
  expect_close(grad, {-1, 1, 1, -1});
}

TEST_P(CrossEntropyTest, DispatchChecksShapes) {
  Tensor logits = Tensor::Zeros({2, 3}).To(device());
  Tensor targets = Tensor::FromI32({0, 1}, {2}).To(device());
  Tensor loss = Tensor::Empty({}, logits.options());
  Tensor bad_lse = Tensor::Empty({3}, logits.options());
  try {
    ops::cross_entropy_forward(logits, targets, -100, loss, bad_lse);
    ADD_FAILURE() << "expected a zero::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("lse of shape [2]"), std::string::npos) << e.what();
  }
  Tensor strided = Tensor::Zeros({3, 2}).To(device()).Transpose(0, 1);
  EXPECT_THROW(ops::cross_entropy_forward(strided, targets, -100, loss, bad_lse.Slice(0, 0, 2)),
               Error);
}

// One chunk of the linear cross-entropy: the row logsumexp (one pass over each row on
// CUDA, rescaling its running sum when the maximum grows) and the gradient, written in
// place and, transposed, into [V, n]. Sides that are not multiples of the CUDA kernel's
// 32 x 32 tiles, a row holding -inf and a row of large values.
TEST_P(CrossEntropyTest, ChunkGradientInPlaceAndTransposed) {
  const int64_t n = 37, V = 70;
  Generator gen(4);
  std::vector<float> x = Tensor::Randn({n, V}, {}, &gen).ToVector<float>();
  for (int64_t j = 0; j < V; j += 3) x[2 * V + j] = -INFINITY;  // row 2: masked words
  for (int64_t j = 0; j < V; ++j) x[5 * V + j] += 1000.0f;      // row 5: large logits
  std::vector<int32_t> t(n);
  for (int64_t i = 0; i < n; ++i) t[i] = i % 7 == 3 ? -100 : static_cast<int32_t>((i * 13) % V);
  t[2] = 1;  // a target that is not masked
  const TensorOption on = TensorOption().OnDevice(device());
  const Tensor logits = Tensor::From(x, {n, V}).To(device());
  const Tensor targets = Tensor::FromI32(t, {n}).To(device());
  const Tensor count = Tensor::Scalar(30.0f).To(device());
  const Tensor grad_loss = Tensor::Scalar(2.0f).To(device());
  const Tensor lse = Tensor::Empty({n}, on), loss = Tensor::Zeros({}, on);
  ops::cross_entropy_chunk_forward(logits, targets, -100, count, lse, loss);
  const Tensor transposed = Tensor::Empty({V, n}, on);
  ops::cross_entropy_chunk_backward(logits, targets, lse, grad_loss, count, -100, transposed);
  std::vector<float> want_lse(n), want_grad(n * V);
  for (int64_t i = 0; i < n; ++i) {
    double m = -INFINITY, s = 0.0;
    for (int64_t j = 0; j < V; ++j) m = std::max(m, double(x[i * V + j]));
    for (int64_t j = 0; j < V; ++j) s += std::exp(x[i * V + j] - m);
    want_lse[i] = static_cast<float>(m + std::log(s));
    const double scale = t[i] == -100 ? 0.0 : 2.0 / 30.0;
    for (int64_t j = 0; j < V; ++j) {
      const double p = std::exp(x[i * V + j] - (m + std::log(s)));
      want_grad[i * V + j] = static_cast<float>(scale * (p - (j == t[i] ? 1.0 : 0.0)));
    }
  }
  expect_close(lse, want_lse, 1e-5f, 1e-5f);
  expect_close(logits, want_grad, 1e-4f, 1e-6f);
  expect_close(transposed, logits.Transpose(0, 1).Contiguous(), 0.0f, 0.0f);
}

ZERO_INSTANTIATE_DEVICE_TEST(CrossEntropyTest);

}  // namespace
}  // namespace zero
