// Tests of DimsArg (kernels/dims_arg.cpp): the linear-index -> element-offset map
// every strided kernel relies on, broadcasting (stride 0), and the dimension limit.
#include <string>

#include "tests/support/test_support.h"
#include "zero/kernels/dims_arg.h"

namespace zero {
namespace {

using testing::contains;

TEST(DimsArgTest, OffsetOfPermutedAndSlicedTensorMatchesManualComputation) {
  // A (3, 4, 5, 6) buffer, permuted to (5, 3, 6, 4), then dims 0 and 2 sliced with steps.
  TensorMeta m = contiguous_meta({3, 4, 5, 6}, DataType::F32, Device::Cpu());
  m = meta_permute(m, {2, 0, 3, 1});  // sizes (5, 3, 6, 4), strides (6, 120, 1, 30)
  m = meta_slice(m, 0, 1, 5, 2);      // indices 1, 3
  m = meta_slice(m, 2, -4, 6, 3);     // indices 2, 5
  ASSERT_EQ(m.sizes, (Shape{2, 3, 2, 4}));
  const DimsArg arg = DimsArg::Of(m);
  EXPECT_EQ(arg.ndim, 4);
  int64_t linear = 0;
  for (int64_t a = 0; a < 2; ++a) {
    for (int64_t b = 0; b < 3; ++b) {
      for (int64_t c = 0; c < 2; ++c) {
        for (int64_t d = 0; d < 4; ++d) {
          // Original coordinates (i0, i1, i2, i3) = (b, d, 1 + 2a, 2 + 3c).
          const int64_t expected = b * 120 + d * 30 + (1 + 2 * a) * 6 + (2 + 3 * c);
          ASSERT_EQ(m.offset + arg.Offset(linear), expected) << "linear index " << linear;
          ++linear;
        }
      }
    }
  }
}

TEST(DimsArgTest, ScalarOffsetIsZero) {
  const DimsArg arg = DimsArg::Of(contiguous_meta({}, DataType::F32, Device::Cpu()));
  EXPECT_EQ(arg.ndim, 0);
  EXPECT_EQ(arg.Offset(0), 0);
}

TEST(DimsArgTest, BroadcastGivesStrideZero) {
  const TensorMeta m = contiguous_meta({3, 1}, DataType::F32, Device::Cpu());
  const DimsArg arg = DimsArg::Broadcast(m, {2, 3, 4});
  EXPECT_EQ(arg.ndim, 3);
  EXPECT_EQ(arg.sizes[0], 2);
  EXPECT_EQ(arg.sizes[2], 4);
  EXPECT_EQ(arg.strides[0], 0);
  EXPECT_EQ(arg.strides[1], 1);
  EXPECT_EQ(arg.strides[2], 0);
  // Position (i, j, k) of the output reads element j.
  for (int64_t i = 0; i < 24; ++i) EXPECT_EQ(arg.Offset(i), (i / 4) % 3);
  const DimsArg scalar = DimsArg::Broadcast(contiguous_meta({}, DataType::F32, Device::Cpu()), {5});
  EXPECT_EQ(scalar.strides[0], 0);
  EXPECT_THROW(DimsArg::Broadcast(m, {2, 4}), Error);
  EXPECT_THROW(DimsArg::Broadcast(m, {3}), Error);
}

TEST(DimsArgTest, MoreThanEightDimensionsThrows) {
  const TensorMeta eight = contiguous_meta(Shape(8, 2), DataType::F32, Device::Cpu());
  EXPECT_NO_THROW(DimsArg::Of(eight));
  const TensorMeta nine = contiguous_meta(Shape(9, 2), DataType::F32, Device::Cpu());
  try {
    DimsArg::Of(nine);
    FAIL() << "expected an error for 9 dimensions";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "8")) << e.what();
    EXPECT_TRUE(contains(e.what(), shape_to_string(Shape(9, 2)))) << e.what();
  }
  EXPECT_THROW(DimsArg::Broadcast(eight, Shape(9, 2)), Error);
}

TEST(DimsArgTest, NineDimensionalStridedKernelThrows) {
  Tensor x = Tensor::Zeros(Shape(9, 2));
  Tensor t = x.Transpose(0, 8);  // not contiguous: the kernel needs a DimsArg
  EXPECT_THROW(exp(t), Error);
  EXPECT_NO_THROW(exp(x));  // contiguous: the flat fast path has no limit
}

}  // namespace
}  // namespace zero
