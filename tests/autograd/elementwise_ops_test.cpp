// Tests of the element-wise ops (autograd/ops/elementwise_ops.cpp): values against
// hand-computed references, broadcasting, and gradients against finite differences.
#include "tests/support/test_support.h"

namespace zero {
namespace {

using testing::check_gradients;
using testing::expect_close;
using testing::randn_leaf;

class ElementwiseOpsTest : public testing::DeviceTest {};

TEST_P(ElementwiseOpsTest, AddBroadcastsRowVector) {
  Tensor a = Tensor::From({1, 2, 3, 4, 5, 6}, {2, 3}).To(device());
  Tensor b = Tensor::From({10, 20, 30}, {3}).To(device());
  Tensor c = a + b;
  EXPECT_EQ(c.sizes(), (Shape{2, 3}));
  expect_close(c, {11, 22, 33, 14, 25, 36});
}

TEST_P(ElementwiseOpsTest, BinaryGradientsWithBroadcast) {
  Tensor a = randn_leaf({2, 3}, device(), 1);
  Tensor b = randn_leaf({3}, device(), 2);
  Tensor pos = (randn_leaf({2, 1}, device(), 3) * 0.1f + 2.0f).Detach().SetRequiresGrad();
  check_gradients([](const std::vector<Tensor>& x) { return x[0] + x[1]; }, {a, b});
  check_gradients([](const std::vector<Tensor>& x) { return x[0] - x[1]; }, {a, b});
  check_gradients([](const std::vector<Tensor>& x) { return x[0] * x[1]; }, {a, b});
  check_gradients([](const std::vector<Tensor>& x) { return x[0] / x[1]; }, {a, pos});
}

INSTANTIATE_TEST_SUITE_P(Devices, ElementwiseOpsTest,
                         ::testing::Values(Device::Cpu(), Device::Cuda(0)),
                         testing::device_name);

}  // namespace
}  // namespace zero
