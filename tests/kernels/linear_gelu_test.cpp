// Tests of the Linear fused with GeLU (kernels/linear.cpp; on CUDA one cuBLASLt call with
// the GELU_AUX_BIAS epilogue, cuda/gelu_epilogue.cu) against the unfused composition, the
// Linear then the GeLU: on the CPU bit for bit in every dtype, and on CUDA in IEEE FP32,
// TF32 and split TF32 (which do not fuse); on CUDA in the FP16 mode and in BF16 and F16
// (against the FP32 result), pre within the rounding of the unfused Linear and y within
// a bound on cuBLASLt's own GeLU (Note [GeLU in the GEMM's epilogue]); the fallbacks (an
// output width that is not a multiple of 8, no bias) and the GPT's shape.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
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
using testing::expect_rounded_from;
using testing::kHalfTypes;
using testing::max_relative_error;
using testing::rounded_randn;
using testing::unit_roundoff;

// N rows, `in` inputs, `out` outputs; with or without a bias.
struct LinearShape {
  int64_t n, in, out;
  bool bias;
};

// An odd row count with a width cuBLASLt's aux output accepts (a multiple of 8); a width
// it does not (the unfused fallback on CUDA); no bias (GELU_AUX without BIAS); and the
// MLP of the GPT chapter's default model, [B*T, C] x [4C, C] for B*T = 512, C = 384.
const LinearShape kShapes[] = {
    {33, 72, 40, true}, {7, 24, 36, true}, {33, 72, 40, false}, {512, 384, 1536, true}};

std::string shape_name(const LinearShape& s) {
  return "[" + std::to_string(s.n) + ", " + std::to_string(s.in) + "] x [" +
         std::to_string(s.out) + ", " + std::to_string(s.in) + "]" + (s.bias ? "" : " no bias");
}

// Inputs rounded to `dtype` (exact in F32 too), as F32 on the CPU. The weights are scaled
// as a trained MLP's are, so that pre spans GeLU's curved part and its tails.
struct Inputs {
  Tensor x, weight, bias;
};
Inputs make_inputs(const LinearShape& s, DataType dtype, uint64_t seed) {
  const float w_scale = 2.0f / std::sqrt(static_cast<float>(s.in));
  return {rounded_randn({s.n, s.in}, dtype, seed), rounded_randn({s.out, s.in}, dtype, seed + 1,
                                                                  w_scale),
          s.bias ? rounded_randn({s.out}, dtype, seed + 2, 0.5f) : Tensor()};
}

// `inputs` converted to `dtype` on `device`.
Inputs on(const Inputs& in, DataType dtype, Device device) {
  return {as(in.x, dtype, device), as(in.weight, dtype, device),
          in.bias.defined() ? as(in.bias, dtype, device) : Tensor()};
}

// y and pre of the fused kernel.
struct Result {
  Tensor y, pre;
};
Result fused(const Inputs& in) {
  const Shape sizes = {in.x.size(0), in.weight.size(0)};
  Result r{empty(sizes, in.x.dtype(), in.x.device()), empty(sizes, in.x.dtype(), in.x.device())};
  ops::linear_gelu_forward(in.x, in.weight, in.bias, r.y, r.pre);
  return r;
}
// The same from the two unfused kernels.
Result unfused(const Inputs& in) {
  const Shape sizes = {in.x.size(0), in.weight.size(0)};
  Result r{empty(sizes, in.x.dtype(), in.x.device()), empty(sizes, in.x.dtype(), in.x.device())};
  ops::linear_forward(in.x, in.weight, in.bias, r.pre);
  ops::unary(ops::UnaryOp::kGelu, r.pre, r.y);
  return r;
}

// "CPU" or "CUDA", for the lines the tests print.
std::string where(Device device) { return device.is_cpu() ? "CPU" : "CUDA"; }

