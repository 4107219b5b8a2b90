// Tests of split TF32, the way large FP32 GEMMs run in the opt-in 3xtf32 mode on GPUs
// with TF32 Tensor Cores (Note [FP32 GEMMs on TF32 Tensor Cores], split_tf32.cuh).
// Each product is checked against a double-precision CPU product: split TF32 must be
// within a few times SGEMM's error at this reduction length, far more accurate than one
// TF32 product, and must not be SGEMM in disguise. The shapes are above kSplitMinMacs,
// and the layouts cover every way blas.cu and blas_lt.cu hand an operand to cuBLAS.
#include <cmath>
#include <cstdlib>

#include "tests/support/test_support.h"
#include "zero/kernels/precision.h"
#include "zero/kernels/tensor_ops.h"

namespace zero {
namespace {

using testing::expect_close;

// The worst |got - want| over the largest |want|, want = a b in double on the CPU.
double error_against_double(const Tensor& got, const Tensor& a, const Tensor& b) {
  const Tensor ac = a.Cpu().Contiguous(), bc = b.Cpu().Contiguous();
  const std::vector<float> x = ac.ToVector<float>(), y = bc.ToVector<float>();
  const std::vector<float> g = got.Cpu().Contiguous().ToVector<float>();
  const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
  double worst = 0.0, scale = 0.0;
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      double want = 0.0;
      for (int64_t k = 0; k < K; ++k) want += double(x[i * K + k]) * y[k * N + j];
      worst = std::max(worst, std::fabs(g[i * N + j] - want));
      scale = std::max(scale, std::fabs(want));
    }
  }
  return worst / scale;
}

// How an operand reaches the GEMM: contiguous, a transposed view, or a column slice of
// a wider matrix (a leading dimension larger than its width).
enum class Layout { kContiguous, kTransposed, kSliced };

// A [rows, cols] CUDA tensor of standard normals laid out as `layout` asks.
Tensor operand(int64_t rows, int64_t cols, Layout layout, uint64_t seed) {
  Generator gen(seed);
  const TensorOption cuda = TensorOption().OnDevice(Device::Cuda(0));
  switch (layout) {
    case Layout::kTransposed: return Tensor::Randn({cols, rows}, cuda, &gen).Transpose(0, 1);
    case Layout::kSliced: return Tensor::Randn({rows, cols + 24}, cuda, &gen).Slice(1, 8, 8 + cols);
    default: return Tensor::Randn({rows, cols}, cuda, &gen);
  }
}

struct Case {
  Layout a, b;
};

const char* name(Layout layout) {
  switch (layout) {
    case Layout::kTransposed: return "Transposed";
    case Layout::kSliced: return "Sliced";
    default: return "Contiguous";
  }
}

std::string name(const Case& c) { return std::string("A") + name(c.a) + "B" + name(c.b); }

void PrintTo(const Case& c, std::ostream* os) { *os << name(c); }

class SplitTf32CudaTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "needs a CUDA device";
    if (!tf32_supported(0)) GTEST_SKIP() << "needs TF32 Tensor Cores (sm_80 or newer)";
  }
  void TearDown() override { clear_matmul_precision(); }
};

TEST_P(SplitTf32CudaTest, IsCloseToSgemmAndFarBetterThanTf32) {
  // 260 x 270 x 301: 21.1M multiply-adds, above kSplitMinMacs. No side is a multiple of
  // 32 (the transposing split's tile) and k is odd (the split's unvectorised path).
  const Tensor a = operand(260, 301, GetParam().a, 1), b = operand(301, 270, GetParam().b, 2);
  set_matmul_precision(MatmulPrecision::kSplitTf32);
  const Tensor split = matmul(a, b);
  set_matmul_precision(MatmulPrecision::kIeee);
  const Tensor sgemm = matmul(a, b);
  set_matmul_precision(MatmulPrecision::kTf32);
  const Tensor tf32 = matmul(a, b);
  const double e_split = error_against_double(split, a, b);
  const double e_sgemm = error_against_double(sgemm, a, b);
  const double e_tf32 = error_against_double(tf32, a, b);
  // At 256 x 320 x 288 the H200 measured e_split at 1.1e-6 against SGEMM's 2.3e-7: the
  // Tensor Cores' accumulation (Note [FP32 GEMMs on TF32 Tensor Cores]).
  EXPECT_LT(e_split, 3e-6) << "SGEMM's error: " << e_sgemm;
  EXPECT_LT(e_split, 10 * e_sgemm) << "SGEMM's error: " << e_sgemm;
  EXPECT_GT(e_tf32, 20 * e_split) << "one TF32 product should be far less exact";
  EXPECT_NE(split.ToVector<float>(), sgemm.ToVector<float>())
      << "3xtf32 mode ran SGEMM, not split TF32";
}

