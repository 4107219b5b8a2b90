// Tests of fill, arange and copy (kernels/fill_copy.cpp + cpu/fill_copy_cpu.cpp) on
// contiguous and strided tensors of both dtypes, and the copy's argument checks.
#include <cmath>
#include <string>

#include "tests/support/test_support.h"
#include "zero/kernels/tensor_ops.h"

namespace zero {
namespace {

using testing::expect_close;

class FillCopyTest : public testing::DeviceTest {};

TEST_P(FillCopyTest, FillContiguousAndStrided) {
  Tensor t = Tensor::Zeros({3, 4}).To(device());
  ops::fill(t, 2.5f);
  expect_close(t, std::vector<float>(12, 2.5f));
  // Every other column of the transpose: only those elements change.
  ops::fill(t.Transpose(0, 1).Slice(0, 1, 4, 2), -1.0f);
  expect_close(t, {2.5f, -1, 2.5f, -1, 2.5f, -1, 2.5f, -1, 2.5f, -1, 2.5f, -1});
  Tensor i = Tensor::Zeros({5}, TensorOption().WithDtype(DataType::I32)).To(device());
  ops::fill(i, 7.0f);
  EXPECT_EQ(i.ToVector<int32_t>(), std::vector<int32_t>(5, 7));
  Tensor s = Tensor::Zeros({}).To(device());
  ops::fill(s, 3.0f);
  EXPECT_FLOAT_EQ(s.Item(), 3.0f);
}

// Zero is the fast case (a memset on CUDA when the tensor is contiguous): it must clear
// every element of a contiguous tensor of each width, only the elements of a strided
// view, and leave -0 to the kernel, which keeps its sign bit.
TEST_P(FillCopyTest, FillWithZeros) {
  Tensor t = Tensor::Full({3, 4}, 2.5f).To(device());
  ops::fill(t.Transpose(0, 1).Slice(0, 1, 4, 2), 0.0f);
  expect_close(t, {2.5f, 0, 2.5f, 0, 2.5f, 0, 2.5f, 0, 2.5f, 0, 2.5f, 0});
  ops::fill(t, 0.0f);
  expect_close(t, std::vector<float>(12, 0.0f));
  ops::fill(t, -0.0f);
  for (float v : t.ToVector<float>()) EXPECT_TRUE(v == 0.0f && std::signbit(v));
  for (DataType dtype : {DataType::BF16, DataType::I32}) {
    Tensor h = Tensor::Empty({7}, TensorOption().WithDtype(dtype).OnDevice(device()));
    ops::fill(h, 3.0f);
    ops::fill(h, 0.0f);
    Tensor back = Tensor::Empty({7}, TensorOption().OnDevice(device()));
    ops::convert(h, back);
    expect_close(back, std::vector<float>(7, 0.0f));
  }
}

TEST_P(FillCopyTest, ArangeBothDtypes) {
  Tensor f = Tensor::Empty({5}, TensorOption().OnDevice(device()));
  ops::arange(f, 1.5, -0.5);
  expect_close(f, {1.5f, 1.0f, 0.5f, 0.0f, -0.5f});
  Tensor i = Tensor::Empty({4}, TensorOption().WithDtype(DataType::I32).OnDevice(device()));
  ops::arange(i, 10, 3);
  EXPECT_EQ(i.ToVector<int32_t>(), (std::vector<int32_t>{10, 13, 16, 19}));
  Tensor strided = Tensor::Empty({4, 2}, TensorOption().OnDevice(device())).Transpose(0, 1);
  EXPECT_THROW(ops::arange(strided, 0, 1), Error);
}

TEST_P(FillCopyTest, CopyBetweenLayouts) {
  Tensor src = Tensor::Arange(0, 12).Reshape({3, 4}).To(device());
  // Contiguous -> transposed destination.
  Tensor dst = Tensor::Zeros({4, 3}).To(device());
  ops::copy(src, dst.Transpose(0, 1));
  expect_close(dst, {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11});
  // Strided slice -> contiguous.
  Tensor part = Tensor::Zeros({2, 2}).To(device());
  ops::copy(src.Slice(0, 0, 3, 2).Slice(1, 1, 4, 2), part);
  expect_close(part, {1, 3, 9, 11});
  // Expanded (stride 0) source.
  Tensor rows = Tensor::Zeros({3, 4}).To(device());
  ops::copy(src.Slice(0, 1, 2).Expand({3, 4}), rows);
  expect_close(rows, {4, 5, 6, 7, 4, 5, 6, 7, 4, 5, 6, 7});
  // I32 through a strided path.
  Tensor ids = Tensor::FromI32({1, 2, 3, 4, 5, 6}, {2, 3}).To(device());
  Tensor ids_t = Tensor::Zeros({3, 2}, ids.options());
  ops::copy(ids.Transpose(0, 1), ids_t);
  EXPECT_EQ(ids_t.ToVector<int32_t>(), (std::vector<int32_t>{1, 4, 2, 5, 3, 6}));
}

TEST_P(FillCopyTest, CopyChecksShapeAndDtype) {
  Tensor a = Tensor::Zeros({2, 3}).To(device());
  try {
    ops::copy(a, Tensor::Zeros({3, 2}).To(device()));
    FAIL() << "expected a shape error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("[2, 3]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[3, 2]"), std::string::npos) << msg;
  }
  EXPECT_THROW(ops::copy(a, Tensor::Zeros({2, 3}, TensorOption().WithDtype(DataType::I32))),
               Error);
}

TEST_P(FillCopyTest, EmptyTensorsAreNoOps) {
  Tensor e = Tensor::Zeros({0, 3}).To(device());
  EXPECT_NO_THROW(ops::fill(e, 1.0f));
  EXPECT_NO_THROW(ops::copy(e, Tensor::Zeros({0, 3}).To(device())));
  EXPECT_TRUE(e.ToVector<float>().empty());
}

ZERO_INSTANTIATE_DEVICE_TEST(FillCopyTest);

}  // namespace
}  // namespace zero
