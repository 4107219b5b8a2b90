// Tests of BF16 and F16 tensors in the kernels (the dtype lists of kernels/dtype_dispatch.h):
// `ops::convert` into and out of each 16-bit type, bit for bit against the scalar
// conversions of core/half.h on both devices; element-wise ops, sums and maxima on
// 16-bit tensors against the same ops in FP32, within each format's rounding; copies and
// fills of every dtype; and the kernels that stay FP32-only refusing a 16-bit tensor.
#include <cmath>
#include <vector>

#include "tests/support/test_support.h"
#include "zero/kernels/tensor_ops.h"

namespace zero {
namespace {

using testing::contains;
using testing::error_message;

class HalfKernelsTest : public testing::DeviceTest {
 protected:
  // `values` as an F32 tensor on the device under test.
  Tensor f32(const std::vector<float>& values, const Shape& sizes) const {
    return Tensor::From(values, sizes).To(device());
  }
  // `t` converted to `dtype` on its device.
  static Tensor as(const Tensor& t, DataType dtype) {
    Tensor out = Tensor::Empty(t.sizes(), TensorOption().WithDtype(dtype).OnDevice(t.device()));
    ops::convert(t, out);
    return out;
  }
  // Values spread over [-40, 40] with fractions no 16-bit format holds exactly.
  static std::vector<float> values(int n) {
    std::vector<float> v;
    for (int i = 0; i < n; ++i) v.push_back(std::sin(0.37f * i) * 40.0f + 0.001f * i);
    return v;
  }
};

// Round-to-nearest-even's relative error bound: half an ulp, 2^-8 for BF16, 2^-11 for F16.
double unit_roundoff(DataType dtype) { return dtype == DataType::BF16 ? 0x1p-8 : 0x1p-11; }

TEST_P(HalfKernelsTest, ConvertRoundsAsTheScalarConversion) {
  const std::vector<float> v = values(1000);
  const Tensor x = f32(v, {10, 100});
  for (DataType dtype : {DataType::BF16, DataType::F16}) {
    SCOPED_TRACE(to_string(dtype));
    const Tensor h = as(x, dtype).Cpu();
    for (size_t i = 0; i < v.size(); ++i) {
      const uint16_t want = dtype == DataType::BF16 ? float_to_bf16_bits(v[i])
                                                     : float_to_f16_bits(v[i]);
      const uint16_t got = dtype == DataType::BF16 ? h.data_ptr<bf16>()[i].bits
                                                    : h.data_ptr<f16>()[i].bits;
      ASSERT_EQ(got, want) << "element " << i;
    }
    // And back to F32 exactly, also through a transposed (strided) view.
    const std::vector<float> back = as(as(x, dtype), DataType::F32).ToVector<float>();
    const Tensor t = as(x.Transpose(0, 1), dtype);
    const std::vector<float> back_t = as(t, DataType::F32).Transpose(0, 1).Contiguous().ToVector<float>();
    for (size_t i = 0; i < v.size(); ++i) {
      const float want = dtype == DataType::BF16 ? bf16_bits_to_float(float_to_bf16_bits(v[i]))
                                                 : f16_bits_to_float(float_to_f16_bits(v[i]));
      ASSERT_EQ(back[i], want);
      ASSERT_EQ(back_t[i], want);
    }
  }
}

TEST_P(HalfKernelsTest, ElementwiseOpsComputeInFloatAndRoundOnce) {
  const std::vector<float> va = values(256), vb = values(256 + 7);
  const Tensor a = f32(va, {16, 16});
  const Tensor b = f32(std::vector<float>(vb.begin() + 7, vb.end()), {16, 16});
  for (DataType dtype : {DataType::BF16, DataType::F16}) {
    SCOPED_TRACE(to_string(dtype));
    const Tensor ha = as(a, dtype), hb = as(b, dtype);
    const Tensor out = Tensor::Empty({16, 16}, ha.options());
    ops::mul(ha, hb, out);
    // The reference multiplies the rounded inputs in FP32 and rounds the product.
    const Tensor ref = Tensor::Empty({16, 16}, a.options());
    ops::mul(as(ha, DataType::F32), as(hb, DataType::F32), ref);
    const std::vector<float> got = as(out, DataType::F32).ToVector<float>();
    const std::vector<float> want = as(as(ref, dtype), DataType::F32).ToVector<float>();
    EXPECT_EQ(got, want) << "one rounding, of the FP32 product";
    const Tensor g = Tensor::Empty({16, 16}, ha.options());
    ops::unary(ops::UnaryOp::kGelu, ha, g);
    const std::vector<float> gf = as(g, DataType::F32).ToVector<float>();
    const std::vector<float> xs = as(ha, DataType::F32).ToVector<float>();
    for (size_t i = 0; i < gf.size(); ++i) {
      const double x = xs[i];
      const double want_g = 0.5 * x * (1 + std::tanh(0.7978845608 * (x + 0.044715 * x * x * x)));
      EXPECT_NEAR(gf[i], want_g, 2 * unit_roundoff(dtype) * std::fabs(want_g) + 1e-6);
    }
  }
}

TEST_P(HalfKernelsTest, SumsAccumulateInFloat) {
  // 4096 values of 1 + 1/64: a 16-bit running sum would stall once the sum's ulp passes
  // 2 (BF16 from 256 on); accumulated in float the total is exact, then rounded once.
  const Tensor x = f32(std::vector<float>(4096, 1.0f + 1.0f / 64), {64, 64});
  for (DataType dtype : {DataType::BF16, DataType::F16}) {
    SCOPED_TRACE(to_string(dtype));
    const Tensor h = as(x, dtype);
    const Tensor all = Tensor::Empty({1}, h.options());
    ops::sum_all(h, all);
    EXPECT_EQ(all.Item(), 4160.0f);
    const Tensor rows = Tensor::Empty({64, 1}, h.options());
    ops::sum(h, 1, rows);
    EXPECT_EQ(as(rows, DataType::F32).ToVector<float>()[5], 65.0f);
    const Tensor cols = Tensor::Empty({1, 64}, h.options());
    ops::mean(h, 0, cols);
    EXPECT_EQ(as(cols, DataType::F32).ToVector<float>()[9], 1.0f + 1.0f / 64);
    const Tensor m = Tensor::Empty({1}, h.options()), idx = Tensor::Empty(
        {1}, TensorOption().WithDtype(DataType::I32).OnDevice(device()));
    ops::max_all(h, m, idx);
    EXPECT_EQ(m.Item(), 1.0f + 1.0f / 64);
  }
}

TEST_P(HalfKernelsTest, CopiesAndFillsMoveEveryDtype) {
  for (DataType dtype : {DataType::F32, DataType::I32, DataType::BF16, DataType::F16}) {
    SCOPED_TRACE(to_string(dtype));
    const TensorOption on = TensorOption().WithDtype(dtype).OnDevice(device());
    Tensor t = Tensor::Empty({3, 4}, on);
    ops::fill(t, 3.0f);
    Tensor u = Tensor::Empty({4, 3}, on);
    ops::copy(t.Transpose(0, 1), u);
    EXPECT_EQ(as(u, DataType::F32).ToVector<float>(), std::vector<float>(12, 3.0f));
  }
}

TEST_P(HalfKernelsTest, Fp32OnlyKernelsSayWhichDtypeTheyNeed) {
  const Tensor h = as(f32(values(16), {4, 4}), DataType::BF16);
  const Tensor y = Tensor::Empty({4, 4}, h.options());
  const Tensor mask = Tensor::Zeros({4, 4}, TensorOption().WithDtype(DataType::I32).OnDevice(device()));
  EXPECT_TRUE(contains(error_message([&] { ops::masked_fill(h, mask, 0.0f, y); }), "bf16"))
      << "masked_fill";
  const Tensor i32 = Tensor::Empty({4, 4}, TensorOption().WithDtype(DataType::I32).OnDevice(device()));
  EXPECT_TRUE(contains(error_message([&] { ops::convert(h, Tensor::Empty({2}, h.options())); }),
                       "shape"));
  ops::convert(h, i32);  // towards zero through float
  const std::vector<int32_t> ints = i32.ToVector<int32_t>();
  EXPECT_EQ(ints[3], static_cast<int32_t>(bf16_bits_to_float(float_to_bf16_bits(values(16)[3]))));
  EXPECT_NE(ints[3], 0);
}

ZERO_INSTANTIATE_DEVICE_TEST(HalfKernelsTest);

}  // namespace
}  // namespace zero
