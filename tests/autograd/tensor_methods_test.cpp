// Tests of Tensor's views, copies and in-place updates (autograd/tensor_methods.cpp):
// views share storage and see writes both ways, Contiguous/Clone/Reshape copy when
// (and only when) they must, in-place updates respect autograd, and gradients flow
// through every view op (finite differences).
#include <string>

#include "tests/support/test_support.h"
#include "zero/autograd/grad_mode.h"

namespace zero {
namespace {

using testing::error_message;
using testing::contains;

using testing::check_gradients;
using testing::expect_close;
using testing::randn_leaf;

class TensorMethodsTest : public testing::DeviceTest {
 protected:
  Tensor iota(const Shape& sizes) const {
    return Tensor::Arange(0, shape_numel(sizes)).Reshape(sizes).To(device());
  }
};

// Writes through `view` must show in `base` at `base_index`, and writes to base
// at that index must show in the view at `view_index` (row-major positions).
void expect_shared(const Tensor& base, const Tensor& view, int64_t view_index,
                   int64_t base_index) {
  ASSERT_TRUE(view.SharesStorage(base));
  NoGradGuard no_grad;
  const std::vector<float> before = base.ToVector<float>();
  // A write through the view: fill the whole view with 100, check base position.
  Tensor saved = view.Clone();
  const_cast<Tensor&>(view).Fill_(100.0f);
  EXPECT_EQ(base.ToVector<float>()[base_index], 100.0f);
  const_cast<Tensor&>(view).CopyFrom_(saved);
  EXPECT_EQ(base.ToVector<float>(), before);
  // A write through the base.
  const_cast<Tensor&>(base).Fill_(-7.0f);
  EXPECT_EQ(view.ToVector<float>()[view_index], -7.0f);
  const_cast<Tensor&>(base).CopyFrom_(Tensor::From(before, base.sizes()).To(base.device()));
}

TEST_P(TensorMethodsTest, ViewsShareStorageBothWays) {
  Tensor x = iota({2, 3, 4});
  Tensor v = x.View({6, 4});
  EXPECT_EQ(v.ToVector<float>(), x.ToVector<float>());
  expect_shared(x, v, 5, 5);
  Tensor t = x.Transpose(0, 2);  // (4, 3, 2)
  EXPECT_EQ(t.ToVector<float>()[1], 12.0f);  // t[0, 0, 1] = x[1, 0, 0]
  expect_shared(x, t, 1, 12);
  Tensor p = x.Permute({1, 2, 0});  // (3, 4, 2): p[0, 0, 1] = x[1, 0, 0]
  EXPECT_EQ(p.sizes(), (Shape{3, 4, 2}));
  EXPECT_EQ(p.ToVector<float>()[1], 12.0f);
  expect_shared(x, p, 1, 12);
  Tensor s = x.Slice(2, 1, 4, 2);  // (2, 3, 2): columns 1 and 3
  EXPECT_EQ(s.ToVector<float>(), (std::vector<float>{1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23}));
  expect_shared(x, s, 1, 3);
  std::vector<Tensor> parts = x.Split(2, 1);  // (2, 2, 4) and (2, 1, 4)
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].sizes(), (Shape{2, 2, 4}));
  EXPECT_EQ(parts[1].sizes(), (Shape{2, 1, 4}));
  EXPECT_EQ(parts[1].ToVector<float>(), (std::vector<float>{8, 9, 10, 11, 20, 21, 22, 23}));
  expect_shared(x, parts[1], 0, 8);
  Tensor row = x.Slice(0, 1, 2).Slice(1, 2, 3);  // (1, 1, 4) = 20..23
  Tensor e = row.Expand({3, 2, 1, 4});
  EXPECT_EQ(e.ToVector<float>()[4 * 5 + 3], 23.0f);
  {  // an expanded view reads through its base, but refuses writes (stride-0 dimensions)
    NoGradGuard no_grad;
    const_cast<Tensor&>(x).Fill_(-7.0f);
    EXPECT_EQ(e.ToVector<float>()[4 * 5 + 3], -7.0f);
    EXPECT_THROW(e.Fill_(1.0f), Error);
    EXPECT_THROW(e.CopyFrom_(Tensor::Zeros({3, 2, 1, 4}).To(e.device())), Error);
    x = iota({2, 3, 4});
    row = x.Slice(0, 1, 2).Slice(1, 2, 3);
  }
  Tensor u = x.Unsqueeze(1);
  EXPECT_EQ(u.sizes(), (Shape{2, 1, 3, 4}));
  expect_shared(x, u, 17, 17);
  Tensor q = u.Squeeze(1);
  EXPECT_EQ(q.sizes(), (Shape{2, 3, 4}));
  expect_shared(x, q, 9, 9);
  EXPECT_THROW(x.Squeeze(0), Error);
  EXPECT_THROW(x.Split(0, 1), Error);
}

