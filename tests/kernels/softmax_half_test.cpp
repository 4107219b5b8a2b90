// Tests of softmax and log-softmax on BF16 and F16 rows (kernels/softmax.cpp), forward
// and backward, against the FP32 kernels on the same rounded inputs (Note [Testing a
// 16-bit kernel against FP32] in half_support.h), for a short row, a row the CUDA FP32
// register path would take and a long one; and the dtype checks.
#include <string>

#include "tests/kernels/half_support.h"
#include "tests/support/test_support.h"
#include "zero/kernels/tensor_ops.h"

namespace zero {
namespace {

using testing::as;
using testing::contains;
using testing::empty;
using testing::error_message;
using testing::expect_rounded_from;
using testing::rounded_randn;

class SoftmaxHalfTest : public testing::DeviceTest {};

TEST_P(SoftmaxHalfTest, MatchesFp32OnRoundedInputs) {
  for (int64_t n : {7, 1024, 9000}) {
    for (DataType dtype : {DataType::BF16, DataType::F16}) {
      for (bool log : {false, true}) {
        SCOPED_TRACE(std::string(log ? "log_softmax " : "softmax ") + to_string(dtype) +
                     ", n = " + std::to_string(n));
        const auto forward = log ? ops::log_softmax_forward : ops::softmax_forward;
        const auto backward = log ? ops::log_softmax_backward : ops::softmax_backward;
        const Tensor x = rounded_randn({5, n}, dtype, 61 + n, 4.0f);
        const Tensor g = rounded_randn({5, n}, dtype, 62 + n);
        const Tensor want = Tensor::Empty({5, n});
        forward(x, want);
        const Tensor y = empty({5, n}, dtype, device());
        forward(as(x, dtype, device()), y);
        expect_rounded_from(y, want);
        // The backward from the 16-bit y the forward gave, against FP32 on that same y.
        const Tensor want_back = Tensor::Empty({5, n});
        backward(testing::cpu_f32(y), g, want_back);
        const Tensor gx = empty({5, n}, dtype, device());
        backward(y, as(g, dtype, device()), gx);
        expect_rounded_from(gx, want_back);
      }
    }
  }
}

TEST_P(SoftmaxHalfTest, ChecksNameTheDtypes) {
  const Tensor x = empty({2, 4}, DataType::F16, device());
  const std::string mixed =
      error_message([&] { ops::softmax_forward(x, empty({2, 4}, DataType::F32, device())); });
  EXPECT_TRUE(contains(mixed, "every operand of dtype f16, got f32")) << mixed;
  const Tensor i = empty({2, 4}, DataType::I32, device());
  const std::string ints = error_message([&] { ops::log_softmax_forward(i, i); });
  EXPECT_TRUE(contains(ints, "f32, bf16 or f16, got i32")) << ints;
}

ZERO_INSTANTIATE_DEVICE_TEST(SoftmaxHalfTest);

}  // namespace
}  // namespace zero
