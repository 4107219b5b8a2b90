// Tests of exercise 05 (solutions/05_dispatch/offset.h): operand offsets of real
// Zero tensors (permuted, sliced, expanded) checked element by element against the
// values Tensor::ToVector reads, and broadcast strides against Tensor::Expand.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "offset.h"
#include "zero/core/tensor.h"

namespace zero {
namespace {

using ch05::broadcast_dims;
using ch05::operand_offset;

// 0, 1, 2, ... in a contiguous buffer, so an element's value is its buffer position.
Tensor positions(const Shape& sizes) {
  return Tensor::Arange(0, shape_numel(sizes)).View(sizes);
}

// For every row-major position of view `t`, the element at
// buffer[t.offset() + operand_offset(i, arg)] must be the i-th value ToVector reads.
void expect_offsets_read_view(const Tensor& t, const DimsArg& arg) {
  const float* buffer = static_cast<const float*>(t.node()->data());
  const std::vector<float> values = t.ToVector<float>();
  ASSERT_EQ(static_cast<int64_t>(values.size()), t.numel());
  int reported = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const float got = buffer[t.offset() + operand_offset(i, arg)];
    if (got != values[i] && reported++ < 5) {
      ADD_FAILURE() << "position " << i << " of shape " << shape_to_string(t.sizes())
                    << " strides " << shape_to_string(t.strides()) << ": read " << got
                    << ", expected " << values[i];
    }
  }
}

TEST(Ex05OffsetTest, ContiguousOffsetIsTheLinearIndex) {
  const Tensor t = positions({2, 3, 4});
  const DimsArg arg = DimsArg::Of(t.meta());
  for (int64_t i = 0; i < t.numel(); ++i) EXPECT_EQ(operand_offset(i, arg), i);
}

TEST(Ex05OffsetTest, HandComputedTransposeOffsets) {
  // A [3, 2] view of a [2, 3] buffer: strides [1, 3]. Position 3 is (1, 1) -> 1 + 3 = 4.
  const Tensor t = positions({2, 3}).Transpose(0, 1);
  const DimsArg arg = DimsArg::Of(t.meta());
  const int64_t expected[] = {0, 3, 1, 4, 2, 5};
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(operand_offset(i, arg), expected[i]) << "i=" << i;
}

TEST(Ex05OffsetTest, PermutedView) {
  const Tensor t = positions({2, 3, 4}).Permute({2, 0, 1});  // (4, 2, 3)
  expect_offsets_read_view(t, DimsArg::Of(t.meta()));
}

TEST(Ex05OffsetTest, SlicedViewWithStorageOffset) {
  // Rows 1..3, every second column from 1: strides (6, 2), storage offset 7.
  const Tensor t = positions({4, 6}).Slice(0, 1, 4).Slice(1, 1, 6, 2);  // (3, 3)
  ASSERT_GT(t.offset(), 0);
  expect_offsets_read_view(t, DimsArg::Of(t.meta()));
}

TEST(Ex05OffsetTest, ExpandedViewHasStrideZero) {
  const Tensor t = positions({3, 1}).Expand({2, 3, 4});  // (2, 3, 4), strides (0, 1, 0)
  expect_offsets_read_view(t, DimsArg::Of(t.meta()));
}

TEST(Ex05BroadcastTest, MatchesExpandStrides) {
  const Tensor x = positions({3, 1});
  const Shape out = {2, 3, 4};
  const DimsArg arg = broadcast_dims(x.sizes(), x.strides(), out);
  const Tensor expanded = x.Expand(out);
  ASSERT_EQ(arg.ndim, 3);
  for (int d = 0; d < 3; ++d) {
    EXPECT_EQ(arg.sizes[d], out[d]) << "dim " << d;
    EXPECT_EQ(arg.strides[d], expanded.stride(d)) << "dim " << d;
  }
  expect_offsets_read_view(expanded, arg);
}

TEST(Ex05BroadcastTest, RowOfATransposedViewReadsTheRightElements) {
  // A non-contiguous operand broadcast along a new leading dimension.
  const Tensor x = positions({4, 3}).Transpose(0, 1).Slice(0, 1, 2);  // (1, 4), strides (1, 3)
  const Shape out = {5, 2, 4};
  const DimsArg arg = broadcast_dims(x.sizes(), x.strides(), out);
  expect_offsets_read_view(x.Expand(out), arg);
}

TEST(Ex05BroadcastTest, SameShapeKeepsTheStrides) {
  const Tensor x = positions({4, 6}).Slice(1, 0, 6, 3);  // (4, 2), strides (6, 3)
  const DimsArg arg = broadcast_dims(x.sizes(), x.strides(), x.sizes());
  EXPECT_EQ(arg.strides[0], 6);
  EXPECT_EQ(arg.strides[1], 3);
  expect_offsets_read_view(x, arg);
}

TEST(Ex05BroadcastTest, RejectsShapesThatDoNotBroadcast) {
  try {
    broadcast_dims({3}, {1}, {2, 4});
    FAIL() << "expected zero::Error for [3] -> [2, 4]";
  } catch (const NotImplementedError&) {
    throw;  // an unfinished exercise is a failure, not the error we expect
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("cannot broadcast shape [3] to [2, 4]"));
  }
}

}  // namespace
}  // namespace zero
