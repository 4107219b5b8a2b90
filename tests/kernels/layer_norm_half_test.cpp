// Tests of LayerNorm in BF16 and F16 (kernels/layer_norm.cpp): forward and backward on
// 16-bit x, weight and bias against the FP32 kernel on the same rounded inputs (Note
// [Testing a 16-bit kernel against FP32] in half_support.h), at row widths that take
// each of the CUDA backward's paths; grad_weight and grad_bias in the weight's dtype and
// in F32; row statistics accumulated in FP32; and the dtype checks.
#include <cmath>
#include <vector>

#include "tests/kernels/half_support.h"
#include "tests/support/test_support.h"
#include "zero/kernels/tensor_ops.h"

namespace zero {
namespace {

using testing::as;
using testing::contains;
using testing::cpu_f32;
using testing::empty;
using testing::error_message;
using testing::expect_rounded_from;
using testing::kHalfTypes;
using testing::rounded_randn;

class LayerNormHalfTest : public testing::DeviceTest {};

constexpr float kEps = 1e-5f;

// The CPU FP32 forward and backward on F32 tensors (the reference).
struct Reference {
  Tensor y, mean, rstd, grad_x, grad_weight, grad_bias;
};

Reference reference(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& g) {
  const int64_t c = x.size(-1), n = x.numel() / c;
  const TensorOption f32;
  Reference r{Tensor::Empty(x.sizes(), f32), Tensor::Empty({n}, f32), Tensor::Empty({n}, f32),
              Tensor::Empty(x.sizes(), f32), Tensor::Empty({c}, f32), Tensor::Empty({c}, f32)};
  ops::layer_norm_forward(x, w, b, kEps, r.y, r.mean, r.rstd);
  ops::layer_norm_backward(g, x, w, r.mean, r.rstd, r.grad_x, r.grad_weight, r.grad_bias);
  return r;
}

// Widths for each CUDA backward path: the fused kernel at 4, 12, 24 and 32 columns per
// lane, and the two-kernel path beyond 1024; 37 rows span two fused blocks.
TEST_P(LayerNormHalfTest, MatchesFp32OnRoundedInputsAtEveryWidth) {
  for (int64_t c : {96, 384, 700, 1024, 1500}) {
    for (DataType dtype : kHalfTypes) {
      SCOPED_TRACE(std::string(to_string(dtype)) + ", C = " + std::to_string(c));
      const Shape sizes = {37, c};
      // An offset of 3 makes the mean matter; the weights vary around 1.
      Tensor x = rounded_randn(sizes, dtype, 1 + c);
      ops::binary_scalar(ops::BinaryOp::kAdd, x, 3.0f, x);
      x = cpu_f32(as(x, dtype));
      const Tensor w = cpu_f32(as(rounded_randn({c}, dtype, 2, 0.2f) + 1.0f, dtype));
      const Tensor b = rounded_randn({c}, dtype, 3, 0.5f);
      const Tensor g = rounded_randn(sizes, dtype, 4);
      const Reference want = reference(x, w, b, g);

      const Tensor xh = as(x, dtype, device()), wh = as(w, dtype, device());
      const Tensor bh = as(b, dtype, device()), gh = as(g, dtype, device());
      const Tensor y = empty(sizes, dtype, device()), mean = empty({37}, DataType::F32, device());
      const Tensor rstd = empty({37}, DataType::F32, device());
      ops::layer_norm_forward(xh, wh, bh, kEps, y, mean, rstd);
      expect_rounded_from(y, want.y);
      expect_rounded_from(mean, want.mean, 1e-6);
      expect_rounded_from(rstd, want.rstd, 1e-6);

      // The parameter gradients once in the weight's dtype and once in F32, which must
      // then hold the FP32 sums (Note [Testing a 16-bit kernel against FP32]).
      for (DataType grad_dtype : {dtype, DataType::F32}) {
        SCOPED_TRACE(std::string("grad_weight ") + to_string(grad_dtype));
        const Tensor gx = empty(sizes, dtype, device());
        const Tensor gw = empty({c}, grad_dtype, device()), gb = empty({c}, grad_dtype, device());
        ops::layer_norm_backward(gh, xh, wh, mean, rstd, gx, gw, gb);
        expect_rounded_from(gx, want.grad_x);
        expect_rounded_from(gw, want.grad_weight);
        expect_rounded_from(gb, want.grad_bias);
      }
    }
  }
}

TEST_P(LayerNormHalfTest, RowStatisticsAccumulateInFp32) {
  // 4096 values alternating 1 and 1 + 2^-6, all exact in both formats: the mean is
  // 1 + 2^-7 and the deviations are +-2^-7. A 16-bit running sum stalls long before
  // 4096 (BF16 adds nothing to 256 once its ulp is 2), so its mean would be far off.
  std::vector<float> v(4096);
  for (size_t i = 0; i < v.size(); ++i) v[i] = i % 2 ? 1.0f + 0x1p-6f : 1.0f;
  const Tensor x = Tensor::From(v, {1, 4096});
  const Tensor w = Tensor::Ones({4096}), b = Tensor::Zeros({4096});
  const Reference want = reference(x, w, b, x);
  for (DataType dtype : kHalfTypes) {
    SCOPED_TRACE(to_string(dtype));
    const Tensor y = empty({1, 4096}, dtype, device());
    const Tensor mean = empty({1}, DataType::F32, device()), rstd = empty({1}, DataType::F32, device());
    ops::layer_norm_forward(as(x, dtype, device()), as(w, dtype, device()),
                            as(b, dtype, device()), kEps, y, mean, rstd);
    EXPECT_EQ(mean.Item(), 1.0f + 0x1p-7f);
    EXPECT_NEAR(rstd.Item(), 1.0 / std::sqrt(0x1p-14 + kEps), 1e-6 / std::sqrt(0x1p-14 + kEps));
    expect_rounded_from(y, want.y);
    const std::vector<float> yv = cpu_f32(y).ToVector<float>();
    EXPECT_LT(yv[0], -0.9f);  // -2^-7 * rstd = -0.927
    EXPECT_GT(yv[1], 0.9f);
  }
}

TEST_P(LayerNormHalfTest, ChecksNameTheDtypes) {
  const Tensor x = empty({2, 8}, DataType::BF16, device());
  const Tensor w = empty({8}, DataType::BF16, device());
  const Tensor w32 = empty({8}, DataType::F32, device());
  const Tensor stats = empty({2}, DataType::F32, device());
  const std::string mixed = error_message(
      [&] { ops::layer_norm_forward(x, w32, w, kEps, empty({2, 8}, DataType::BF16, device()),
                                    stats, stats); });
  EXPECT_TRUE(contains(mixed, "weight of dtype bf16, got f32")) << mixed;
  const std::string stats16 = error_message(
      [&] { ops::layer_norm_forward(x, w, w, kEps, empty({2, 8}, DataType::BF16, device()),
                                    empty({2}, DataType::BF16, device()), stats); });
  EXPECT_TRUE(contains(stats16, "mean of dtype f32, got bf16")) << stats16;
  const Tensor xi = empty({2, 8}, DataType::I32, device());
  const std::string ints = error_message(
      [&] { ops::layer_norm_forward(xi, xi, xi, kEps, xi, stats, stats); });
  EXPECT_TRUE(contains(ints, "x of dtype f32, bf16 or f16, got i32")) << ints;
  const Tensor f16 = empty({8}, DataType::F16, device());
  const std::string grad = error_message([&] {
    ops::layer_norm_backward(x, x, w, stats, stats, empty({2, 8}, DataType::BF16, device()), f16,
                             f16);
  });
  EXPECT_TRUE(contains(grad, "grad_weight of dtype bf16 or f32, got f16")) << grad;
}

ZERO_INSTANTIATE_DEVICE_TEST(LayerNormHalfTest);

}  // namespace
}  // namespace zero
