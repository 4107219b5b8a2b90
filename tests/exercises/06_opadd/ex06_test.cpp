// Tests of exercise 06 (solutions/06_opadd/op_mul_add.h): OpMulAdd's gradients
// against hand-computed values, central finite differences (check_gradients), and
// the same expression built from the library's OpMul and OpAdd, with broadcasting
// and a transposed input, on every device; and that Backward_ itself returns no gradient
// for an input that needs none.
#include "exercise_test.h"
#include "op_mul_add.h"
#include "tests/support/test_support.h"

namespace zero {
namespace {

using ch06::mul_add;
using testing::check_gradients;
using testing::expect_close;
using testing::randn_leaf;

class Ex06MulAddTest : public testing::DeviceTest {};

TEST_P(Ex06MulAddTest, HandComputedValuesAndGradients) {
  ZERO_EXERCISE("ex06.1");
  const TensorOption opt = TensorOption().OnDevice(device()).WithRequiresGrad();
  Tensor a = Tensor::From({1, 2, 3, 4, 5, 6}, {2, 3}, opt);
  Tensor b = Tensor::From({10, 20, 30}, {3}, opt);
  Tensor c = Tensor::From({100, 200}, {2, 1}, opt);
  Tensor y = mul_add(a, b, c);  // (2, 3)
  expect_close(y, {110, 140, 190, 240, 300, 380});
  y.Backward(Tensor::Ones({2, 3}, TensorOption().OnDevice(device())));
  expect_close(a.Grad(), {10, 20, 30, 10, 20, 30});  // b, read once per row
  expect_close(b.Grad(), {5, 7, 9});                 // column sums of a
  expect_close(c.Grad(), {3, 3});                    // one per element of its row
}

TEST_P(Ex06MulAddTest, GradientsMatchFiniteDifferences) {
  ZERO_EXERCISE("ex06.1");
  auto f = [](const std::vector<Tensor>& x) { return mul_add(x[0], x[1], x[2]); };
  check_gradients(f, {randn_leaf({2, 3}, device(), 1), randn_leaf({3}, device(), 2),
                      randn_leaf({2, 1}, device(), 3)});
  // Outer-product shapes: neither a nor b has the output's shape [3, 4].
  check_gradients(f, {randn_leaf({3, 1}, device(), 4), randn_leaf({1, 4}, device(), 5),
                      randn_leaf({4}, device(), 6)});
}

TEST_P(Ex06MulAddTest, GradientsMatchComposedOpsWithTransposedInput) {
  ZERO_EXERCISE("ex06.1");
  Tensor a = randn_leaf({4, 3}, device(), 1);
  Tensor b = randn_leaf({3}, device(), 2);
  Tensor c = randn_leaf({3, 1}, device(), 3);
  const Tensor g = Tensor::Randn({3, 4}, TensorOption().OnDevice(device()));
  mul_add(a.Transpose(0, 1), b.Unsqueeze(1), c).Backward(g);  // (3, 4)
  const Tensor ga = a.Grad(), gb = b.Grad(), gc = c.Grad();
  a.ZeroGrad();
  b.ZeroGrad();
  c.ZeroGrad();
  (a.Transpose(0, 1) * b.Unsqueeze(1) + c).Backward(g);
  expect_close(ga, a.Grad());
  expect_close(gb, b.Grad());
  expect_close(gc, c.Grad());
}

TEST_P(Ex06MulAddTest, OnlyInputsThatNeedGradGetOne) {
  ZERO_EXERCISE("ex06.1");
  Tensor a = randn_leaf({2, 3}, device(), 1);
  Tensor b = Tensor::Full({2, 3}, 3.0f, TensorOption().OnDevice(device()));
  Tensor c = Tensor::Ones({3}, TensorOption().OnDevice(device()));
  sum(mul_add(a, b, c)).Backward();
  expect_close(a.Grad(), {3, 3, 3, 3, 3, 3});
  EXPECT_FALSE(b.Grad().defined());
  EXPECT_FALSE(c.Grad().defined());
}

// The engine drops a gradient nobody asked for, so the test above cannot see one that
// Backward_ computed anyway; asking the op itself can. A frozen weight or a constant
// input should cost no backward work.
TEST_P(Ex06MulAddTest, BackwardReturnsNoGradientForAnInputThatNeedsNone) {
  ZERO_EXERCISE("ex06.1");
  const TensorOption plain = TensorOption().OnDevice(device());
  const Tensor g = Tensor::Ones({2, 3}, plain);
  for (int needs = 0; needs < 3; ++needs) {  // only input `needs` requires grad
    std::vector<Tensor> in = {Tensor::Full({2, 3}, 2.0f, plain), Tensor::Full({3}, 3.0f, plain),
                              Tensor::Full({2, 1}, 4.0f, plain)};
    in[needs].SetRequiresGrad();
    const Tensor y = mul_add(in[0], in[1], in[2]);
    ASSERT_NE(y.grad_fn(), nullptr) << "mul_add recorded no op although an input requires grad";
    const std::vector<Tensor> grads = y.grad_fn()->RunBackward({g});
    ASSERT_EQ(grads.size(), 3u);
    for (int i = 0; i < 3; ++i) {
      if (i == needs) {
        EXPECT_TRUE(grads[i].defined()) << "input " << i << " requires grad but got none";
      } else {
        EXPECT_FALSE(grads[i].defined())
            << "input " << i << " does not require grad (needs_grad(" << i
            << ") is false), so Backward_ must return Tensor() for it; only input " << needs
            << " requires grad";
      }
    }
  }
}

ZERO_INSTANTIATE_DEVICE_TEST(Ex06MulAddTest);

}  // namespace
}  // namespace zero