INSTANTIATE_TEST_SUITE_P(Layouts, SplitTf32CudaTest,
                         ::testing::Values(Case{Layout::kContiguous, Layout::kContiguous},
                                           Case{Layout::kTransposed, Layout::kContiguous},
                                           Case{Layout::kContiguous, Layout::kTransposed},
                                           Case{Layout::kSliced, Layout::kTransposed},
                                           Case{Layout::kTransposed, Layout::kSliced}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return name(info.param);
                         });

// out += a b (ops::matmul with accumulate; the chunked cross-entropy sums its weight
// gradient this way) in every mode, on a shape large enough for split TF32: first on a
// shape no call has tuned yet (cuBLASLt's first choice), then after a plain call tuned it.
TEST(SplitTf32AccumulateCudaTest, AddsTheProductToTheOutputInEveryMode) {
  if (!cuda_available()) GTEST_SKIP() << "needs a CUDA device";
  struct Mode { const char* name; double tolerance; };
  for (const Mode mode : {Mode{"ieee", 1e-5}, Mode{"3xtf32", 1e-5}, Mode{"tf32", 5e-3}}) {
    set_matmul_precision(parse_matmul_precision(mode.name));
    const Tensor a = operand(264, 303, Layout::kTransposed, 11);
    const Tensor b = operand(303, 272, Layout::kContiguous, 12);
    const Tensor c = operand(264, 272, Layout::kContiguous, 13);
    const Tensor want = (c.Cpu() + matmul(a.Cpu(), b.Cpu())).Contiguous();
    const Tensor out = c.Clone();
    ops::matmul(a, b, out, /*accumulate=*/true);
    EXPECT_LT(testing::max_relative_error(out, want), mode.tolerance) << mode.name << ", untuned";
    const Tensor twice = Tensor::Empty({264, 272}, c.options());
    ops::matmul(a, b, twice);
    ops::matmul(a, b, twice, /*accumulate=*/true);
    const Tensor want_twice = (matmul(a.Cpu(), b.Cpu()) * 2.0f).Contiguous();
    EXPECT_LT(testing::max_relative_error(twice, want_twice), mode.tolerance)
        << mode.name << ", tuned";
  }
  clear_matmul_precision();
}

// The Linear layer's three GEMMs (forward through cuBLASLt with the bias epilogue,
// grad_x through cuBLAS, grad_weight through cuBLASLt with the bias gradient summed
// apart) against the same layer on the CPU.
TEST(SplitTf32LinearCudaTest, ForwardAndGradientsMatchTheCpu) {
  if (!cuda_available()) GTEST_SKIP() << "needs a CUDA device";
  set_matmul_precision(MatmulPrecision::kSplitTf32);
  Generator gen(3);
  // 1024 x 512 x 384: 201M multiply-adds in each GEMM.
  const Tensor x = Tensor::Randn({1024, 384}, TensorOption(), &gen).SetRequiresGrad();
  const Tensor w = Tensor::Randn({512, 384}, TensorOption(), &gen).SetRequiresGrad();
  const Tensor bias = Tensor::Randn({512}, TensorOption(), &gen).SetRequiresGrad();
  const Tensor r = Tensor::Randn({1024, 512}, TensorOption(), &gen);
  const Tensor xc = x.Detach().Cuda().SetRequiresGrad(), wc = w.Detach().Cuda().SetRequiresGrad();
  const Tensor bc = bias.Detach().Cuda().SetRequiresGrad();
  const Tensor y = linear(x, w, bias), yc = linear(xc, wc, bc);  // (1024, 512)
  sum(y * r).Backward();
  sum(yc * r.Cuda()).Backward();
  clear_matmul_precision();
  expect_close(yc.Detach().Cpu(), y.Detach(), 1e-4f, 1e-4f);
  expect_close(xc.Grad().Cpu(), x.Grad(), 1e-4f, 1e-4f);
  expect_close(wc.Grad().Cpu(), w.Grad(), 1e-4f, 1e-3f);
  expect_close(bc.Grad().Cpu(), bias.Grad(), 1e-4f, 1e-3f);
}

