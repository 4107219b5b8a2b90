// Tests of exercise 05 (solutions/05_dispatch/offset.h): operand offsets of real
// Zero tensors (permuted, sliced, expanded) checked element by element against the
// values Tensor::ToVector reads, and broadcast strides against Tensor::Expand. The
// broadcast tests read through the library's DimsArg::Offset, not your
// operand_offset, so each TODO is checked on its own.
#include <gtest/gtest.h>

#include <functional>

#include "exercise_test.h"
#include "offset.h"
#include "zero/core/tensor.h"

namespace zero {
namespace {

using ch05::broadcast_dims;
using ch05::operand_offset;
using zero::exercise::expect_exercise_error;

using OffsetFn = std::function<int64_t(int64_t linear, const DimsArg& arg)>;

// ex05.1's function, and the library's version of it (the reference for ex05.2).
int64_t yours(int64_t linear, const DimsArg& arg) { return operand_offset(linear, arg); }
int64_t library(int64_t linear, const DimsArg& arg) { return arg.Offset(linear); }

// 0, 1, 2, ... in a contiguous buffer, so an element's value is its buffer position.
Tensor positions(const Shape& sizes) {
  return Tensor::Arange(0, shape_numel(sizes)).View(sizes);
}

// For every row-major position of view `t`, the element at
// buffer[t.offset() + offset(i, arg)] must be the i-th value ToVector reads.
void expect_offsets_read_view(const Tensor& t, const DimsArg& arg, const OffsetFn& offset) {
  const float* buffer = static_cast<const float*>(t.node()->data());
  const std::vector<float> values = t.ToVector<float>();
  ASSERT_EQ(static_cast<int64_t>(values.size()), t.numel());
  int reported = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const float got = buffer[t.offset() + offset(i, arg)];
    if (got != values[i] && reported++ < 5) {
      ADD_FAILURE() << "position " << i << " of shape " << shape_to_string(t.sizes())
                    << " strides " << shape_to_string(t.strides()) << ": read " << got
                    << ", expected " << values[i];
    }
  }
}

// A broadcast DimsArg must have the output's ndim and sizes; checked before anything
// reads through it, since a size left at 0 would divide by zero there.
::testing::AssertionResult has_output_sizes(const DimsArg& arg, const Shape& out) {
  Shape got(arg.sizes, arg.sizes + (arg.ndim > 0 && arg.ndim <= kMaxDims ? arg.ndim : 0));
  if (arg.ndim == static_cast<int>(out.size()) && got == out) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "the DimsArg has ndim " << arg.ndim << " and sizes "
                                       << shape_to_string(got) << "; expected the output's "
                                       << shape_to_string(out);
}

TEST(Ex05OffsetTest, ContiguousOffsetIsTheLinearIndex) {
  ZERO_EXERCISE("ex05.1");
  const Tensor t = positions({2, 3, 4});
  const DimsArg arg = DimsArg::Of(t.meta());
  for (int64_t i = 0; i < t.numel(); ++i) {
    EXPECT_EQ(operand_offset(i, arg), i) << "position " << i << " of a contiguous [2, 3, 4]";
  }
}

TEST(Ex05OffsetTest, ScalarHasOffsetZero) {
  ZERO_EXERCISE("ex05.1");
  const DimsArg scalar;  // ndim 0: no dimension to unravel
  EXPECT_EQ(operand_offset(0, scalar), 0) << "a 0-dimensional operand has one element, at 0";
}

TEST(Ex05OffsetTest, HandComputedTransposeOffsets) {
  ZERO_EXERCISE("ex05.1");
  // A [3, 2] view of a [2, 3] buffer: strides [1, 3]. Position 3 is (1, 1) -> 1 + 3 = 4.
  const Tensor t = positions({2, 3}).Transpose(0, 1);
  const DimsArg arg = DimsArg::Of(t.meta());
  const int64_t expected[] = {0, 3, 1, 4, 2, 5};
  for (int64_t i = 0; i < 6; ++i) {
    EXPECT_EQ(operand_offset(i, arg), expected[i])
        << "position " << i << " of a [3, 2] view with strides [1, 3]";
  }
}

TEST(Ex05OffsetTest, OffsetsPast2To31DoNotWrap) {
  ZERO_EXERCISE("ex05.1");
  // A [4, 1024, 1024] view of a buffer of more than 2^34 elements (never allocated:
  // only the arithmetic is tested), dimension 0 with stride 2^32.
  DimsArg arg;
  arg.ndim = 3;
  const int64_t sizes[] = {4, 1024, 1024}, strides[] = {int64_t{1} << 32, 1, 1024};
  for (int d = 0; d < 3; ++d) {
    arg.sizes[d] = sizes[d];
    arg.strides[d] = strides[d];
  }
  for (int64_t i : {int64_t{0}, int64_t{1048577}, int64_t{2} << 20, int64_t{4194303}}) {
    const int64_t c0 = i / (1024 * 1024), c1 = (i / 1024) % 1024, c2 = i % 1024;
    EXPECT_EQ(operand_offset(i, arg), c0 * strides[0] + c1 * strides[1] + c2 * strides[2])
        << "position " << i << " = (" << c0 << ", " << c1 << ", " << c2
        << ") with strides [2^32, 1, 1024]: keep the offset in 64 bits";
  }
}

TEST(Ex05OffsetTest, PermutedView) {
  ZERO_EXERCISE("ex05.1");
  const Tensor t = positions({2, 3, 4}).Permute({2, 0, 1});  // (4, 2, 3)
  expect_offsets_read_view(t, DimsArg::Of(t.meta()), yours);
}

TEST(Ex05OffsetTest, SlicedViewWithStorageOffset) {
  ZERO_EXERCISE("ex05.1");
  // Rows 1..3, every second column from 1: strides (6, 2), storage offset 7.
  const Tensor t = positions({4, 6}).Slice(0, 1, 4).Slice(1, 1, 6, 2);  // (3, 3)
  ASSERT_GT(t.offset(), 0);
  expect_offsets_read_view(t, DimsArg::Of(t.meta()), yours);
}

TEST(Ex05OffsetTest, ExpandedViewHasStrideZero) {
  ZERO_EXERCISE("ex05.1");
  const Tensor t = positions({3, 1}).Expand({2, 3, 4});  // (2, 3, 4), strides (0, 1, 0)
  expect_offsets_read_view(t, DimsArg::Of(t.meta()), yours);
}

TEST(Ex05BroadcastTest, MatchesExpandStrides) {
  ZERO_EXERCISE("ex05.2");
  const Tensor x = positions({3, 1});
  const Shape out = {2, 3, 4};
  const DimsArg arg = broadcast_dims(x.sizes(), x.strides(), out);
  const Tensor expanded = x.Expand(out);
  ASSERT_TRUE(has_output_sizes(arg, out));
  for (int d = 0; d < 3; ++d) {
    EXPECT_EQ(arg.strides[d], expanded.stride(d))
        << "dim " << d << " of [3, 1] read as [2, 3, 4]: missing and stretched dims get stride 0";
  }
  expect_offsets_read_view(expanded, arg, library);
}

TEST(Ex05BroadcastTest, RowOfATransposedViewReadsTheRightElements) {
  ZERO_EXERCISE("ex05.2");
  // A non-contiguous operand broadcast along a new leading dimension.
  const Tensor x = positions({4, 3}).Transpose(0, 1).Slice(0, 1, 2);  // (1, 4), strides (1, 3)
  const Shape out = {5, 2, 4};
  const DimsArg arg = broadcast_dims(x.sizes(), x.strides(), out);
  ASSERT_TRUE(has_output_sizes(arg, out));
  const int64_t expected[] = {0, 0, 3};  // new dim, stretched size-1 dim, the operand's own
  for (int d = 0; d < 3; ++d) {
    EXPECT_EQ(arg.strides[d], expected[d]) << "dim " << d << " of (1, 4) strides (1, 3) read as "
                                           << "(5, 2, 4)";
  }
  expect_offsets_read_view(x.Expand(out), arg, library);
}

TEST(Ex05BroadcastTest, SameShapeKeepsTheStrides) {
  ZERO_EXERCISE("ex05.2");
  const Tensor x = positions({4, 6}).Slice(1, 0, 6, 3);  // (4, 2), strides (6, 3)
  const DimsArg arg = broadcast_dims(x.sizes(), x.strides(), x.sizes());
  ASSERT_TRUE(has_output_sizes(arg, x.sizes()));
  EXPECT_EQ(arg.strides[0], 6) << "an operand of the output's shape keeps its own strides";
  EXPECT_EQ(arg.strides[1], 3) << "an operand of the output's shape keeps its own strides";
  expect_offsets_read_view(x, arg, library);
}

TEST(Ex05BroadcastTest, RejectsShapesThatDoNotBroadcast) {
  ZERO_EXERCISE("ex05.2");
  expect_exercise_error([] { broadcast_dims({3}, {1}, {2, 4}); }, "[3] read as [2, 4]");
  expect_exercise_error([] { broadcast_dims({2, 3}, {3, 1}, {4, 3}); }, "[2, 3] read as [4, 3]");
  // Only the operand's size-1 dimensions stretch; an output size of 1 does not.
  expect_exercise_error([] { broadcast_dims({3}, {1}, {2, 1}); }, "[3] read as [2, 1]");
}

}  // namespace
}  // namespace zero
