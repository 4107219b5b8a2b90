// Tests of dropout on BF16 and F16 tensors (kernels/dropout.cpp): the same Philox mask
// as in FP32, and each kept value the FP32 x / (1 - p) rounded once (Note [Testing a
// 16-bit kernel against FP32] in half_support.h), forward and backward; the checks.
#include <string>
#include <vector>

#include "tests/kernels/half_support.h"
#include "tests/support/test_support.h"
#include "zero/kernels/tensor_ops.h"

namespace zero {
namespace {

using testing::as;
using testing::contains;
using testing::cpu_f32;
using testing::empty;
using testing::error_message;
using testing::expect_rounded_from;
using testing::rounded_randn;

class DropoutHalfTest : public testing::DeviceTest {};

TEST_P(DropoutHalfTest, SameMaskAndOneRounding) {
  constexpr float kP = 0.3f;
  for (DataType dtype : {DataType::BF16, DataType::F16}) {
    SCOPED_TRACE(to_string(dtype));
    // 1001 elements: an odd count, so the last thread of the CUDA kernel has a partial
    // group of four, and an offset that is not a multiple of 4.
    const Tensor x = rounded_randn({7, 143}, dtype, 51);
    const Tensor want = Tensor::Empty({7, 143}), want_back = Tensor::Empty({7, 143});
    ops::dropout_forward(x, kP, 99, 6, want);
    ops::dropout_backward(x, kP, 99, 6, want_back);
    const Tensor y = empty({7, 143}, dtype, device()), gx = empty({7, 143}, dtype, device());
    ops::dropout_forward(as(x, dtype, device()), kP, 99, 6, y);
    ops::dropout_backward(as(x, dtype, device()), kP, 99, 6, gx);
    expect_rounded_from(y, want);
    expect_rounded_from(gx, want_back);
    // The mask itself, element for element: zero exactly where FP32 dropped.
    const std::vector<float> got = cpu_f32(y).ToVector<float>(), w = want.ToVector<float>();
    int dropped = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i] == 0.0f, w[i] == 0.0f) << "element " << i;
      dropped += w[i] == 0.0f;
    }
    EXPECT_GT(dropped, 200);  // about 30% of 1001
    EXPECT_LT(dropped, 400);
  }
}

TEST_P(DropoutHalfTest, ChecksNameTheDtypes) {
  const Tensor x = empty({4}, DataType::BF16, device());
  const std::string mixed =
      error_message([&] { ops::dropout_forward(x, 0.1f, 1, 0, empty({4}, DataType::F32, device())); });
  EXPECT_TRUE(contains(mixed, "output of dtype bf16, got f32")) << mixed;
  const Tensor i = empty({4}, DataType::I32, device());
  const std::string ints = error_message([&] { ops::dropout_forward(i, 0.1f, 1, 0, i); });
  EXPECT_TRUE(contains(ints, "x of dtype f32, bf16 or f16, got i32")) << ints;
}

ZERO_INSTANTIATE_DEVICE_TEST(DropoutHalfTest);

}  // namespace
}  // namespace zero
