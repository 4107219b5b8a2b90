// Tests of the autograd cast (autograd/ops/cast_ops.cpp): `to_dtype` rounds exactly as
// the scalar conversions of core/half.h do, is the identity (no node) when the dtype
// already matches, and sends each gradient back converted into its input's dtype.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "tests/support/test_support.h"

namespace zero {
namespace {

using testing::randn_leaf;

class CastOpsTest : public testing::DeviceTest {
 protected:
  TensorOption opt() const { return TensorOption().OnDevice(device()); }
};

// Values that round differently into BF16 and F16: ties, a carry, F16 overflow and
// subnormals, a NaN and the infinities.
std::vector<float> awkward_values() {
  return {0.0f,          -0.0f,       1.0f,     1.00390625f, 1.01171875f, 3.14159265f,
          -2.7182818f,   65504.0f,    65520.0f, 1e6f,        3e38f,       6e-8f,
          1e-9f,         -1.2345e-5f, NAN,      INFINITY,    -INFINITY,   0.1f};
}

uint16_t bits_of(DataType dtype, float v) {
  return dtype == DataType::BF16 ? float_to_bf16_bits(v) : float_to_f16_bits(v);
}

float value_of(DataType dtype, uint16_t b) {
  return dtype == DataType::BF16 ? bf16_bits_to_float(b) : f16_bits_to_float(b);
}

// The 16 bits of every element of a BF16 or F16 tensor.
std::vector<uint16_t> bits(const Tensor& t) {
  std::vector<uint16_t> out;
  if (t.dtype() == DataType::BF16) {
    for (const bf16& v : t.ToVector<bf16>()) out.push_back(v.bits);
  } else {
    for (const f16& v : t.ToVector<f16>()) out.push_back(v.bits);
  }
  return out;
}

TEST_P(CastOpsTest, RoundsLikeTheScalarConversions) {
  const std::vector<float> v = awkward_values();
  const Tensor x = Tensor::From(v, {static_cast<int64_t>(v.size())}, opt());
  for (DataType dtype : {DataType::BF16, DataType::F16}) {
    const Tensor y = to_dtype(x, dtype);
    ASSERT_EQ(y.dtype(), dtype);
    ASSERT_EQ(y.sizes(), x.sizes());
    const std::vector<uint16_t> got = bits(y);
    for (size_t i = 0; i < v.size(); ++i) {
      EXPECT_EQ(got[i], bits_of(dtype, v[i])) << to_string(dtype) << " of " << v[i];
    }
    // Back to F32: the 16-bit value exactly.
    const std::vector<float> back = to_dtype(y, DataType::F32).ToVector<float>();
    for (size_t i = 0; i < v.size(); ++i) {
      const float want = value_of(dtype, bits_of(dtype, v[i]));
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(back[i])) << i;
      } else {
        EXPECT_EQ(back[i], want) << to_string(dtype) << " of " << v[i];
      }
    }
  }
}

TEST_P(CastOpsTest, SameDtypeIsTheTensorItselfWithNoNode) {
  const Tensor x = randn_leaf({3, 4}, device(), 1);
  const Tensor y = to_dtype(x, DataType::F32);
  EXPECT_EQ(y.node(), x.node());
  EXPECT_TRUE(y.is_leaf());
  const Tensor h = to_dtype(x, DataType::BF16);
  EXPECT_FALSE(h.is_leaf());
  EXPECT_EQ(to_dtype(h, DataType::BF16).grad_fn(), h.grad_fn());
  EXPECT_FALSE(to_dtype(Tensor(), DataType::BF16).defined());
}

TEST_P(CastOpsTest, GradientComesBackInTheInputsDtype) {
  // y = sum(to_dtype(x, T) * w) with w in T: dy/dx = w, computed in T and widened.
  for (DataType dtype : {DataType::BF16, DataType::F16}) {
    const Tensor x = randn_leaf({2, 5}, device(), 2);
    const Tensor w32 = Tensor::Randn({2, 5}, opt(), nullptr);
    const Tensor w = to_dtype(w32, dtype);  // no grad: w32 is not a leaf that requires it
    const Tensor y = sum(to_dtype(x, dtype) * w);
    EXPECT_EQ(y.dtype(), dtype);
    y.Backward();
    const Tensor g = x.Grad();
    ASSERT_TRUE(g.defined());
    EXPECT_EQ(g.dtype(), DataType::F32) << to_string(dtype);
    const std::vector<float> got = g.ToVector<float>(), wv = w32.ToVector<float>();
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i], value_of(dtype, bits_of(dtype, wv[i]))) << to_string(dtype) << " " << i;
    }
  }
}

TEST_P(CastOpsTest, SixteenBitLeafGetsASixteenBitGradientThroughAWideningCast) {
  // The other direction: a BF16 leaf used in F32 gets its gradient rounded into BF16.
  const std::vector<float> v = {0.5f, -1.25f, 3.0f};
  Tensor x = to_dtype(Tensor::From(v, {3}, opt()), DataType::BF16).SetRequiresGrad();
  const Tensor scale = Tensor::From({1.0f / 3.0f, 7.0f, -0.1f}, {3}, opt());
  sum(to_dtype(x, DataType::F32) * scale).Backward();
  ASSERT_EQ(x.Grad().dtype(), DataType::BF16);
  const std::vector<uint16_t> got = bits(x.Grad());
  const std::vector<float> s = scale.ToVector<float>();
  for (size_t i = 0; i < s.size(); ++i) EXPECT_EQ(got[i], float_to_bf16_bits(s[i])) << i;
}

TEST_P(CastOpsTest, TwoCastsOfOneParameterSumTheirGradientsInF32) {
  // The tied-embedding pattern: one F32 parameter cast twice; its gradient is the F32
  // sum of the two widened 16-bit gradients.
  const Tensor p = randn_leaf({4}, device(), 3);
  const Tensor a = Tensor::From({1.0f, 2.0f, 3.0f, 4.0f}, {4}, opt());
  const Tensor b = Tensor::From({0.5f, 0.25f, -1.0f, 1e-3f}, {4}, opt());
  const Tensor ha = to_dtype(a, DataType::BF16), hb = to_dtype(b, DataType::BF16);
  (sum(to_dtype(p, DataType::BF16) * ha) + sum(to_dtype(p, DataType::BF16) * hb)).Backward();
  const std::vector<float> g = p.Grad().ToVector<float>();
  const std::vector<float> av = a.ToVector<float>(), bv = b.ToVector<float>();
  for (size_t i = 0; i < g.size(); ++i) {
    const float want = bf16_bits_to_float(float_to_bf16_bits(av[i])) +
                       bf16_bits_to_float(float_to_bf16_bits(bv[i]));
    EXPECT_EQ(g[i], want) << i;
  }
}

TEST_P(CastOpsTest, IntegerResultCarriesNoGradient) {
  const Tensor x = randn_leaf({3}, device(), 4);
  const Tensor ids = to_dtype(x * 10.0f, DataType::I32);
  EXPECT_EQ(ids.dtype(), DataType::I32);
  EXPECT_FALSE(ids.requires_grad());
}

ZERO_INSTANTIATE_DEVICE_TEST(CastOpsTest);

}  // namespace
}  // namespace zero