// Expects |y - want_y| <= rel_y |want_y| + rel_pre |want_pre| + atol element by element
// (all on any device), where atol = atol_fraction max |want_pre| + abs_atol covers
// another order of the GEMM's sums; prints the largest difference seen, in units of
// |want_pre|.
void expect_gelu_within(const Tensor& y, const Tensor& want_y, const Tensor& want_pre,
                        double rel_y, double rel_pre, double atol_fraction, double abs_atol,
                        const std::string& what) {
  const std::vector<float> g = cpu_f32(y).ToVector<float>(), w = cpu_f32(want_y).ToVector<float>();
  const std::vector<float> p = cpu_f32(want_pre).ToVector<float>();
  ASSERT_EQ(g.size(), w.size());
  double scale = 0.0;
  for (float v : p) scale = std::max(scale, std::fabs(double{v}));
  const double atol = atol_fraction * scale + abs_atol;
  double worst = 0.0;
  int reported = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const double err = std::fabs(double{g[i]} - w[i]);
    const double tol = rel_y * std::fabs(double{w[i]}) + rel_pre * std::fabs(double{p[i]}) + atol;
    worst = std::max(worst, err / std::max(std::fabs(double{p[i]}), 1e-3));
    if (!(err <= tol) && reported++ < 8) {
      ADD_FAILURE() << what << " element " << i << ": got " << g[i] << ", want " << w[i]
                    << " for pre " << p[i] << " (error " << err << ", tolerance " << tol << ")";
    }
  }
  std::printf("%s: largest |y - want| = %.3g |pre|\n", what.c_str(), worst);
}

class LinearGeluTest : public testing::DeviceTest {};

// On the CPU the fused kernel is the unfused one, in every dtype.
TEST(LinearGeluCpuTest, IsTheUnfusedLinearThenGeluBitForBit) {
  for (DataType dtype : {DataType::F32, DataType::BF16, DataType::F16}) {
    for (const LinearShape& s : kShapes) {
      SCOPED_TRACE(std::string(to_string(dtype)) + " " + shape_name(s));
      const Inputs in = on(make_inputs(s, dtype, 1), dtype, Device::Cpu());
      const Result got = fused(in), want = unfused(in);
      EXPECT_EQ(cpu_f32(got.pre).ToVector<float>(), cpu_f32(want.pre).ToVector<float>());
      EXPECT_EQ(cpu_f32(got.y).ToVector<float>(), cpu_f32(want.y).ToVector<float>());
    }
  }
}

// F32 in the default IEEE mode is exactly the unfused ops on either device: on CUDA the
// epilogue's GeLU is not IEEE FP32 (Note [GeLU in the GEMM's epilogue]), so the kernel
// does not fuse there.
TEST_P(LinearGeluTest, IeeeF32IsTheUnfusedOpsBitForBit) {
  ASSERT_EQ(matmul_precision(), MatmulPrecision::kIeee);
  for (const LinearShape& s : kShapes) {
    SCOPED_TRACE(shape_name(s));
    const Inputs in = on(make_inputs(s, DataType::F32, 2), DataType::F32, device());
    const Result got = fused(in), want = unfused(in);
    EXPECT_EQ(got.pre.ToVector<float>(), want.pre.ToVector<float>());
    EXPECT_EQ(got.y.ToVector<float>(), want.y.ToVector<float>());
  }
}

// BF16 and F16 against the FP32 CPU kernels on the same rounded inputs (Note [Testing a
// 16-bit kernel against FP32] in half_support.h): pre is their pre rounded. y is GeLU of
// pre rounded once; the unfused ops (the CPU, and the CUDA fallback) take GeLU of the
// rounded pre, which moves y by up to |gelu'| u |pre| <= 1.13 u |pre|; the epilogue's
// own GeLU adds up to 2^-11 |pre| as in the F32 test.
TEST_P(LinearGeluTest, HalfMatchesTheFp32Result) {
  for (DataType dtype : kHalfTypes) {
    for (const LinearShape& s : kShapes) {
      SCOPED_TRACE(std::string(to_string(dtype)) + " " + shape_name(s));
      const Inputs in32 = make_inputs(s, dtype, 3);
      const Result want = fused(in32);  // FP32, on the CPU
      const Result got = fused(on(in32, dtype, device()));
      ASSERT_EQ(got.y.dtype(), dtype);
      expect_rounded_from(got.pre, want.pre);
      const double u = unit_roundoff(dtype);
      expect_gelu_within(got.y, want.y, want.pre, 2.0 * u, 1.2 * u + 0x1p-11, 1e-5,
                         dtype == DataType::F16 ? 0x1p-24 : 0.0,  // F16's subnormal spacing
                         where(device()) + " " + to_string(dtype) + " " + shape_name(s));
    }
  }
}

