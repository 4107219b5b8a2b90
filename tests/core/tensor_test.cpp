// Tests of Tensor's core methods (core/tensor.cpp): metadata accessors, typed data
// pointers, storage sharing, and the autograd bookkeeping a leaf carries
// (SetRequiresGrad, SetGrad, ZeroGrad, Detach). Factories, views and the engine have
// their own suites (kernels/tensor_factories_test, autograd/tensor_methods_test, ...).
#include <string>

#include "tests/support/test_support.h"

namespace zero {
namespace {

using testing::error_message;
using testing::contains;

class TensorTest : public testing::DeviceTest {};

TEST_P(TensorTest, EmptyHasContiguousMeta) {
  Tensor t = Tensor::Empty({2, 3, 4}, TensorOption().OnDevice(device()));
  EXPECT_EQ(t.sizes(), (Shape{2, 3, 4}));
  EXPECT_EQ(t.strides(), (Shape{12, 4, 1}));
  EXPECT_EQ(t.size(-1), 4);
  EXPECT_EQ(t.stride(0), 12);
  EXPECT_EQ(t.dim(), 3);
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.offset(), 0);
  EXPECT_EQ(t.dtype(), DataType::F32);
  EXPECT_EQ(t.device(), device());
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_TRUE(t.is_leaf());
  EXPECT_FALSE(t.requires_grad());
  EXPECT_GE(t.node()->bytes(), 24 * sizeof(float));
  EXPECT_THROW(t.size(3), Error);
  EXPECT_THROW(Tensor::Scalar(1.0f).size(0), Error);
  const TensorOption o = t.options();
  EXPECT_EQ(o.dtype, DataType::F32);
  EXPECT_EQ(o.device, device());
  EXPECT_FALSE(o.requires_grad);
}

TEST(TensorCoreTest, UndefinedTensorThrowsOnUse) {
  Tensor t;
  EXPECT_FALSE(t.defined());
  EXPECT_EQ(t.ToString(), "Tensor(undefined)");
  const std::string msg = error_message([&] { t.sizes(); });
  EXPECT_TRUE(contains(msg, "undefined")) << msg;
}

TEST(TensorCoreTest, DataPtrChecksTheDtype) {
  Tensor f = Tensor::Zeros({3});
  Tensor i = Tensor::Zeros({3}, TensorOption().WithDtype(DataType::I32));
  EXPECT_NE(f.data_ptr<float>(), nullptr);
  EXPECT_NE(i.data_ptr<int32_t>(), nullptr);
  const std::string msg = error_message([&] { f.data_ptr<int32_t>(); });
  EXPECT_TRUE(contains(msg, "i32")) << msg;
  EXPECT_TRUE(contains(msg, "f32")) << msg;
  EXPECT_THROW(i.data_ptr<float>(), Error);
}

TEST(TensorCoreTest, DataAccountsForTheOffset) {
  Tensor t = Tensor::Arange(0, 12).Reshape({3, 4});
  // A hand-made view of row 2 starting at element 8.
  Tensor row(TensorMeta{{4}, {1}, 8, DataType::F32, Device::Cpu()}, t.node());
  EXPECT_EQ(row.data_ptr<float>(), t.data_ptr<float>() + 8);
  EXPECT_FLOAT_EQ(row.data_ptr<float>()[0], 8.0f);
  EXPECT_TRUE(row.SharesStorage(t));
  EXPECT_FALSE(row.SharesStorage(Tensor::Arange(0, 4)));
}

TEST(TensorCoreTest, CopiesOfTheHandleShareEverything) {
  Tensor a = Tensor::Zeros({2}).SetRequiresGrad();
  Tensor b = a;  // a handle copy, not a data copy
  EXPECT_EQ(a.impl(), b.impl());
  b.SetGrad(Tensor::Ones({2}));
  EXPECT_TRUE(a.Grad().defined());
}

TEST(TensorCoreTest, SetRequiresGradOnlyForF32Leaves) {
  Tensor ids = Tensor::FromI32({1, 2}, {2});
  const std::string msg = error_message([&] { ids.SetRequiresGrad(); });
  EXPECT_TRUE(contains(msg, "i32")) << msg;
  EXPECT_NO_THROW(ids.SetRequiresGrad(false));
  EXPECT_THROW(Tensor::Zeros({2}, TensorOption().WithDtype(DataType::I32).WithRequiresGrad()),
               Error);

  Tensor x = Tensor::Ones({2}).SetRequiresGrad();
  EXPECT_TRUE(x.requires_grad());
  EXPECT_TRUE(x.is_leaf());
  Tensor y = x * 2.0f;
  EXPECT_FALSE(y.is_leaf());
  EXPECT_TRUE(y.requires_grad());
  const std::string leaf_msg = error_message([&] { y.SetRequiresGrad(); });
  EXPECT_TRUE(contains(leaf_msg, "leaf")) << leaf_msg;
  EXPECT_TRUE(contains(leaf_msg, "Detach")) << leaf_msg;
  x.SetRequiresGrad(false);
  EXPECT_FALSE(x.requires_grad());
}

TEST(TensorCoreTest, SetGradChecksShapeDtypeAndDevice) {
  Tensor x = Tensor::Zeros({2, 3}).SetRequiresGrad();
  const std::string msg = error_message([&] { x.SetGrad(Tensor::Zeros({3, 2})); });
  EXPECT_TRUE(contains(msg, "[2, 3]")) << msg;
  EXPECT_TRUE(contains(msg, "[3, 2]")) << msg;
  EXPECT_THROW(x.SetGrad(Tensor::Zeros({2, 3}, TensorOption().WithDtype(DataType::I32))), Error);
  x.SetGrad(Tensor::Full({2, 3}, 4.0f));
  testing::expect_close(x.Grad(), std::vector<float>(6, 4.0f));
  x.ZeroGrad();
  EXPECT_FALSE(x.Grad().defined());
  x.SetGrad(Tensor());  // clearing is allowed too
  EXPECT_FALSE(x.Grad().defined());
}

TEST(TensorCoreTest, DetachSharesDataButNotHistory) {
  Tensor x = Tensor::Ones({3}).SetRequiresGrad();
  Tensor y = x * 3.0f;
  Tensor d = y.Detach();
  EXPECT_TRUE(d.SharesStorage(y));
  EXPECT_FALSE(d.requires_grad());
  EXPECT_TRUE(d.is_leaf());
  EXPECT_EQ(d.grad_fn(), nullptr);
  EXPECT_NE(y.grad_fn(), nullptr);
  EXPECT_NE(d.impl(), y.impl());
  d.Fill_(5.0f);  // writes through to y's buffer
  testing::expect_close(y, {5, 5, 5});
}

TEST(TensorCoreTest, EmptyRefusesSizesWhoseBytesOverflow) {
  const int64_t big = int64_t{1} << 62;
  // (2^62 - 1) * 4 bytes wrapped to 2^64 - 4 and came back as a tensor with no error.
  testing::expect_error_mentions([&] { Tensor::Empty({big - 1}); },
                                 {"[4611686018427387903]", "f32", "bytes"});
  testing::expect_error_mentions([&] { Tensor::Empty({big, 4}); }, {"[4611686018427387904, 4]"});
  testing::expect_error_mentions([] { Tensor::Empty({-1}); }, {"sizes >= 0", "[-1]"});
  EXPECT_EQ(Tensor::Empty({0, int64_t{1} << 40}).numel(), 0);
}

ZERO_INSTANTIATE_DEVICE_TEST(TensorTest);

}  // namespace
}  // namespace zero
