// Tests of the MLP backward's fused step, grad_pre = (grad_y @ weight) gelu'(pre), with
// the hidden layer gelu(pre) made in the same pass when asked for (kernels/linear.cpp; on
// CUDA for 16-bit operands a GEMM, then one element-wise pass with the hardware's tanh,
// cuda/gelu_epilogue.cu): against a float64 evaluation of the formula; against the
// unfused matmul then unary_backward(kGelu) and unary(kGelu), bit for bit on the CPU in
// every dtype and on CUDA in F32 in every precision mode (F32's pass uses tanhf); on CUDA in
// BF16 and F16 within a bound on the approximate tanh (Note [GeLU's derivative after the
// GEMM]); the fallbacks (a size that is not a multiple of 8) and the GPT's shape; the
// first Linear's bias gradient summed in the same pass.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "tests/kernels/half_support.h"
#include "tests/support/test_support.h"
#include "zero/kernels/precision.h"
#include "zero/kernels/tensor_ops.h"

namespace zero {
namespace {

using testing::as;
using testing::cpu_f32;
using testing::empty;
using testing::expect_error_mentions;
using testing::kHalfTypes;
using testing::rounded_randn;
using testing::unit_roundoff;

// grad_y [n, c], weight [c, h], pre [n, h].
struct Shape3 {
  int64_t n, c, hidden;
};

// An odd row count with a width the epilogue's aux accepts (a multiple of 8), one it
// does not (the unfused fallback on CUDA), and the MLP of the GPT chapter's default
// model at B*T = 512: c = 384, h = 4c.
const Shape3 kShapes[] = {{33, 24, 40}, {7, 16, 36}, {512, 384, 1536}};

std::string shape_name(const Shape3& s) {
  return "[" + std::to_string(s.n) + ", " + std::to_string(s.c) + "] x [" +
         std::to_string(s.c) + ", " + std::to_string(s.hidden) + "]";
}

struct Inputs {
  Tensor grad_y, weight, pre;
};
// Rounded to `dtype` (exact in F32 too), as F32 on the CPU. pre spans GeLU's curved
// part and its tails, where gelu' runs from about -0.13 to 1.13.
Inputs make_inputs(const Shape3& s, DataType dtype, uint64_t seed) {
  return {rounded_randn({s.n, s.c}, dtype, seed),
          rounded_randn({s.c, s.hidden}, dtype, seed + 1,
                        1.0f / std::sqrt(static_cast<float>(s.c))),
          rounded_randn({s.n, s.hidden}, dtype, seed + 2, 2.0f)};
}
Inputs on(const Inputs& in, DataType dtype, Device device) {
  return {as(in.grad_y, dtype, device), as(in.weight, dtype, device), as(in.pre, dtype, device)};
}

Tensor fused(const Inputs& in) {
  const Tensor out = empty(in.pre.sizes(), in.pre.dtype(), in.pre.device());
  ops::matmul_gelu_backward(in.grad_y, in.weight, in.pre, out);
  return out;
}
// The unfused kernels, into separate tensors: the product dh, and the result.
struct Unfused {
  Tensor dh, grad_pre;
};
Unfused unfused(const Inputs& in) {
  Unfused r{empty(in.pre.sizes(), in.pre.dtype(), in.pre.device()),
            empty(in.pre.sizes(), in.pre.dtype(), in.pre.device())};
  ops::matmul(in.grad_y, in.weight, r.dh);
  ops::unary_backward(ops::UnaryOp::kGelu, in.pre, in.pre, r.dh, r.grad_pre);
  return r;
}

// d/dx of 0.5 x (1 + tanh(k (x + 0.044715 x^3))), k = sqrt(2 / pi), in float64.
double gelu_grad64(double x) {
  const double k = std::sqrt(2.0 / M_PI), u = k * (x + 0.044715 * x * x * x);
  const double t = std::tanh(u);
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * k * (1.0 + 3.0 * 0.044715 * x * x);
}

// Expects |got - want| <= rel_dh |dh| + rel |want| + atol_fraction max |dh| element by
// element; prints the largest difference seen in units of |dh|.
void expect_within(const Tensor& got, const Tensor& want, const Tensor& dh, double rel_dh,
                   double rel, double atol_fraction, const std::string& what) {
  const std::vector<float> g = cpu_f32(got).ToVector<float>(), w = cpu_f32(want).ToVector<float>();
  const std::vector<float> d = cpu_f32(dh).ToVector<float>();
  ASSERT_EQ(g.size(), w.size());
  double scale = 0.0;
  for (float v : d) scale = std::max(scale, std::fabs(double{v}));
  double worst = 0.0;
  int reported = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const double err = std::fabs(double{g[i]} - w[i]);
    const double tol =
        rel_dh * std::fabs(double{d[i]}) + rel * std::fabs(double{w[i]}) + atol_fraction * scale;
    worst = std::max(worst, err / std::max(std::fabs(double{d[i]}), 1e-3 * scale));
    if (!(err <= tol) && reported++ < 8) {
      ADD_FAILURE() << what << " element " << i << ": got " << g[i] << ", want " << w[i]
                    << " for dh " << d[i] << " (error " << err << ", tolerance " << tol << ")";
    }
  }
  std::printf("%s: largest |grad_pre - want| = %.3g |dh|\n", what.c_str(), worst);
}

class MatmulGeluBackwardTest : public testing::DeviceTest {};

// The formula itself, in float64 from the same F32 inputs: the FP32 product's error
// (c terms, each within 2^-24 relative, summed in some order) and gelu' in FP32.
TEST(MatmulGeluBackwardCpuTest, IsTheProductTimesGelusDerivative) {
  const Shape3 s = kShapes[0];
  const Inputs in = make_inputs(s, DataType::F32, 1);
  const std::vector<float> got = fused(in).ToVector<float>();
  const std::vector<float> g = in.grad_y.ToVector<float>(), w = in.weight.ToVector<float>();
  const std::vector<float> pre = in.pre.ToVector<float>();
  for (int64_t i = 0; i < s.n; ++i) {
    for (int64_t j = 0; j < s.hidden; ++j) {
      double dh = 0.0, magnitude = 0.0;
      for (int64_t k = 0; k < s.c; ++k) {
        dh += double{g[i * s.c + k]} * w[k * s.hidden + j];
        magnitude += std::fabs(double{g[i * s.c + k]} * w[k * s.hidden + j]);
      }
      const double d = gelu_grad64(pre[i * s.hidden + j]), want = dh * d;
      const double tol = (s.c * 0x1p-24 * magnitude) * std::fabs(d) + 1e-6 * std::fabs(dh);
      ASSERT_NEAR(got[i * s.hidden + j], want, tol) << "row " << i << ", column " << j;
    }
  }
}

// On the CPU the fused kernel is the unfused one, in every dtype.
TEST(MatmulGeluBackwardCpuTest, IsTheUnfusedMatmulThenGeluBackwardBitForBit) {
  for (DataType dtype : {DataType::F32, DataType::BF16, DataType::F16}) {
    for (const Shape3& s : kShapes) {
      SCOPED_TRACE(std::string(to_string(dtype)) + " " + shape_name(s));
      const Inputs in = on(make_inputs(s, dtype, 2), dtype, Device::Cpu());
      EXPECT_EQ(cpu_f32(fused(in)).ToVector<float>(),
                cpu_f32(unfused(in).grad_pre).ToVector<float>());
    }
  }
}

// F32 in the default IEEE mode gives exactly the unfused kernels' bits on either device.
TEST_P(MatmulGeluBackwardTest, IeeeF32IsTheUnfusedKernelsBitForBit) {
  ASSERT_EQ(matmul_precision(), MatmulPrecision::kIeee);
  for (const Shape3& s : kShapes) {
    SCOPED_TRACE(shape_name(s));
    const Inputs in = on(make_inputs(s, DataType::F32, 3), DataType::F32, device());
    EXPECT_EQ(fused(in).ToVector<float>(), unfused(in).grad_pre.ToVector<float>());
  }
}

// BF16 and F16 against the FP32 CPU result on the same rounded inputs. The unfused
// kernels round dh before multiplying by gelu' (up to 1.13 u |dh|), then round the
// result (u |result|); CUDA's derivative may be off by a few 2^-11 (the approximate
// tanh), allowed as 2^-8 |dh|, far below a wrong formula.
TEST_P(MatmulGeluBackwardTest, HalfMatchesTheFp32Result) {
  for (DataType dtype : kHalfTypes) {
    for (const Shape3& s : kShapes) {
      SCOPED_TRACE(std::string(to_string(dtype)) + " " + shape_name(s));
      const Inputs in32 = make_inputs(s, dtype, 4);
      const Unfused want = unfused(in32);  // FP32, on the CPU
      const Tensor got = fused(on(in32, dtype, device()));
      ASSERT_EQ(got.dtype(), dtype);
      const double u = unit_roundoff(dtype);
      expect_within(got, want.grad_pre, want.dh, 1.2 * u + 0x1p-8, 1.01 * u, 1e-5,
                    (device().is_cpu() ? "CPU " : "CUDA ") + std::string(to_string(dtype)) +
                        " " + shape_name(s));
    }
  }
}

// F32 in the fast modes too (Note [GeLU's derivative after the GEMM]): the unfused
// kernels of the mode, bit for bit.
TEST_P(MatmulGeluBackwardTest, FastModesRunTheUnfusedKernelsOfTheirMode) {
  if (device().is_cpu()) GTEST_SKIP() << "the precision modes are modes of the CUDA GEMMs";
  if (!tf32_supported(device().index())) GTEST_SKIP() << "needs TF32 Tensor Cores (sm_80+)";
  for (MatmulPrecision mode : {MatmulPrecision::kTf32, MatmulPrecision::kFp16,
                               MatmulPrecision::kSplitTf32}) {
    SCOPED_TRACE(matmul_precision_name(mode));
    ScopedMatmulPrecision scoped(mode);
    const Inputs in = on(make_inputs(kShapes[2], DataType::F32, 5), DataType::F32, device());
    EXPECT_EQ(fused(in).ToVector<float>(), unfused(in).grad_pre.ToVector<float>());
  }
}

// grad_pre and the hidden layer of one call that asks for both.
struct WithHidden {
  Tensor grad_pre, hidden;
};
WithHidden fused_with_hidden(const Inputs& in) {
  WithHidden r{empty(in.pre.sizes(), in.pre.dtype(), in.pre.device()),
               empty(in.pre.sizes(), in.pre.dtype(), in.pre.device())};
  ops::matmul_gelu_backward(in.grad_y, in.weight, in.pre, r.grad_pre, r.hidden);
  return r;
}
Tensor gelu_of(const Tensor& pre) {
  const Tensor out = empty(pre.sizes(), pre.dtype(), pre.device());
  ops::unary(ops::UnaryOp::kGelu, pre, out);
  return out;
}

// Asking for the hidden layer changes nothing else, and in F32 (and on the CPU in every
// dtype) the layer is unary(kGelu) of pre, bit for bit.
TEST_P(MatmulGeluBackwardTest, HiddenLayerIsGeluOfPre) {
  for (DataType dtype : {DataType::F32, DataType::BF16, DataType::F16}) {
    for (const Shape3& s : kShapes) {
      SCOPED_TRACE(std::string(to_string(dtype)) + " " + shape_name(s));
      const Inputs in = on(make_inputs(s, dtype, 9), dtype, device());
      const WithHidden got = fused_with_hidden(in);
      EXPECT_EQ(cpu_f32(got.grad_pre).ToVector<float>(), cpu_f32(fused(in)).ToVector<float>());
      if (dtype != DataType::F32 && !device().is_cpu()) continue;  // bounded below
      EXPECT_EQ(cpu_f32(got.hidden).ToVector<float>(), cpu_f32(gelu_of(in.pre)).ToVector<float>());
    }
  }
}

// 16-bit on CUDA: within a rounding of gelu(pre) evaluated in float64 (absolute among
// F16's subnormals), plus 2^-11 |pre| for tanh.approx.f32 (relative error below 2^-10.9; gelu moves by half of |pre| times
// tanh's error), far below a wrong formula (gelu(1) = 0.841, the identity would be off by
// 0.16).
TEST_P(MatmulGeluBackwardTest, HalfHiddenLayerIsWithinTheApproximateTanh) {
  if (device().is_cpu()) GTEST_SKIP() << "the CPU is exact: HiddenLayerIsGeluOfPre";
  for (DataType dtype : kHalfTypes) {
    for (const Shape3& s : kShapes) {
      SCOPED_TRACE(std::string(to_string(dtype)) + " " + shape_name(s));
      const Inputs in = on(make_inputs(s, dtype, 10), dtype, device());
      const std::vector<float> got = cpu_f32(fused_with_hidden(in).hidden).ToVector<float>();
      const std::vector<float> pre = cpu_f32(in.pre).ToVector<float>();
      const double u = unit_roundoff(dtype), k = std::sqrt(2.0 / M_PI);
      // Half the spacing of F16's subnormals (below 2^-14), where rounding is absolute.
      const double subnormal = dtype == DataType::F16 ? 0x1p-25 : 0.0;
      double worst = 0.0;
      for (size_t i = 0; i < pre.size(); ++i) {
        const double x = pre[i];
        const double want = 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
        const double err = std::fabs(got[i] - want);
        worst = std::max(worst, err / std::max(std::fabs(x), 1e-3));
        ASSERT_LE(err, 1.01 * u * std::fabs(want) + 0x1p-11 * std::fabs(x) + subnormal)
            << "element " << i << " of pre " << x;
      }
      std::printf("%s: largest |hidden - gelu(pre)| = %.3g |pre|\n", to_string(dtype), worst);
    }
  }
}

// The bias gradient asked of the same pass is the column sum of the grad_pre it stores:
// in F32 and the 16-bit dtypes, into either dtype, on every shape (on CUDA: 33 rows take
// a full chunk of 32 and one row more; 36 columns of BF16 or F16 the unpacked path).
// The reference sums the stored values in float64; an FP32 sum of n values may be off by
// about n units of FP32's roundoff of the largest partial sum, and a 16-bit result by one
// rounding more. grad_pre itself is what it is without the sum.
TEST_P(MatmulGeluBackwardTest, BiasGradientIsTheColumnSumOfGradPre) {
  for (DataType dtype : {DataType::F32, DataType::BF16, DataType::F16}) {
    for (const Shape3& s : kShapes) {
      for (DataType bias_dtype : {dtype, DataType::F32}) {
        SCOPED_TRACE(std::string(to_string(dtype)) + " " + shape_name(s) + ", bias " +
                     to_string(bias_dtype));
        const Inputs in = on(make_inputs(s, dtype, 11), dtype, device());
        const Tensor grad_pre = empty(in.pre.sizes(), dtype, device());
        const Tensor grad_bias = empty({s.hidden}, bias_dtype, device());
        ops::matmul_gelu_backward(in.grad_y, in.weight, in.pre, grad_pre, Tensor(), grad_bias);
        EXPECT_EQ(cpu_f32(grad_pre).ToVector<float>(), cpu_f32(fused(in)).ToVector<float>());
        const std::vector<float> g = cpu_f32(grad_pre).ToVector<float>();
        const std::vector<float> got = cpu_f32(grad_bias).ToVector<float>();
        for (int64_t j = 0; j < s.hidden; ++j) {
          double want = 0.0, scale = 0.0;
          for (int64_t r = 0; r < s.n; ++r) {
            want += g[r * s.hidden + j];
            scale += std::fabs(g[r * s.hidden + j]);
          }
          const double bound = s.n * 0x1p-24 * scale + unit_roundoff(bias_dtype) * std::fabs(want);
          ASSERT_LE(std::fabs(got[j] - want), bound + 1e-30) << "column " << j;
        }
      }
    }
  }
}

TEST_P(MatmulGeluBackwardTest, NoRowsIsEmptyAndNoSumIsZero) {
  const Inputs none = on(make_inputs({0, 16, 24}, DataType::F32, 6), DataType::F32, device());
  EXPECT_EQ(fused(none).sizes(), (Shape{0, 24}));
  const Inputs no_sum = on(make_inputs({5, 0, 24}, DataType::F32, 7), DataType::F32, device());
  const std::vector<float> got = fused(no_sum).ToVector<float>();
  EXPECT_TRUE(std::all_of(got.begin(), got.end(), [](float v) { return v == 0.0f; }));
}

TEST_P(MatmulGeluBackwardTest, BadOperandsAreErrors) {
  const Inputs in = on(make_inputs({5, 16, 24}, DataType::F32, 8), DataType::F32, device());
  const Tensor good = empty({5, 24}, DataType::F32, device());
  const Tensor bad_shape = empty({5, 16}, DataType::F32, device());
  const Tensor bad_dtype = empty({5, 24}, DataType::BF16, device());
  const Tensor wrong_weight = empty({24, 16}, DataType::F32, device());
  auto call = [&](const Tensor& weight, const Tensor& pre, const Tensor& out) {
    ops::matmul_gelu_backward(in.grad_y, weight, pre, out);
  };
  expect_error_mentions([&] { call(in.weight, in.pre, bad_shape); },
                        {"matmul_gelu_backward", "grad_pre", "[5, 24]"});
  expect_error_mentions([&] { call(in.weight, bad_dtype, good); },
                        {"matmul_gelu_backward", "pre", "f32"});
  expect_error_mentions([&] { call(wrong_weight, in.pre, good); },
                        {"matmul_gelu_backward", "weight", "[16, 24]"});
}

ZERO_INSTANTIATE_DEVICE_TEST(MatmulGeluBackwardTest);

}  // namespace
}  // namespace zero