// Under split TF32 the GPT's shape is large enough to be split, and the kernel runs the
// unfused ops instead: the 3xtf32 Linear's bits, then GeLU's. TF32 runs them too (its
// cuBLASLt GeLU epilogue is a pass of its own, Note [GeLU in the GEMM's epilogue]).
TEST_P(LinearGeluTest, SplitTf32AndTf32RunTheUnfusedOps) {
  if (device().is_cpu()) GTEST_SKIP() << "split TF32 is a mode of the CUDA GEMMs";
  if (!tf32_supported(device().index())) GTEST_SKIP() << "needs TF32 Tensor Cores (sm_80+)";
  for (MatmulPrecision mode : {MatmulPrecision::kSplitTf32, MatmulPrecision::kTf32}) {
    SCOPED_TRACE(matmul_precision_name(mode));
    ScopedMatmulPrecision scoped(mode);
    const LinearShape s = kShapes[3];
    const Inputs in = on(make_inputs(s, DataType::F32, 4), DataType::F32, device());
    const Result got = fused(in), want = unfused(in);
    EXPECT_EQ(got.pre.ToVector<float>(), want.pre.ToVector<float>());
    EXPECT_EQ(got.y.ToVector<float>(), want.y.ToVector<float>());
  }
}

// FP16 copies of the operands fuse: pre is then the unfused Linear's of the same mode,
// within FP32 summation order (both paths make the same copies).
TEST_P(LinearGeluTest, Fp16ModeMatchesTheUnfusedOpsOfItsMode) {
  if (device().is_cpu()) GTEST_SKIP() << "the precision modes are modes of the CUDA GEMMs";
  ScopedMatmulPrecision scoped(MatmulPrecision::kFp16);
  const LinearShape s = kShapes[3];
  const Inputs in = on(make_inputs(s, DataType::F32, 5), DataType::F32, device());
  const Result got = fused(in), want = unfused(in);
  EXPECT_LE(max_relative_error(got.pre, want.pre), 1e-5);
  expect_gelu_within(got.y, want.y, want.pre, 1e-6, 0x1p-11, 1.2e-5, 0.0, "CUDA F32 fp16");
}

TEST_P(LinearGeluTest, NoRowsIsEmpty) {
  const Inputs in = on(make_inputs({0, 16, 24, true}, DataType::F32, 6), DataType::F32, device());
  const Result got = fused(in);
  EXPECT_EQ(got.y.sizes(), (Shape{0, 24}));
}

TEST_P(LinearGeluTest, BadOutputsAreErrors) {
  const Inputs in = on(make_inputs({5, 16, 24, true}, DataType::F32, 7), DataType::F32, device());
  const Tensor good = empty({5, 24}, DataType::F32, device());
  const Tensor bad_shape = empty({5, 16}, DataType::F32, device());
  const Tensor bad_dtype = empty({5, 24}, DataType::BF16, device());
  auto call = [&](const Tensor& y, const Tensor& pre) {
    ops::linear_gelu_forward(in.x, in.weight, in.bias, y, pre);
  };
  expect_error_mentions([&] { call(good, bad_shape); }, {"linear_gelu", "pre", "[5, 24]"});
  expect_error_mentions([&] { call(bad_dtype, good); }, {"linear_gelu", "y", "f32"});
}

ZERO_INSTANTIATE_DEVICE_TEST(LinearGeluTest);

}  // namespace
}  // namespace zero