// grad_weight with a reduction over 4096 rows and a small output (the shape that runs
// below the forward's rate, docs/speed_notes.md), in every mode; the second shape is also
// large enough for split TF32, which computes the bias gradient apart from the GEMM.
TEST(LinearLongReductionCudaTest, WeightAndBiasGradientsMatchTheCpuInEveryMode) {
  if (!cuda_available()) GTEST_SKIP() << "needs a CUDA device";
  struct Mode { const char* name; double tolerance; };
  for (const Mode mode : {Mode{"ieee", 1e-5}, Mode{"3xtf32", 1e-5}, Mode{"tf32", 5e-3}}) {
    set_matmul_precision(parse_matmul_precision(mode.name));
    for (const int64_t width : {64, 256}) {
      Generator gen(9);
      const Tensor g = Tensor::Randn({4096, width + 32}, TensorOption(), &gen);
      const Tensor x = Tensor::Randn({4096, width}, TensorOption(), &gen);
      const Tensor gw = Tensor::Empty({width + 32, width}), gb = Tensor::Empty({width + 32});
      ops::linear_backward_params(g, x, gw, gb);
      const TensorOption cuda = TensorOption().OnDevice(Device::Cuda(0));
      const Tensor gwc = Tensor::Empty({width + 32, width}, cuda);
      const Tensor gbc = Tensor::Empty({width + 32}, cuda);
      ops::linear_backward_params(g.Cuda(), x.Cuda(), gwc, gbc);
      EXPECT_LT(testing::max_relative_error(gwc, gw), mode.tolerance)
          << mode.name << ", width " << width;
      EXPECT_LT(testing::max_relative_error(gbc, gb), 1e-5) << mode.name << ", width " << width;
    }
  }
  clear_matmul_precision();
}

// The TF32 weight gradient with each operand choice of Note [K-major weight gradients in
// TF32]: 4100 rows, so the 32 x 32 tiles of the transposed copies end inside the matrix,
// against the CPU in FP32; the bias gradient then a column sum of its own.
TEST(LinearLongReductionCudaTest, Tf32KMajorCopiesGiveTheSameGradients) {
  if (!cuda_available()) GTEST_SKIP() << "needs a CUDA device";
  if (!tf32_supported(0)) GTEST_SKIP() << "needs TF32 Tensor Cores (sm_80 or newer)";
  Generator gen(10);
  const Tensor g = Tensor::Randn({4100, 72}, TensorOption(), &gen);
  const Tensor x = Tensor::Randn({4100, 40}, TensorOption(), &gen);
  const Tensor gw = Tensor::Empty({72, 40}), gb = Tensor::Empty({72});
  ops::linear_backward_params(g, x, gw, gb);
  const TensorOption cuda = TensorOption().OnDevice(Device::Cuda(0));
  set_matmul_precision(MatmulPrecision::kTf32);
  for (const char* choice : {"nt", "g", "x", "both", "auto"}) {
    setenv("ZERO_TF32_WEIGHT_GRAD", choice, 1);
    const Tensor gwc = Tensor::Empty({72, 40}, cuda), gbc = Tensor::Empty({72}, cuda);
    ops::linear_backward_params(g.Cuda(), x.Cuda(), gwc, gbc);
    EXPECT_LT(testing::max_relative_error(gwc, gw), 5e-3) << choice;
    EXPECT_LT(testing::max_relative_error(gbc, gb), 1e-5) << choice;
  }
  setenv("ZERO_TF32_WEIGHT_GRAD", "rows", 1);
  const Tensor gwc = Tensor::Empty({72, 40}, cuda), gbc = Tensor::Empty({72}, cuda);
  testing::expect_error_mentions([&] { ops::linear_backward_params(g.Cuda(), x.Cuda(), gwc, gbc); },
                                 {"ZERO_TF32_WEIGHT_GRAD", "nt, g, x, both or auto", "rows"});
  unsetenv("ZERO_TF32_WEIGHT_GRAD");
  clear_matmul_precision();
}

}  // namespace
}  // namespace zero
