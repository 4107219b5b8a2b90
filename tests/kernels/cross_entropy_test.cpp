// Tests of the cross-entropy kernels called directly (kernels/cross_entropy.cpp):
// the saved per-row log-sum-exp, the gradient scaled by a grad_loss tensor, and the
// argument checks of the dispatch. The user-facing op is tested in
// tests/autograd/loss_ops_test.cpp.
#include <cmath>
#include <string>

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

ZERO_INSTANTIATE_DEVICE_TEST(CrossEntropyTest);

}  // namespace
}  // namespace zero
