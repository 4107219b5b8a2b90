// Tests of the Linear and the MLP that add a residual (`linear(x, w, b, residual)`,
// `mlp(..., residual)`; Note [The residual as the GEMM's C] in kernels/cuda/blas_lt.cu):
// on the CPU the same bits as the op followed by `+`, in every dtype; on CUDA the sum
// rounded once, which a separate addition would round twice; the residual's gradient is
// the output's; finite differences; and the errors of a residual of the wrong shape or
// dtype, or one that is the output itself.
#include <cmath>
#include <vector>

#include "tests/support/test_support.h"
#include "zero/autograd/functional.h"
#include "zero/kernels/tensor_ops.h"

namespace zero {
namespace {

using testing::check_gradients;
using testing::expect_close;
using testing::expect_error_mentions;
using testing::randn_leaf;
using testing::ValueAndGrads;
using testing::value_and_grads;

// x [4, 16, 96], w [128, 96], b [128], residual [4, 16, 128]: 64 rows, widths the
// cuBLASLt path takes (multiples of 8, 16-byte aligned).
std::vector<Tensor> linear_leaves(Device device, uint64_t seed) {
  return {randn_leaf({4, 16, 96}, device, seed), randn_leaf({128, 96}, device, seed + 1),
          randn_leaf({128}, device, seed + 2), randn_leaf({4, 16, 128}, device, seed + 3)};
}

std::vector<Tensor> cast_all(const std::vector<Tensor>& p, DataType dtype) {
  std::vector<Tensor> c;
  for (const Tensor& t : p) c.push_back(to_dtype(t, dtype));
  return c;
}

std::vector<float> floats(const Tensor& t) { return to_dtype(t, DataType::F32).ToVector<float>(); }

TEST(LinearResidualCpuTest, IsTheLinearThenTheAdditionBitForBit) {
  const std::vector<Tensor> p = linear_leaves(Device::Cpu(), 1);
  for (DataType dtype : {DataType::F32, DataType::BF16, DataType::F16}) {
    SCOPED_TRACE(to_string(dtype));
    const ValueAndGrads got = value_and_grads(
        [&] {
          const std::vector<Tensor> c = cast_all(p, dtype);
          return linear(c[0], c[1], c[2], c[3]);
        },
        p);
    const ValueAndGrads want = value_and_grads(
        [&] {
          const std::vector<Tensor> c = cast_all(p, dtype);
          return linear(c[0], c[1], c[2]) + c[3];
        },
        p);
    EXPECT_EQ(got.value.dtype(), dtype);
    EXPECT_EQ(floats(got.value), floats(want.value));
    for (size_t i = 0; i < p.size(); ++i) {
      EXPECT_EQ(floats(got.grads[i]), floats(want.grads[i])) << "gradient of input " << i;
    }
  }
}

TEST(LinearResidualCpuTest, MlpIsTheMlpThenTheAdditionBitForBit) {
  Generator gen(9);
  const Device cpu = Device::Cpu();
  std::vector<Tensor> p = {randn_leaf({3, 5, 16}, cpu, 10),
                           (Tensor::Randn({40, 16}, {}, &gen) * 0.5f).SetRequiresGrad(true),
                           randn_leaf({40}, cpu, 11),
                           (Tensor::Randn({16, 40}, {}, &gen) * 0.2f).SetRequiresGrad(true),
                           randn_leaf({16}, cpu, 12), randn_leaf({3, 5, 16}, cpu, 13)};
  for (DataType dtype : {DataType::F32, DataType::BF16}) {
    SCOPED_TRACE(to_string(dtype));
    const ValueAndGrads got = value_and_grads(
        [&] {
          const std::vector<Tensor> c = cast_all(p, dtype);
          return mlp(c[0], c[1], c[2], c[3], c[4], c[5]);
        },
        p);
    const ValueAndGrads want = value_and_grads(
        [&] {
          const std::vector<Tensor> c = cast_all(p, dtype);
          return mlp(c[0], c[1], c[2], c[3], c[4]) + c[5];
        },
        p);
    EXPECT_EQ(floats(got.value), floats(want.value));
    for (size_t i = 0; i < p.size(); ++i) {
      EXPECT_EQ(floats(got.grads[i]), floats(want.grads[i])) << "gradient of input " << i;
    }
  }
}

class LinearResidualTest : public testing::DeviceTest {};

// In FP32 the sum against the two ops, within FP32 roundings. In BF16 and F16, on CUDA,
// against the FP32 sum of the same rounded values: the GEMM adds the residual before the
// output's one rounding, so every element is within the unit roundoff of that sum (2^-8
// and 2^-11 relative, plus 2e-5 for the two FP32 sums' own errors). The two ops, which
// round the Linear's output first, can be further off; the CPU computes them
// (LinearResidualCpuTest).
TEST_P(LinearResidualTest, IsTheSumRoundedOnce) {
  const std::vector<Tensor> p = linear_leaves(device(), 2);
  expect_close(linear(p[0], p[1], p[2], p[3]), linear(p[0], p[1], p[2]) + p[3], 1e-5f, 1e-5f);
  if (device().is_cpu()) return;
  for (DataType dtype : {DataType::BF16, DataType::F16}) {
    SCOPED_TRACE(to_string(dtype));
    const std::vector<Tensor> c = cast_all(p, dtype);
    std::vector<Tensor> exact_in;
    for (const Tensor& t : c) {
      exact_in.push_back(to_dtype(t.Detach(), DataType::F32).To(Device::Cpu()));
    }
    const std::vector<float> got = floats(linear(c[0], c[1], c[2], c[3]));
    const std::vector<float> exact =
        floats(linear(exact_in[0], exact_in[1], exact_in[2], exact_in[3]));
    const double u = dtype == DataType::BF16 ? 0x1p-8 : 0x1p-11;
    ASSERT_EQ(got.size(), exact.size());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_LE(std::fabs(got[i] - exact[i]), u * std::fabs(exact[i]) + 2e-5)
          << "element " << i << ": " << got[i] << " against " << exact[i];
    }
  }
}

TEST_P(LinearResidualTest, TheResidualsGradientIsTheOutputs) {
  const std::vector<Tensor> p = linear_leaves(device(), 3);
  Tensor r = p[3];
  Generator gen(5);
  const Tensor weights = Tensor::Randn({4, 16, 128}, {}, &gen).To(device());
  sum(linear(p[0], p[1], Tensor(), r) * weights).Backward();
  EXPECT_EQ(r.Grad().ToVector<float>(), weights.ToVector<float>());
  EXPECT_FALSE(p[2].Grad().defined());
}

TEST_P(LinearResidualTest, GradientsAgainstFiniteDifferences) {
  Tensor x = randn_leaf({3, 2, 4}, device(), 4);
  Tensor w = randn_leaf({3, 4}, device(), 5);
  Tensor b = randn_leaf({3}, device(), 6);
  Tensor r = randn_leaf({3, 2, 3}, device(), 7);
  check_gradients([](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2], in[3]); },
                  {x, w, b, r});
  check_gradients(
      [](const std::vector<Tensor>& in) { return linear(in[0], in[1], Tensor(), in[2]); },
      {x, w, r});
}

TEST_P(LinearResidualTest, BadResidualsAreErrors) {
  const Tensor x = Tensor::Zeros({2, 5}).To(device()), w = Tensor::Zeros({4, 5}).To(device());
  expect_error_mentions([&] { linear(x, w, Tensor(), Tensor::Zeros({2, 5}).To(device())); },
                        {"linear", "residual", "[2, 4]", "[2, 5]"});
  expect_error_mentions(
      [&] { linear(x, w, Tensor(), to_dtype(Tensor::Zeros({2, 4}), DataType::BF16).To(device())); },
      {"linear", "residual", "f32", "bf16"});
  const Tensor out = Tensor::Zeros({2, 4}).To(device());
  expect_error_mentions([&] { ops::linear_forward(x, w, Tensor(), out, out); },
                        {"linear", "residual", "overlap"});
}

ZERO_INSTANTIATE_DEVICE_TEST(LinearResidualTest);

}  // namespace
}  // namespace zero
