// Tests of the view arithmetic (core/tensor_meta.cpp): strides, contiguity,
// broadcasting, dimension checks, and every meta_* view, including the cases that
// must be refused with a message naming the shapes.
#include <gtest/gtest.h>

#include <string>

#include "tests/support/test_support.h"
#include "zero/core/error.h"
#include "zero/core/tensor_meta.h"

namespace zero {
namespace {

using testing::error_message;
using testing::contains;

TensorMeta meta_of(const Shape& sizes) { return contiguous_meta(sizes, DataType::F32, Device::Cpu()); }

TEST(TensorMetaTest, ShapeHelpers) {
  EXPECT_EQ(shape_to_string({2, 3, 4}), "[2, 3, 4]");
  EXPECT_EQ(shape_to_string({}), "[]");
  EXPECT_EQ(shape_numel({}), 1);
  EXPECT_EQ(shape_numel({2, 0, 3}), 0);
  EXPECT_EQ(shape_numel({2, 3, 4}), 24);
}

TEST(TensorMetaTest, ContiguousStrides) {
  EXPECT_EQ(contiguous_strides({2, 3, 4}), (Shape{12, 4, 1}));
  EXPECT_EQ(contiguous_strides({5}), (Shape{1}));
  EXPECT_EQ(contiguous_strides({}), (Shape{}));
  EXPECT_EQ(contiguous_strides({2, 1, 3}), (Shape{3, 3, 1}));
  EXPECT_THROW(contiguous_meta({2, -1}, DataType::F32, Device::Cpu()), Error);
}

TEST(TensorMetaTest, IsContiguousIgnoresStridesOfSizeOneDims) {
  EXPECT_TRUE(meta_of({2, 3}).is_contiguous());
  TensorMeta m{{2, 1, 3}, {3, 100, 1}, 0, DataType::F32, Device::Cpu()};
  EXPECT_TRUE(m.is_contiguous());
  m.strides = {3, 100, 2};
  EXPECT_FALSE(m.is_contiguous());
  TensorMeta t{{3, 2}, {1, 3}, 0, DataType::F32, Device::Cpu()};  // a transpose
  EXPECT_FALSE(t.is_contiguous());
  TensorMeta e{{4, 3}, {0, 1}, 0, DataType::F32, Device::Cpu()};  // an expand
  EXPECT_FALSE(e.is_contiguous());
  EXPECT_TRUE(meta_of({}).is_contiguous());
}

TEST(TensorMetaTest, BroadcastShapes) {
  EXPECT_EQ(broadcast_shapes({2, 3}, {3}), (Shape{2, 3}));
  EXPECT_EQ(broadcast_shapes({4, 1, 3}, {2, 1}), (Shape{4, 2, 3}));
  EXPECT_EQ(broadcast_shapes({}, {2, 2}), (Shape{2, 2}));
  EXPECT_EQ(broadcast_shapes({1}, {0}), (Shape{0}));
  const std::string msg = error_message([] { broadcast_shapes({2, 3}, {4, 2}); });
  EXPECT_TRUE(contains(msg, "[2, 3]")) << msg;
  EXPECT_TRUE(contains(msg, "[4, 2]")) << msg;
}

TEST(TensorMetaTest, NormalizeDim) {
  EXPECT_EQ(normalize_dim(0, 3), 0);
  EXPECT_EQ(normalize_dim(2, 3), 2);
  EXPECT_EQ(normalize_dim(-1, 3), 2);
  EXPECT_EQ(normalize_dim(-3, 3), 0);
  for (int64_t bad : {3, 4, -4, -100}) {
    const std::string msg = error_message([&] { normalize_dim(bad, 3); });
    EXPECT_TRUE(contains(msg, "[-3, 2]")) << msg;
    EXPECT_TRUE(contains(msg, "got " + std::to_string(bad))) << msg;
  }
}

TEST(TensorMetaTest, ViewOfContiguous) {
  TensorMeta m = meta_of({2, 3, 4});
  m.offset = 5;
  const TensorMeta v = meta_view(m, {6, 4});
  EXPECT_EQ(v.sizes, (Shape{6, 4}));
  EXPECT_EQ(v.strides, (Shape{4, 1}));
  EXPECT_EQ(v.offset, 5);
  EXPECT_EQ(meta_view(m, {24}).strides, (Shape{1}));
}

TEST(TensorMetaTest, ViewInfersMinusOne) {
  const TensorMeta m = meta_of({2, 3, 4});
  EXPECT_EQ(meta_view(m, {-1, 4}).sizes, (Shape{6, 4}));
  EXPECT_EQ(meta_view(m, {2, -1}).sizes, (Shape{2, 12}));
  EXPECT_EQ(meta_view(m, {-1}).sizes, (Shape{24}));
  EXPECT_THROW(meta_view(m, {-1, -1}), Error);
  EXPECT_THROW(meta_view(m, {-1, 5}), Error);  // 24 is not a multiple of 5
  EXPECT_THROW(meta_view(m, {-2, 12}), Error);
  EXPECT_THROW(meta_view(meta_of({0, 3}), {-1, 0}), Error);  // ambiguous
  const std::string msg = error_message([&] { meta_view(m, {5, 5}); });
  EXPECT_TRUE(contains(msg, "[2, 3, 4]")) << msg;
  EXPECT_TRUE(contains(msg, "[5, 5]")) << msg;
}

TEST(TensorMetaTest, TransposedCannotBeViewedAsFlat) {
  const TensorMeta t = meta_transpose(meta_of({3, 2}), 0, 1);  // (2, 3), strides (1, 2)
  const std::string msg = error_message([&] { meta_view(t, {6}); });
  EXPECT_TRUE(contains(msg, "Reshape")) << msg;
  EXPECT_TRUE(contains(msg, "[2, 3]")) << msg;
  // Splitting a dimension of a transposed tensor needs no copy.
  const TensorMeta t4 = meta_transpose(meta_of({4, 6}), 0, 1);  // (6, 4), strides (1, 6)
  const TensorMeta v = meta_view(t4, {2, 3, 4});
  EXPECT_EQ(v.strides, (Shape{3, 1, 6}));
}

TEST(TensorMetaTest, SliceOfRowsCanBeViewed) {
  // Rows 1..2 of a (4, 3) matrix are contiguous.
  const TensorMeta rows = meta_slice(meta_of({4, 3}), 0, 1, 3, 1);
  const TensorMeta flat = meta_view(rows, {6});
  EXPECT_EQ(flat.sizes, (Shape{6}));
  EXPECT_EQ(flat.strides, (Shape{1}));
  EXPECT_EQ(flat.offset, 3);
  // Every other row (stride 6): each row stays a unit, new size-1 dims are free.
  const TensorMeta every_other = meta_slice(meta_of({4, 3}), 0, 0, 4, 2);
  ASSERT_FALSE(every_other.is_contiguous());
  const TensorMeta v = meta_view(every_other, {2, 1, 3});
  EXPECT_EQ(v.strides[0], 6);
  EXPECT_EQ(v.strides[2], 1);
  EXPECT_THROW(meta_view(every_other, {6}), Error);
  // Columns 0..2 of a (4, 6) matrix: rows can be regrouped, a row cannot be merged.
  const TensorMeta cols = meta_slice(meta_of({4, 6}), 1, 0, 3, 1);  // (4, 3), strides (6, 1)
  EXPECT_EQ(meta_view(cols, {2, 2, 3}).strides, (Shape{12, 6, 1}));
  EXPECT_THROW(meta_view(cols, {12}), Error);
}

TEST(TensorMetaTest, TransposeAndPermute) {
  const TensorMeta m = meta_of({2, 3, 4});
  const TensorMeta t = meta_transpose(m, 0, -1);
  EXPECT_EQ(t.sizes, (Shape{4, 3, 2}));
  EXPECT_EQ(t.strides, (Shape{1, 4, 12}));
  const TensorMeta p = meta_permute(m, {1, 2, 0});
  EXPECT_EQ(p.sizes, (Shape{3, 4, 2}));
  EXPECT_EQ(p.strides, (Shape{4, 1, 12}));
  EXPECT_THROW(meta_permute(m, {0, 1}), Error);
  EXPECT_THROW(meta_permute(m, {0, 1, 1}), Error);
  EXPECT_THROW(meta_permute(m, {0, 1, 3}), Error);
  EXPECT_THROW(meta_transpose(m, 0, 3), Error);
}

TEST(TensorMetaTest, SliceWithNegativeIndicesStepAndClamping) {
  const TensorMeta m = meta_of({10, 2});
  TensorMeta s = meta_slice(m, 0, -4, -1, 1);  // rows 6, 7, 8
  EXPECT_EQ(s.sizes, (Shape{3, 2}));
  EXPECT_EQ(s.offset, 12);
  s = meta_slice(m, 0, 1, 10, 3);  // rows 1, 4, 7
  EXPECT_EQ(s.sizes, (Shape{3, 2}));
  EXPECT_EQ(s.strides, (Shape{6, 1}));
  EXPECT_EQ(s.offset, 2);
  s = meta_slice(m, 0, 1, 9, 3);  // rows 1, 4, 7
  EXPECT_EQ(s.sizes[0], 3);
  s = meta_slice(m, 0, -100, 100, 1);  // clamped to everything
  EXPECT_EQ(s.sizes[0], 10);
  EXPECT_EQ(s.offset, 0);
  s = meta_slice(m, 0, 7, 3, 1);  // end before start: empty
  EXPECT_EQ(s.sizes[0], 0);
  s = meta_slice(m, -1, 1, 2, 1);  // a column
  EXPECT_EQ(s.sizes, (Shape{10, 1}));
  EXPECT_EQ(s.offset, 1);
  EXPECT_THROW(meta_slice(m, 0, 0, 5, 0), Error);
  EXPECT_THROW(meta_slice(m, 0, 0, 5, -1), Error);
  EXPECT_THROW(meta_slice(m, 2, 0, 1, 1), Error);
  EXPECT_THROW(meta_slice(meta_of({}), 0, 0, 1, 1), Error);
}

TEST(TensorMetaTest, Expand) {
  const TensorMeta m = meta_of({3, 1});
  const TensorMeta e = meta_expand(m, {2, 3, 4});
  EXPECT_EQ(e.sizes, (Shape{2, 3, 4}));
  EXPECT_EQ(e.strides, (Shape{0, 1, 0}));
  EXPECT_EQ(meta_expand(m, {-1, 5}).sizes, (Shape{3, 5}));
  const std::string msg = error_message([&] { meta_expand(m, {4, 4}); });
  EXPECT_TRUE(contains(msg, "[3, 1]")) << msg;
  EXPECT_TRUE(contains(msg, "[4, 4]")) << msg;
  EXPECT_THROW(meta_expand(m, {3}), Error);         // fewer dimensions
  EXPECT_THROW(meta_expand(m, {-1, 3, 1}), Error);  // -1 for a new leading dimension
  EXPECT_THROW(meta_expand(m, {3, -2}), Error);     // a negative size other than -1
}

TEST(TensorMetaTest, UnsqueezeAndSqueeze) {
  const TensorMeta m = meta_of({2, 3});
  TensorMeta u = meta_unsqueeze(m, 0);
  EXPECT_EQ(u.sizes, (Shape{1, 2, 3}));
  EXPECT_TRUE(u.is_contiguous());
  u = meta_unsqueeze(m, -1);
  EXPECT_EQ(u.sizes, (Shape{2, 3, 1}));
  EXPECT_TRUE(u.is_contiguous());
  u = meta_unsqueeze(m, 1);
  EXPECT_EQ(u.sizes, (Shape{2, 1, 3}));
  EXPECT_THROW(meta_unsqueeze(m, 3), Error);
  EXPECT_EQ(meta_unsqueeze(meta_of({}), 0).sizes, (Shape{1}));

  const TensorMeta s = meta_squeeze(u, 1);
  EXPECT_EQ(s.sizes, (Shape{2, 3}));
  EXPECT_EQ(s.strides, (Shape{3, 1}));
  const std::string msg = error_message([&] { meta_squeeze(m, 0); });
  EXPECT_TRUE(contains(msg, "[2, 3]")) << msg;
  EXPECT_THROW(meta_squeeze(meta_of({}), 0), Error);  // a 0-d tensor has no dimension
}

TEST(TensorMetaTest, SizeArithmeticRefusesOverflowAndNegativeSizes) {
  const int64_t big = int64_t{1} << 62;
  testing::expect_error_mentions([&] { shape_numel({big, 4}); },
                                 {"[4611686018427387904, 4]", "64-bit"});
  testing::expect_error_mentions([] { shape_numel({2, -3}); }, {"sizes >= 0", "[2, -3]"});
  // Zero elements, but the outer strides (2^120, 2^80) do not fit.
  const int64_t t40 = int64_t{1} << 40;
  testing::expect_error_mentions([&] { contiguous_strides({0, t40, t40, t40}); },
                                 {"strides", "[0, 1099511627776, 1099511627776, 1099511627776]"});
  testing::expect_error_mentions([&] { meta_of({0, t40, t40, t40}); }, {"1099511627776"});
  EXPECT_EQ(contiguous_strides({0, t40, 4}), (Shape{t40 * 4, 4, 1}));  // still fits
  EXPECT_EQ(shape_numel({0, t40, t40, t40}), 0);
  // A view of an empty tensor whose known sizes overflow, and an expand past 2^63.
  testing::expect_error_mentions([&] { meta_view(meta_of({0}), {big, big, -1}); }, {"64-bit"});
  testing::expect_error_mentions([&] { meta_expand(meta_of({1, 1}), {big, big}); }, {"64-bit"});
}

}  // namespace
}  // namespace zero
