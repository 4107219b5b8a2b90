// Tests of the fused Linear + GeLU op (autograd/ops/linear_gelu_op.cpp): on the CPU its
// values and gradients are gelu(linear(x, weight, bias))'s bit for bit, in FP32 and under
// per-use casts to BF16 and F16 (the MLP's mixed precision); its gradients agree with
// finite differences; on CUDA (the cuBLASLt GeLU epilogue) values and gradients agree
// with the CPU's. Shapes: an odd row count, an output width that is not a multiple of 8
// (the CUDA fallback), no bias, only the weight needing a gradient.
#include <algorithm>
#include <string>
#include <vector>

#include "tests/support/test_support.h"
#include "zero/autograd/functional.h"

namespace zero {
namespace {

using testing::check_gradients;
using testing::expect_error_mentions;
using testing::max_relative_error;
using testing::randn_leaf;
using testing::ValueAndGrads;
using testing::value_and_grads;


// Every element of `a` equals `b`'s (both F32 or both one 16-bit dtype, any devices).
void expect_same_bits(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_TRUE(a.defined() && b.defined()) << what;
  ASSERT_EQ(a.dtype(), b.dtype()) << what;
  EXPECT_EQ(to_dtype(a, DataType::F32).ToVector<float>(),
            to_dtype(b, DataType::F32).ToVector<float>())
      << what;
}

// Leaves x [3, 5, 12] (15 rows), weight [out, 12] (scaled so that pre spans GeLU's
// curve and its tails) and bias [out] on `device`.
std::vector<Tensor> leaves(int64_t out, Device device, uint64_t seed) {
  Generator gen(seed + 1);
  Tensor w = (Tensor::Randn({out, 12}, TensorOption(), &gen) * 0.5f).To(device);
  return {randn_leaf({3, 5, 12}, device, seed), w.SetRequiresGrad(true),
          randn_leaf({out}, device, seed + 2)};
}

class LinearGeluOpTest : public testing::DeviceTest {};

// 24 outputs fuse on CUDA; 20 (not a multiple of 8) take the unfused fallback there.
constexpr int64_t kWidths[] = {24, 20};

TEST(LinearGeluOpCpuTest, IsGeluOfLinearBitForBit) {
  for (int64_t out : kWidths) {
    for (bool bias : {true, false}) {
      SCOPED_TRACE("out " + std::to_string(out) + (bias ? "" : ", no bias"));
      std::vector<Tensor> p = leaves(out, Device::Cpu(), 1);
      const Tensor b = bias ? p[2] : Tensor();
      const ValueAndGrads got = value_and_grads([&] { return linear_gelu(p[0], p[1], b); }, p);
      const ValueAndGrads want = value_and_grads([&] { return gelu(linear(p[0], p[1], b)); }, p);
      EXPECT_EQ(got.value.sizes(), (Shape{3, 5, out}));
      expect_same_bits(got.value, want.value, "y");
      for (size_t i = 0; i < (bias ? 3u : 2u); ++i) {
        expect_same_bits(got.grads[i], want.grads[i], "gradient of input " + std::to_string(i));
      }
    }
  }
}

// Mixed precision as the MLP runs it: FP32 leaves cast per use to a 16-bit dtype. The op
// computes in that dtype and its gradients reach the FP32 leaves as FP32.
TEST(LinearGeluOpCpuTest, HalfComputeIsGeluOfLinearBitForBit) {
  for (DataType dtype : {DataType::BF16, DataType::F16}) {
    SCOPED_TRACE(to_string(dtype));
    std::vector<Tensor> p = leaves(24, Device::Cpu(), 2);
    auto cast = [&](int i) { return to_dtype(p[i], dtype); };
    const ValueAndGrads got =
        value_and_grads([&] { return linear_gelu(cast(0), cast(1), cast(2)); }, p);
    const ValueAndGrads want =
        value_and_grads([&] { return gelu(linear(cast(0), cast(1), cast(2))); }, p);
    EXPECT_EQ(got.value.dtype(), dtype);
    expect_same_bits(got.value, want.value, "y");
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(got.grads[i].dtype(), DataType::F32);
      expect_same_bits(got.grads[i], want.grads[i], "gradient of input " + std::to_string(i));
    }
  }
}

TEST(LinearGeluOpCpuTest, GradientsAgainstFiniteDifferences) {
  for (int64_t out : kWidths) {
    SCOPED_TRACE("out " + std::to_string(out));
    const Tensor x = randn_leaf({3, 5, 12}, Device::Cpu(), 3);
    const Tensor w = randn_leaf({out, 12}, Device::Cpu(), 4);
    const Tensor b = randn_leaf({out}, Device::Cpu(), 5);
    check_gradients([](const std::vector<Tensor>& in) { return linear_gelu(in[0], in[1], in[2]); },
                    {x, w, b});
    check_gradients([](const std::vector<Tensor>& in) { return linear_gelu(in[0], in[1]); },
                    {x, w});
  }
}

// The device's values and gradients against the CPU's (the same on the CPU instance).
// On CUDA pre comes from cuBLASLt in FP32, and the gradients from pre alone: within 1e-4
// of the largest element, far above FP32 rounding and far below any wrong formula. y
// comes from cuBLASLt's GeLU, which may use a hardware tanh (Note [GeLU in the GEMM's
// epilogue] in kernels/cuda/gelu_epilogue.cu): within 2^-11.
TEST_P(LinearGeluOpTest, MatchesTheCpu) {
  for (int64_t out : kWidths) {
    for (DataType dtype : {DataType::F32, DataType::BF16}) {
      SCOPED_TRACE("out " + std::to_string(out) + " " + to_string(dtype));
      std::vector<Tensor> cpu = leaves(out, Device::Cpu(), 6), dev = leaves(out, device(), 6);
      auto f = [dtype](const std::vector<Tensor>& p) {
        return linear_gelu(to_dtype(p[0], dtype), to_dtype(p[1], dtype), to_dtype(p[2], dtype));
      };
      const ValueAndGrads want = value_and_grads([&] { return f(cpu); }, cpu);
      const ValueAndGrads got = value_and_grads([&] { return f(dev); }, dev);
      // BF16 rounds y and every activation gradient once (u = 2^-8); the devices round
      // values that differ in their last FP32 bits, so some land a BF16 ulp apart.
      const double bound = dtype == DataType::F32 ? 1e-4 : 1.5 * 0x1p-7;
      EXPECT_LE(max_relative_error(to_dtype(got.value, DataType::F32),
                                   to_dtype(want.value, DataType::F32)),
                std::max(bound, 0x1p-11));
      for (size_t i = 0; i < 3; ++i) {
        EXPECT_LE(max_relative_error(got.grads[i], want.grads[i]), bound)
            << "gradient of input " << i;
      }
    }
  }
}

TEST_P(LinearGeluOpTest, OnlyWeightNeedsGrad) {
  const Tensor x = Tensor::Ones({2, 3}).To(device());  // no grad: x's gradient is not made
  const Tensor w = randn_leaf({8, 3}, device(), 7);
  const Tensor b = randn_leaf({8}, device(), 8);
  sum(linear_gelu(x, w, b)).Backward();
  EXPECT_TRUE(w.Grad().defined());
  EXPECT_TRUE(b.Grad().defined());
  EXPECT_FALSE(x.Grad().defined());
}

TEST_P(LinearGeluOpTest, BadShapesAreErrors) {
  const Tensor x = Tensor::Zeros({2, 5}).To(device());
  const Tensor w = Tensor::Zeros({4, 5}).To(device());
  expect_error_mentions([&] { linear_gelu(Tensor::Zeros({2, 6}).To(device()), w); },
                        {"linear_gelu", "[..., 5]", "[2, 6]"});
  expect_error_mentions([&] { linear_gelu(x, w, Tensor::Zeros({5}).To(device())); },
                        {"linear_gelu", "bias", "[4]", "[5]"});
  expect_error_mentions([&] { linear_gelu(x, Tensor::Zeros({4}).To(device())); },
                        {"linear_gelu", "weight", "[out, in]"});
}

ZERO_INSTANTIATE_DEVICE_TEST(LinearGeluOpTest);

}  // namespace
}  // namespace zero