TEST_P(TensorMethodsTest, ViewOfTransposedSuggestsReshape) {
  Tensor t = iota({3, 2}).Transpose(0, 1);
  const std::string msg = error_message([&] { t.View({6}); });
  EXPECT_TRUE(contains(msg, "Reshape")) << msg;
}

TEST_P(TensorMethodsTest, ContiguousCloneAndReshape) {
  Tensor x = iota({2, 3});
  Tensor c = x.Contiguous();
  EXPECT_TRUE(c.SharesStorage(x));
  EXPECT_EQ(c.impl(), x.impl());
  Tensor cl = x.Clone();
  EXPECT_FALSE(cl.SharesStorage(x));
  EXPECT_EQ(cl.ToVector<float>(), x.ToVector<float>());
  Tensor t = x.Transpose(0, 1);  // (3, 2) = [[0, 3], [1, 4], [2, 5]]
  Tensor tc = t.Contiguous();
  EXPECT_FALSE(tc.SharesStorage(x));
  EXPECT_TRUE(tc.is_contiguous());
  EXPECT_FALSE(t.Clone().SharesStorage(x));
  Tensor r = t.Reshape({6});
  EXPECT_EQ(r.ToVector<float>(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  EXPECT_FALSE(r.SharesStorage(x));
  EXPECT_EQ(t.Reshape({2, 3}).ToVector<float>(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  EXPECT_TRUE(x.Reshape({3, -1}).SharesStorage(x));
  EXPECT_EQ(x.Reshape({3, -1}).sizes(), (Shape{3, 2}));
}

TEST_P(TensorMethodsTest, CopyFromAndFillOnStridedViews) {
  Tensor x = Tensor::Zeros({3, 4}).To(device());
  x.Transpose(0, 1).Slice(0, 0, 4, 3).Fill_(1.0f);  // columns 0 and 3
  expect_close(x, {1, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1});
  // Copy a (2, 3) source into the transposed (3, 2) view of rows 1..2.
  Tensor src = iota({2, 3}) + 10.0f;
  x.Slice(0, 1, 3).Slice(1, 0, 3).CopyFrom_(src);
  expect_close(x, {1, 0, 0, 1, 10, 11, 12, 1, 13, 14, 15, 1});
  x.Slice(1, 0, 1).CopyFrom_(src.Transpose(0, 1).Slice(0, 0, 3).Slice(1, 1, 2));  // column 0
  expect_close(x, {13, 0, 0, 1, 14, 11, 12, 1, 15, 14, 15, 1});
  EXPECT_THROW(x.CopyFrom_(src), Error);  // shapes differ
}

TEST_P(TensorMethodsTest, InPlaceOnTensorRequiringGradNeedsNoGradGuard) {
  Tensor w = Tensor::Ones({2}).To(device()).SetRequiresGrad();
  std::string msg = error_message([&] { w.Fill_(0.0f); });
  EXPECT_TRUE(contains(msg, "NoGradGuard")) << msg;
  msg = error_message([&] { w.CopyFrom_(Tensor::Zeros({2}).To(device())); });
  EXPECT_TRUE(contains(msg, "NoGradGuard")) << msg;
  Tensor view = w.Slice(0, 0, 1);  // a recorded view requires grad too
  EXPECT_THROW(view.Fill_(0.0f), Error);
  {
    NoGradGuard no_grad;
    w.Fill_(3.0f);
    w.CopyFrom_(w * 2.0f);
  }
  expect_close(w, {6, 6});
  EXPECT_TRUE(w.requires_grad());
}

TEST_P(TensorMethodsTest, GradientsThroughEveryView) {
  Tensor x = randn_leaf({2, 3, 4}, device(), 21);
  using V = std::vector<Tensor>;
  check_gradients([](const V& v) { return v[0].View({6, 4}) * 2.0f; }, {x});
  check_gradients([](const V& v) { return v[0].View({-1}); }, {x});
  check_gradients([](const V& v) { return v[0].Transpose(0, 2).Reshape({4, 6}); }, {x});
  check_gradients([](const V& v) { return v[0].Reshape({3, 8}); }, {x});
  check_gradients([](const V& v) { return v[0].Transpose(-1, 0); }, {x});
  check_gradients([](const V& v) { return v[0].Permute({2, 0, 1}); }, {x});
  check_gradients([](const V& v) { return v[0].Slice(2, 1, 4, 2); }, {x});
  check_gradients([](const V& v) { return v[0].Slice(0, -1, 2).Slice(1, 0, 3, 2); }, {x});
  check_gradients([](const V& v) {
    std::vector<Tensor> parts = v[0].Split(3, 2);  // (2, 3, 3) and (2, 3, 1)
    return parts[0] * parts[1];
  }, {x});
  check_gradients([](const V& v) { return v[0].Split(1, 0)[1]; }, {x});  // one part unused
  check_gradients([](const V& v) { return v[0].Slice(1, 0, 1).Expand({5, 2, 3, 4}); }, {x});
  check_gradients([](const V& v) { return v[0].Unsqueeze(1).Expand({2, 3, 3, 4}); }, {x});
  check_gradients([](const V& v) { return v[0].Slice(1, 2, 3).Squeeze(1); }, {x});
  check_gradients([](const V& v) { return v[0].Transpose(0, 1).Contiguous(); }, {x});
  check_gradients([](const V& v) { return v[0].Contiguous() * v[0]; }, {x});
  check_gradients([](const V& v) { return v[0].Clone() * v[0]; }, {x});
  check_gradients([](const V& v) { return v[0].Permute({1, 2, 0}).Clone(); }, {x});
  check_gradients([](const V& v) { return v[0].Transpose(1, 2).View({2, 2, 2, 3}); }, {x});
}

TEST_P(TensorMethodsTest, ToSameDeviceReturnsItself) {
  Tensor x = iota({2});
  EXPECT_EQ(x.To(device()).impl(), x.impl());
}

TEST(TensorMethodsCpuTest, ToCudaMovesLeafFlagsAndGradients) {
  if (!cuda_available()) GTEST_SKIP() << "moving between devices needs a GPU";
  Tensor x = Tensor::Ones({2}).SetRequiresGrad();
  x.SetGrad(Tensor::Full({2}, 3.0f));
  Tensor g = x.Cuda();
  EXPECT_TRUE(g.requires_grad());
  EXPECT_TRUE(g.is_leaf());
  EXPECT_EQ(g.Grad().device(), Device::Cuda(0));
  expect_close(g.Grad().Cpu(), {3, 3});
}

ZERO_INSTANTIATE_DEVICE_TEST(TensorMethodsTest);

// ---------------------------------------------------------------- Tensor::To on a GPU
// Chapter 03's rules: To(same device) is free, values survive a round trip whatever
// the layout and dtype, and a leaf moves with its requires-grad flag and gradient.

TEST(TensorMethodsCudaTest, ToSameDeviceIsFree) {
  if (!cuda_available()) GTEST_SKIP() << "needs a CUDA GPU";
  Tensor g = Tensor::Arange(0, 6).Cuda();
  EXPECT_EQ(g.device(), Device::Cuda(0));
  Tensor same = g.To(Device::Cuda(0));
  EXPECT_EQ(same.impl(), g.impl());
  EXPECT_TRUE(same.SharesStorage(g));
  EXPECT_EQ(g.Cuda().impl(), g.impl());
  Tensor w = Tensor::Ones({2}).Cuda().SetRequiresGrad();
  w.SetGrad(Tensor::Full({2}, 2.0f).Cuda());
  EXPECT_EQ(w.Cuda().Grad().impl(), w.Grad().impl());  // the gradient is not copied either
}

TEST(TensorMethodsCudaTest, ToCudaRoundTripKeepsValues) {
  if (!cuda_available()) GTEST_SKIP() << "needs a CUDA GPU";
  Tensor x = Tensor::Arange(0, 24).Reshape({2, 3, 4});
  const std::vector<float> values = x.ToVector<float>();
  Tensor g = x.Cuda();
  EXPECT_FALSE(g.SharesStorage(x));
  EXPECT_EQ(g.ToVector<float>(), values);
  Tensor back = g.Cpu();
  EXPECT_EQ(back.device(), Device::Cpu());
  EXPECT_TRUE(back.is_contiguous());
  EXPECT_EQ(back.ToVector<float>(), values);
  // Non-contiguous sources, either side: the result holds the view's elements.
  Tensor t = x.Transpose(0, 2).Slice(1, 0, 3, 2);  // (4, 2, 2)
  ASSERT_FALSE(t.is_contiguous());
  Tensor tg = t.Cuda();
  EXPECT_EQ(tg.sizes(), (Shape{4, 2, 2}));
  EXPECT_EQ(tg.Cpu().ToVector<float>(), t.ToVector<float>());
  Tensor gt = g.Permute({2, 0, 1}).Slice(0, 1, 4, 2);  // (2, 2, 3) view on the GPU
  EXPECT_EQ(gt.Cpu().ToVector<float>(), x.Permute({2, 0, 1}).Slice(0, 1, 4, 2).ToVector<float>());
  // I32 keeps its dtype and exact values (ids beyond 2^24 would not survive a float).
  Tensor ids = Tensor::FromI32({0, -5, 16777217, 2147483647}, {2, 2});
  Tensor ids_g = ids.Cuda();
  EXPECT_EQ(ids_g.dtype(), DataType::I32);
  EXPECT_EQ(ids_g.Cpu().ToVector<int32_t>(), ids.ToVector<int32_t>());
  EXPECT_EQ(ids_g.Transpose(0, 1).Cpu().ToVector<int32_t>(),
            (std::vector<int32_t>{0, 16777217, -5, 2147483647}));
}

TEST(TensorMethodsCudaTest, ToMovesLeafRequiresGradAndGradient) {
  if (!cuda_available()) GTEST_SKIP() << "needs a CUDA GPU";
  Tensor w = Tensor::From({1, 2, 3}, {3}).SetRequiresGrad();
  (w * w).Backward(Tensor::Ones({3}));  // grad = 2w
  ASSERT_TRUE(w.Grad().defined());
  Tensor wg = w.Cuda();
  EXPECT_TRUE(wg.is_leaf());
  EXPECT_TRUE(wg.requires_grad());
  ASSERT_TRUE(wg.Grad().defined());
  EXPECT_EQ(wg.Grad().device(), Device::Cuda(0));
  expect_close(wg.Grad().Cpu(), {2, 4, 6});
  // The moved leaf is a new leaf: its gradient accumulates on the GPU, not into w's.
  (wg * 3.0f).Backward(Tensor::Ones({3}).Cuda());
  expect_close(wg.Grad().Cpu(), {5, 7, 9});
  expect_close(w.Grad(), {2, 4, 6});
  // And back again.
  Tensor wc = wg.Cpu();
  EXPECT_TRUE(wc.requires_grad());
  expect_close(wc.Grad(), {5, 7, 9});
  // A leaf that requires grad but has no gradient yet moves without one.
  Tensor fresh = Tensor::Zeros({2}).SetRequiresGrad().Cuda();
  EXPECT_TRUE(fresh.requires_grad());
  EXPECT_FALSE(fresh.Grad().defined());
  // A tensor that does not require grad stays that way.
  EXPECT_FALSE(Tensor::Zeros({2}).Cuda().requires_grad());
}

TEST(TensorMethodsCudaTest, ToRefusesComputedTensorWhileRecording) {
  if (!cuda_available()) GTEST_SKIP() << "needs a CUDA GPU";
  Tensor w = Tensor::Ones({2}).SetRequiresGrad();
  Tensor y = w * 2.0f;  // has history
  const std::string msg = error_message([&] { y.Cuda(); });
  EXPECT_TRUE(contains(msg, "move the leaves")) << msg;
  NoGradGuard no_grad;
  Tensor moved = y.Cuda();  // outside recording it is plain data
  EXPECT_FALSE(moved.requires_grad());
  expect_close(moved.Cpu(), {2, 2});
}

// Runs everywhere: the refusal comes before any memory on the target is touched, so
// even without a GPU the message is about autograd, not about the missing device.
TEST(TensorMethodsCpuTest, ToRefusesHistoryBeforeCopying) {
  Tensor w = Tensor::Ones({2}).SetRequiresGrad();
  const std::string msg = error_message([&] { (w * 2.0f).To(Device::Cuda(0)); });
  EXPECT_TRUE(contains(msg, "move the leaves")) << msg;
}

}  // namespace
}  // namespace zero
