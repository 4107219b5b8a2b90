// Tests of masked_fill and concat (autograd/ops/shape_ops.cpp): values with broadcast
// masks and strided inputs, gradients against finite differences and by hand, and
// the errors for masks that do not broadcast and tensors that do not fit together.
#include <limits>
#include <string>

#include "tests/support/test_support.h"

namespace zero {
namespace {

using testing::expect_error_mentions;

using testing::check_gradients;
using testing::expect_close;
using testing::randn_leaf;

class ShapeOpsTest : public testing::DeviceTest {};

TEST_P(ShapeOpsTest, MaskedFillBroadcastsMask) {
  Tensor x = Tensor::From({1, 2, 3, 4, 5, 6}, {2, 3}).To(device());
  Tensor row_mask = Tensor::FromI32({0, 1, 0}, {3}).To(device());
  expect_close(masked_fill(x, row_mask, -1.0f), {1, -1, 3, 4, -1, 6});
  Tensor col_mask = Tensor::FromI32({0, 5}, {2, 1}).To(device());  // any non-zero fills
  expect_close(masked_fill(x, col_mask, 9.0f), {1, 2, 3, 9, 9, 9});
  Tensor full_mask = Tensor::FromI32({1, 0, 0, 0, 0, -1}, {2, 3}).To(device());
  expect_close(masked_fill(x, full_mask, 0.0f), {0, 2, 3, 4, 5, 0});
}

TEST_P(ShapeOpsTest, MaskedFillCausalMaskOnTransposedInput) {
  Tensor x = Tensor::From({1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3}).To(device()).Transpose(0, 1);
  Tensor upper = Tensor::FromI32({0, 1, 1, 0, 0, 1, 0, 0, 0}, {3, 3}).To(device());
  const float inf = std::numeric_limits<float>::infinity();
  expect_close(masked_fill(x, upper, -inf), {1, -inf, -inf, 2, 5, -inf, 3, 6, 9});
}

TEST_P(ShapeOpsTest, MaskedFillGradientFlowsWhereMaskIsZero) {
  Tensor x = randn_leaf({2, 3}, device(), 1);
  Tensor mask = Tensor::FromI32({1, 0, 1}, {3}).To(device());
  masked_fill(x, mask, 5.0f).Backward(Tensor::Full({2, 3}, 2.0f).To(device()));
  expect_close(x.Grad(), {0, 2, 0, 0, 2, 0});
  Tensor y = randn_leaf({4, 3}, device(), 2);
  Tensor m2 = Tensor::FromI32({0, 1, 1, 0}, {4, 1}).To(device());
  check_gradients([&](const std::vector<Tensor>& in) { return masked_fill(in[0], m2, -3.0f); },
                  {y});
  Tensor column = mask.View({3, 1});
  check_gradients(
      [&](const std::vector<Tensor>& in) { return masked_fill(in[0].Transpose(0, 1), column, 1); },
      {y});
}

TEST_P(ShapeOpsTest, MaskedFillRejectsBadMask) {
  Tensor x = Tensor::Zeros({2, 3}).To(device());
  expect_error_mentions(
      [&] { masked_fill(x, Tensor::FromI32({1, 0}, {2}).To(device()), 0.0f); },
      {"[2, 3]", "[2]"});
  Tensor bigger = Tensor::FromI32(std::vector<int32_t>(12, 0), {2, 2, 3}).To(device());
  expect_error_mentions([&] { masked_fill(x, bigger, 0.0f); }, {"[2, 3]", "[2, 2, 3]"});
  expect_error_mentions([&] { masked_fill(x, Tensor::Zeros({3}).To(device()), 0.0f); },
                        {"i32", "f32"});
}

TEST_P(ShapeOpsTest, ConcatAlongEachDim) {
  Tensor a = Tensor::From({1, 2, 3, 4}, {2, 2}).To(device());
  Tensor b = Tensor::From({5, 6}, {1, 2}).To(device());
  Tensor c = concat({a, b}, 0);
  EXPECT_EQ(c.sizes(), (Shape{3, 2}));
  expect_close(c, {1, 2, 3, 4, 5, 6});

  Tensor t = Tensor::From({7, 8, 9, 10}, {2, 2}).To(device()).Transpose(0, 1);  // [[7,9],[8,10]]
  Tensor d = concat({a, Tensor::From({0, 0}, {2, 1}).To(device()), t}, -1);
  EXPECT_EQ(d.sizes(), (Shape{2, 5}));
  expect_close(d, {1, 2, 0, 7, 9, 3, 4, 0, 8, 10});

  Tensor ids = concat({Tensor::FromI32({1, 2}, {2}), Tensor::FromI32({3}, {1})}, 0);
  EXPECT_EQ(ids.dtype(), DataType::I32);
  EXPECT_EQ(ids.ToVector<int32_t>(), (std::vector<int32_t>{1, 2, 3}));
}

TEST_P(ShapeOpsTest, ConcatGradients) {
  Tensor a = randn_leaf({2, 3}, device(), 3);
  Tensor b = randn_leaf({1, 3}, device(), 4);
  Tensor c = randn_leaf({2, 2}, device(), 5);
  Tensor e = randn_leaf({3, 2}, device(), 6);
  check_gradients([](const std::vector<Tensor>& in) { return concat({in[0], in[1]}, 0); }, {a, b});
  check_gradients([](const std::vector<Tensor>& in) { return concat({in[0], in[1]}, 1); }, {a, c});
  // A strided input, and one input that needs no gradient.
  check_gradients(
      [&](const std::vector<Tensor>& in) { return concat({in[0], in[1].Transpose(0, 1)}, 0); },
      {b, e});
  Tensor fixed = Tensor::Ones({1, 3}).To(device());
  Tensor x = randn_leaf({2, 3}, device(), 7);
  concat({fixed, x}, 0).Backward(Tensor::Arange(0, 9).Reshape({3, 3}).To(device()));
  expect_close(x.Grad(), {3, 4, 5, 6, 7, 8});
}

TEST_P(ShapeOpsTest, ConcatErrors) {
  Tensor a = Tensor::Zeros({2, 3}).To(device());
  Tensor b = Tensor::Zeros({2, 4}).To(device());
  expect_error_mentions([&] { concat({a, b}, 0); }, {"[2, 3]", "[2, 4]", "dimension 0"});
  EXPECT_EQ(concat({a, b}, 1).sizes(), (Shape{2, 7}));
  expect_error_mentions([&] { concat({}, 0); }, {"empty"});
  expect_error_mentions([&] { concat({a, Tensor::Zeros({3}).To(device())}, 0); },
                        {"[2, 3]", "[3]"});
  expect_error_mentions([&] { concat({a, Tensor::FromI32({1, 2, 3}, {1, 3}).To(device())}, 0); },
                        {"f32", "i32"});
  expect_error_mentions([&] { concat({a, a}, 2); }, {"[-2, 1]", "2"});
}

ZERO_INSTANTIATE_DEVICE_TEST(ShapeOpsTest);

}  // namespace
}  // namespace zero
