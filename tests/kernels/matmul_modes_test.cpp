// Tests of the CUDA GEMM precision modes (MX_FAST_MATMUL: IEEE FP32, split TF32, TF32,
// FP16 Tensor Cores with FP32 in and out) against the CPU GEMM, each under the tolerance
// its arithmetic allows: FP32 rounds like the CPU; TF32 and FP16 keep 10-11 mantissa
// bits of each operand, so relative errors near 1e-3 of the row's magnitude are expected.
// These shapes are small enough for 3xtf32 mode to stay SGEMM; split_tf32_test.cpp covers
// the large ones.
#include <cmath>

#include "tests/support/test_support.h"
#include "zero/kernels/precision.h"
#include "zero/kernels/tensor_ops.h"

namespace zero {
namespace {

using testing::max_relative_error;

struct Mode {
  const char* name;
  double tolerance;
};

// Prints a Mode as its MX_FAST_MATMUL value in test names and failures.
void PrintTo(const Mode& mode, std::ostream* os) { *os << "MX_FAST_MATMUL=" << mode.name; }

class MatmulModesCudaTest : public ::testing::TestWithParam<Mode> {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "needs a CUDA device";
  }
  void TearDown() override { clear_matmul_precision(); }
};

TEST_P(MatmulModesCudaTest, MatchesTheCpuGemmWithinTheModesTolerance) {
  set_matmul_precision(parse_matmul_precision(GetParam().name));
  Generator gen(7);
  Tensor a = Tensor::Randn({3, 96, 200}, TensorOption(), &gen);
  Tensor b = Tensor::Randn({200, 130}, TensorOption(), &gen);
  const Tensor want = matmul(a, b);  // CPU
  const Tensor got = matmul(a.Cuda(), b.Cuda().Transpose(0, 1).Contiguous().Transpose(0, 1));
  const double err = max_relative_error(got.Cpu(), want);
  EXPECT_LT(err, GetParam().tolerance) << GetParam().name;
  const std::string name = GetParam().name;
  if (name == "tf32" || name == "fp16") {
    EXPECT_GT(err, 1e-6) << "a reduced-precision mode should not be bit-exact FP32";
  }
}

// The shape of a Linear's input gradient g W: many rows against a small row-major
// right operand, which TF32 mode copies K-major first (Note [K-major input gradients in
// TF32] in kernels/cuda/split_tf32.cuh); into an output that already holds a sum too.
TEST_P(MatmulModesCudaTest, InputGradientShapeMatchesTheCpu) {
  set_matmul_precision(parse_matmul_precision(GetParam().name));
  Generator gen(9);
  const Tensor g = Tensor::Randn({640, 96}, TensorOption(), &gen);
  const Tensor w = Tensor::Randn({96, 72}, TensorOption(), &gen);
  const Tensor start = Tensor::Randn({640, 72}, TensorOption(), &gen);
  const Tensor got = start.Cuda().Clone();
  ops::matmul(g.Cuda(), w.Cuda(), got, /*accumulate=*/true);
  const Tensor want = matmul(g, w) + start;  // CPU
  EXPECT_LT(max_relative_error(got.Cpu(), want), GetParam().tolerance);
  const Tensor plain = matmul(g.Cuda(), w.Cuda());
  EXPECT_LT(max_relative_error(plain.Cpu(), matmul(g, w)), GetParam().tolerance);
}

TEST_P(MatmulModesCudaTest, GradientsMatchTheCpuWithinTheModesTolerance) {
  set_matmul_precision(parse_matmul_precision(GetParam().name));
  Generator gen(8);
  Tensor a = Tensor::Randn({64, 48}, TensorOption(), &gen).SetRequiresGrad();
  Tensor b = Tensor::Randn({48, 80}, TensorOption(), &gen).SetRequiresGrad();
  Tensor ac = a.Detach().Cuda().SetRequiresGrad(), bc = b.Detach().Cuda().SetRequiresGrad();
  sum(matmul(a, b) * matmul(a, b)).Backward();
  sum(matmul(ac, bc) * matmul(ac, bc)).Backward();
  EXPECT_LT(max_relative_error(ac.Grad().Cpu(), a.Grad()), 4 * GetParam().tolerance);
  EXPECT_LT(max_relative_error(bc.Grad().Cpu(), b.Grad()), 4 * GetParam().tolerance);
}

INSTANTIATE_TEST_SUITE_P(Modes, MatmulModesCudaTest,
                         ::testing::Values(Mode{"ieee", 1e-5}, Mode{"3xtf32", 1e-5}, Mode{"tf32", 5e-3},
                                           Mode{"fp16", 5e-3}),
                         [](const ::testing::TestParamInfo<Mode>& info) {
                           const std::string n = info.param.name;
                           return n == "ieee"     ? std::string("Ieee")
                                  : n == "3xtf32" ? "SplitTf32"
                                  : n == "tf32" ? "Tf32"
                                                : "Fp16";
                         });

}  // namespace
}  // namespace zero
