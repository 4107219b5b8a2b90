// Tests of Tensor's factories and host access (kernels/tensor_factories.cpp): every
// factory's shape, dtype and values, random tensors' reproducibility, From's count
// check, Item and ToVector errors, and ToString's contents and elision.
#include <cmath>
#include <string>

#include "tests/support/test_support.h"

namespace zero {
namespace {

using testing::error_message;
using testing::contains;

using testing::expect_close;

class TensorFactoriesTest : public testing::DeviceTest {
 protected:
  TensorOption opt() const { return TensorOption().OnDevice(device()); }
};

TEST_P(TensorFactoriesTest, ZerosOnesFull) {
  Tensor z = Tensor::Zeros({2, 3}, opt());
  EXPECT_EQ(z.sizes(), (Shape{2, 3}));
  EXPECT_EQ(z.device(), device());
  expect_close(z, std::vector<float>(6, 0.0f));
  expect_close(Tensor::Ones({4}, opt()), std::vector<float>(4, 1.0f));
  expect_close(Tensor::Full({2, 2}, -3.5f, opt()), std::vector<float>(4, -3.5f));
  Tensor i = Tensor::Full({3}, 7.0f, opt().WithDtype(DataType::I32));
  EXPECT_EQ(i.dtype(), DataType::I32);
  EXPECT_EQ(i.ToVector<int32_t>(), (std::vector<int32_t>{7, 7, 7}));
  Tensor g = Tensor::Ones({2}, opt().WithRequiresGrad());
  EXPECT_TRUE(g.requires_grad());
  EXPECT_TRUE(g.is_leaf());
}

TEST_P(TensorFactoriesTest, Arange) {
  expect_close(Tensor::Arange(0, 5, 1, opt()), {0, 1, 2, 3, 4});
  expect_close(Tensor::Arange(2, 9, 3, opt()), {2, 5, 8});
  expect_close(Tensor::Arange(5, 0, -2, opt()), {5, 3, 1});
  expect_close(Tensor::Arange(5, -1, -2, opt()), {5, 3, 1});
  expect_close(Tensor::Arange(3, -3, -3, opt()), {3, 0});
  EXPECT_EQ(Tensor::Arange(3, 3, 1, opt()).numel(), 0);
  EXPECT_EQ(Tensor::Arange(5, 0, 1, opt()).numel(), 0);   // wrong direction: empty
  EXPECT_EQ(Tensor::Arange(0, 5, -1, opt()).numel(), 0);
  Tensor i = Tensor::Arange(-2, 3, 2, opt().WithDtype(DataType::I32));
  EXPECT_EQ(i.dtype(), DataType::I32);
  EXPECT_EQ(i.ToVector<int32_t>(), (std::vector<int32_t>{-2, 0, 2}));
  EXPECT_THROW(Tensor::Arange(0, 5, 0, opt()), Error);
}

TEST_P(TensorFactoriesTest, RandAndRandnShapeDtypeAndReproducibility) {
  Generator g1(42), g2(42);
  Tensor r = Tensor::Rand({100, 10}, opt(), &g1);
  EXPECT_EQ(r.sizes(), (Shape{100, 10}));
  EXPECT_EQ(r.dtype(), DataType::F32);
  EXPECT_EQ(r.device(), device());
  const std::vector<float> v = r.ToVector<float>();
  double mean = 0;
  for (float x : v) {
    ASSERT_GE(x, 0.0f);
    ASSERT_LT(x, 1.0f);
    mean += x / v.size();
  }
  EXPECT_NEAR(mean, 0.5, 0.05);
  EXPECT_EQ(Tensor::Rand({100, 10}, opt(), &g2).ToVector<float>(), v);  // same seed, same draw
  EXPECT_NE(Tensor::Rand({100, 10}, opt(), &g1).ToVector<float>(), v);  // the stream advanced

  Generator g3(7);
  Tensor n = Tensor::Randn({4000}, opt(), &g3);
  EXPECT_EQ(n.sizes(), (Shape{4000}));
  double m = 0, m2 = 0;
  for (float x : n.ToVector<float>()) {
    m += x / 4000.0;
    m2 += static_cast<double>(x) * x / 4000.0;
  }
  EXPECT_NEAR(m, 0.0, 0.1);
  EXPECT_NEAR(m2, 1.0, 0.1);
  EXPECT_THROW(Tensor::Rand({2}, opt().WithDtype(DataType::I32)), Error);
  EXPECT_THROW(Tensor::Randn({2}, opt().WithDtype(DataType::I32)), Error);
  EXPECT_TRUE(Tensor::Randn({2}, opt().WithRequiresGrad()).requires_grad());
}

TEST_P(TensorFactoriesTest, FromAndFromI32) {
  Tensor f = Tensor::From({1, 2, 3, 4, 5, 6}, {2, 3}, opt());
  EXPECT_EQ(f.sizes(), (Shape{2, 3}));
  EXPECT_EQ(f.device(), device());
  EXPECT_EQ(f.ToVector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  Tensor i = Tensor::FromI32({-1, 0, 9}, {3}, opt().WithDtype(DataType::F32));  // dtype ignored
  EXPECT_EQ(i.dtype(), DataType::I32);
  EXPECT_EQ(i.ToVector<int32_t>(), (std::vector<int32_t>{-1, 0, 9}));
  const std::string msg = error_message([&] { Tensor::From({1, 2, 3}, {2, 2}, opt()); });
  EXPECT_TRUE(contains(msg, "3 values")) << msg;
  EXPECT_TRUE(contains(msg, "[2, 2]")) << msg;
  EXPECT_THROW(Tensor::FromI32({1}, {2}, opt()), Error);
  EXPECT_TRUE(Tensor::From({1}, {1}, opt().WithRequiresGrad()).requires_grad());
}

TEST_P(TensorFactoriesTest, ScalarAndItem) {
  Tensor s = Tensor::Scalar(2.5f, opt());
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.numel(), 1);
  EXPECT_FLOAT_EQ(s.Item(), 2.5f);
  EXPECT_FLOAT_EQ(Tensor::From({4}, {1, 1}, opt()).Item(), 4.0f);
  EXPECT_FLOAT_EQ(Tensor::FromI32({-3}, {1}, opt()).Item(), -3.0f);
  const std::string msg = error_message([&] { Tensor::Zeros({2, 3}, opt()).Item(); });
  EXPECT_TRUE(contains(msg, "[2, 3]")) << msg;
}

TEST_P(TensorFactoriesTest, ToVectorChecksTypeAndGathersViews) {
  Tensor f = Tensor::Arange(0, 6, 1, opt()).Reshape({2, 3});
  const std::string msg = error_message([&] { f.ToVector<int32_t>(); });
  EXPECT_TRUE(contains(msg, "i32") && contains(msg, "f32")) << msg;
  EXPECT_THROW(Tensor::FromI32({1}, {1}, opt()).ToVector<float>(), Error);
  EXPECT_EQ(f.Transpose(0, 1).ToVector<float>(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
}

TEST(TensorFactoriesCpuTest, ToStringShowsShapeDtypeDeviceAndValues) {
  Tensor t = Tensor::From({1.5f, -2, 3, 4}, {2, 2});
  const std::string s = t.ToString();
  EXPECT_TRUE(contains(s, "shape=[2, 2]")) << s;
  EXPECT_TRUE(contains(s, "dtype=f32")) << s;
  EXPECT_TRUE(contains(s, "device=cpu")) << s;
  EXPECT_TRUE(contains(s, "[[1.5, -2], [3, 4]]")) << s;
  EXPECT_FALSE(contains(s, "requires_grad")) << s;
  t.SetRequiresGrad();
  EXPECT_TRUE(contains(t.ToString(), "requires_grad"));
  std::ostringstream os;
  os << t;
  EXPECT_EQ(os.str(), t.ToString());
  EXPECT_TRUE(contains(Tensor::FromI32({7, 8}, {2}).ToString(), "dtype=i32"));
  EXPECT_TRUE(contains(Tensor::FromI32({7, 8}, {2}).ToString(), "[7, 8]"));
  EXPECT_TRUE(contains(Tensor::Scalar(5).ToString(), "values=5)"));
}

TEST(TensorFactoriesCpuTest, ToStringElidesLongData) {
  Tensor t = Tensor::Arange(0, 1000);
  const std::string s = t.ToString(6);
  EXPECT_TRUE(contains(s, "[0, 1, 2, ..., 997, 998, 999]")) << s;
  EXPECT_FALSE(contains(s, "500")) << s;
  EXPECT_LT(t.ToString().size(), 400u);  // the default limit elides too
  EXPECT_TRUE(contains(t.ToString(), "...")) << t.ToString();
  EXPECT_TRUE(contains(t.ToString(), "shape=[1000]")) << t.ToString();
}

TEST(TensorFactoriesCpuTest, SizesThatOverflowAreErrorsNotShortBuffers) {
  const int64_t big = int64_t{1} << 62;
  // 2^62 floats are 2^64 bytes, which wrapped to a 1-byte buffer that fill then overran.
  testing::expect_error_mentions([&] { Tensor::Zeros({big}); }, {"[4611686018427387904]"});
  testing::expect_error_mentions([&] { Tensor::Arange(0, big, 1); }, {"[4611686018427387904]"});
  testing::expect_error_mentions([] { Tensor::Arange(INT64_MIN, INT64_MAX, 1); },
                                 {"Arange(", "18446744073709551615 elements"});
  EXPECT_EQ(Tensor::Arange(INT64_MAX - 2, INT64_MAX, 1).numel(), 2);
  EXPECT_EQ(Tensor::Arange(INT64_MIN + 4, INT64_MIN, -2).numel(), 2);
  EXPECT_EQ(Tensor::Arange(10, 0, -3, TensorOption().WithDtype(DataType::I32)).ToVector<int32_t>(),
            (std::vector<int32_t>{10, 7, 4, 1}));
}

ZERO_INSTANTIATE_DEVICE_TEST(TensorFactoriesTest);

}  // namespace
}  // namespace zero
