// Tests of the plain CUDA attention kernels (zero/kernels/cuda/attention_reference.cu),
// the fast kernels' slow twin: the reference against the CPU's double accumulators, then
// the fast kernels (attention.cu, attention_backward.cu, reached through
// ops::attention_forward and ops::attention_backward) against the reference, forward and
// backward, on shapes whose T is no multiple of the 64-row tile, every compiled head
// width (32, 64 with the GPT's D = 64, 128), D not a multiple of 4 (the loads without
// cp.async), Tq < Tk, causal or not, and dropout 0 or 0.1.
//
// Tolerances, as max |a - b| over max |b| (testing::max_relative_error). The reference
// sums in FP32, one term after another: emulating its arithmetic on the CPU at these
// shapes gave errors under 1.5e-6 of double's, out, lse and gradients alike, so it is
// held to 1e-5 against the CPU. The fast kernels in exact mode (3xTF32) are within 1e-5
// of double (AttentionModesCudaTest in attention_test.cpp); with the reference's share,
// 2e-5 covers both with room to spare. Mistakes land far outside: one TF32 product per
// product (the tf32 mode, forced off here) errs by about 1e-3, and a single dropout
// factor drawn for the wrong probability moves an output by P_ij |v_j|, about 1e-2 of
// the largest at these lengths.
#include <string>
#include <vector>

#include "tests/support/test_support.h"
#include "zero/kernels/precision.h"
#include "zero/kernels/tensor_ops.h"

namespace zero {
namespace {

constexpr double kReferenceVsCpu = 1e-5;
constexpr double kFastVsReference = 2e-5;
constexpr uint64_t kSeed = 17, kOffset = 6;  // the dropout stream (offset not a multiple of 4)

struct Case {
  int64_t B, H, Tq, Tk, D;
  bool causal;
  float p;  // dropout probability
};

std::string name(const Case& c) {
  return "Tq" + std::to_string(c.Tq) + "Tk" + std::to_string(c.Tk) + "D" + std::to_string(c.D) +
         (c.causal ? "Causal" : "Full") + (c.p > 0.0f ? "Dropout" : "NoDropout");
}

void PrintTo(const Case& c, std::ostream* os) { *os << name(c); }

// A forward and backward: out, lse, grad_q, grad_k, grad_v.
struct Results {
  Tensor out, lse, dq, dk, dv;
};

// The inputs of a case, on the CPU: q, k, v and the output's gradient.
struct Inputs {
  Tensor q, k, v, grad_out;
};

Inputs inputs(const Case& c) {
  Generator gen(5);
  const Tensor q = Tensor::Randn({c.B, c.H, c.Tq, c.D}, TensorOption(), &gen);
  const Tensor k = Tensor::Randn({c.B, c.H, c.Tk, c.D}, TensorOption(), &gen);
  const Tensor v = Tensor::Randn({c.B, c.H, c.Tk, c.D}, TensorOption(), &gen);
  const Tensor grad_out = Tensor::Randn({c.B, c.H, c.Tq, c.D}, TensorOption(), &gen);
  return {q, k, v, grad_out};
}

// Empty outputs for a case on `device`.
Results empty_results(const Case& c, Device device) {
  const TensorOption on = TensorOption().OnDevice(device);
  return {Tensor::Empty({c.B, c.H, c.Tq, c.D}, on), Tensor::Empty({c.B, c.H, c.Tq}, on),
          Tensor::Empty({c.B, c.H, c.Tq, c.D}, on), Tensor::Empty({c.B, c.H, c.Tk, c.D}, on),
          Tensor::Empty({c.B, c.H, c.Tk, c.D}, on)};
}

// Through the dispatch: the CPU reference on the CPU, the fast kernels on the GPU.
Results run_dispatch(const Case& c, const Inputs& in, Device device) {
  const Tensor q = in.q.To(device), k = in.k.To(device), v = in.v.To(device);
  Results r = empty_results(c, device);
  ops::attention_forward(q, k, v, c.causal, c.p, kSeed, kOffset, r.out, r.lse);
  ops::attention_backward(q, k, v, r.out, r.lse, in.grad_out.To(device), c.causal, c.p, kSeed,
                          kOffset, r.dq, r.dk, r.dv);
  return r;
}

// The plain CUDA kernels. The backward takes the reference's own out and lse.
Results run_reference(const Case& c, const Inputs& in) {
  const Device cuda = Device::Cuda(0);
  const Tensor q = in.q.To(cuda), k = in.k.To(cuda), v = in.v.To(cuda);
  Results r = empty_results(c, cuda);
  ops::attention_reference_forward(q, k, v, c.causal, c.p, kSeed, kOffset, r.out, r.lse);
  ops::attention_reference_backward(q, k, v, r.out, r.lse, in.grad_out.To(cuda), c.causal,
                                         c.p, kSeed, kOffset, r.dq, r.dk, r.dv);
  return r;
}

void expect_all_close(const Results& got, const Results& want, double tolerance) {
  EXPECT_LT(testing::max_relative_error(got.out, want.out), tolerance) << "out";
  EXPECT_LT(testing::max_relative_error(got.lse, want.lse), tolerance) << "lse";
  EXPECT_LT(testing::max_relative_error(got.dq, want.dq), tolerance) << "grad_q";
  EXPECT_LT(testing::max_relative_error(got.dk, want.dk), tolerance) << "grad_k";
  EXPECT_LT(testing::max_relative_error(got.dv, want.dv), tolerance) << "grad_v";
}

class AttentionReferenceCudaTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "needs a CUDA device";
    if (!tf32_supported(0)) GTEST_SKIP() << "needs TF32 Tensor Cores (sm_80 or newer)";
  }
};

TEST_P(AttentionReferenceCudaTest, ReferenceMatchesTheCpu) {
  const Case c = GetParam();
  const Inputs in = inputs(c);
  expect_all_close(run_reference(c, in), run_dispatch(c, in, Device::Cpu()), kReferenceVsCpu);
}

TEST_P(AttentionReferenceCudaTest, FastKernelsMatchTheReference) {
  const Case c = GetParam();
  const Inputs in = inputs(c);
  // Both FP32-accurate modes, whatever MX_FAST_MATMUL says.
  for (const MatmulPrecision precision : {MatmulPrecision::kIeee, MatmulPrecision::kSplitTf32}) {
    SCOPED_TRACE(matmul_precision_name(precision));
    const ScopedMatmulPrecision guard(precision);
    expect_all_close(run_dispatch(c, in, Device::Cuda(0)), run_reference(c, in), kFastVsReference);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, AttentionReferenceCudaTest,
    ::testing::Values(Case{2, 3, 100, 100, 64, true, 0.0f},   // the GPT's D, T past one tile
                      Case{2, 3, 100, 100, 64, true, 0.1f},
                      Case{1, 2, 150, 150, 64, false, 0.1f},
                      Case{1, 2, 37, 130, 64, true, 0.1f},    // queries the last Tq positions
                      Case{2, 2, 70, 70, 32, true, 0.1f},
                      Case{1, 2, 129, 129, 128, true, 0.1f},  // the widest compiled D
                      Case{1, 2, 65, 65, 128, false, 0.0f},
                      Case{1, 3, 200, 200, 48, true, 0.1f},   // D padded up to 64
                      Case{2, 1, 77, 77, 30, true, 0.1f},     // D % 4 != 0: no cp.async
                      Case{1, 2, 1, 70, 64, true, 0.1f}),     // one query, a decode step
    [](const ::testing::TestParamInfo<Case>& info) { return name(info.param); });

}  // namespace
}  // namespace zero
