// Tests of the softmax kernels called directly (kernels/softmax.cpp): the dispatch
// rejects strided and mismatched operands (the kernels read contiguous rows), and an
// empty last dimension is harmless. Values and gradients are tested through the ops
// in tests/autograd/softmax_ops_test.cpp.
#include <string>

#include "tests/support/test_support.h"
#include "zero/kernels/tensor_ops.h"

namespace zero {
namespace {

class SoftmaxTest : public testing::DeviceTest {};

TEST_P(SoftmaxTest, RejectsStridedAndMismatchedOperands) {
  Tensor x = Tensor::Zeros({3, 4}).To(device()).Transpose(0, 1);  // (4, 3), strided
  Tensor y = Tensor::Empty({4, 3}).To(device());
  try {
    ops::softmax_forward(x, y);
    ADD_FAILURE() << "expected a zero::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Contiguous()"), std::string::npos) << e.what();
  }
  Tensor x2 = Tensor::Zeros({4, 3}).To(device());
  EXPECT_THROW(ops::log_softmax_forward(x2, Tensor::Empty({3, 4}).To(device())), Error);
  EXPECT_THROW(ops::softmax_backward(x2, x2, Tensor::Empty({4}).To(device())), Error);
}

TEST_P(SoftmaxTest, EmptyLastDimension) {
  Tensor x = Tensor::Zeros({3, 0}).To(device());
  Tensor y = Tensor::Empty({3, 0}).To(device());
  ops::softmax_forward(x, y);
  ops::log_softmax_forward(x, y);
  EXPECT_EQ(y.numel(), 0);
}

ZERO_INSTANTIATE_DEVICE_TEST(SoftmaxTest);

}  // namespace
}  // namespace zero
