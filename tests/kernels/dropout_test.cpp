// Tests of the dropout kernels (kernels/dropout.cpp) on each device: every element
// against the Philox formula at offsets of every residue mod 4, lengths that end
// inside a Philox block or a thread's 16-byte pack, and views whose data is not aligned
// for grouped loads (the CUDA kernel's two paths, Note [Philox blocks a thread]); the
// residual added in the same pass with the bits of the two ops, aligned or not; the
// checks on the residual.
#include <cstdint>
#include <string>
#include <vector>

#include "tests/kernels/half_support.h"
#include "tests/support/test_support.h"
#include "zero/core/philox.h"
#include "zero/kernels/tensor_ops.h"

namespace zero {
namespace {

using testing::as;
using testing::cpu_f32;
using testing::empty;
using testing::expect_error_mentions;
using testing::rounded_randn;

constexpr float kP = 0.3f;
constexpr uint64_t kSeed = 77;

class DropoutTest : public testing::DeviceTest {};

// What element i of dropout(x) must be: x[i] / (1 - p) rounded once to the dtype, or 0.
std::vector<float> formula(const Tensor& x_f32, DataType dtype, uint64_t offset) {
  const std::vector<float> x = x_f32.ToVector<float>();
  std::vector<float> want(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    want[i] = philox_uniform(kSeed, offset + i) >= kP ? x[i] * (1.0f / (1.0f - kP)) : 0.0f;
  }
  return cpu_f32(as(Tensor::From(want, {static_cast<int64_t>(want.size())}), dtype))
      .ToVector<float>();
}

TEST_P(DropoutTest, EveryElementIsThePhiloxFormula) {
  for (DataType dtype : {DataType::F32, DataType::BF16, DataType::F16}) {
    for (int64_t n : {1, 3, 4, 5, 8, 1023, 4099}) {
      for (uint64_t offset : {0, 1, 2, 3, 4, 6, 1001}) {
        SCOPED_TRACE(std::string(to_string(dtype)) + " n " + std::to_string(n) + " offset " +
                     std::to_string(offset));
        const Tensor x = rounded_randn({n}, dtype, 5 + n);  // F32 values exact in dtype
        const Tensor y = empty({n}, dtype, device()), g = empty({n}, dtype, device());
        ops::dropout_forward(as(x, dtype, device()), kP, kSeed, offset, y);
        ops::dropout_backward(as(x, dtype, device()), kP, kSeed, offset, g);
        const std::vector<float> want = formula(x, dtype, offset);
        ASSERT_EQ(cpu_f32(y).ToVector<float>(), want);
        ASSERT_EQ(cpu_f32(g).ToVector<float>(), want);
      }
    }
  }
}

TEST_P(DropoutTest, MisalignedViewsGiveTheSameElements) {
  // Views starting one element into their buffers: the grouped loads would be misaligned.
  for (DataType dtype : {DataType::F32, DataType::BF16}) {
    SCOPED_TRACE(to_string(dtype));
    const Tensor x = rounded_randn({1001}, dtype, 8);
    const Tensor x_buf = as(x, dtype, device()), y_buf = empty({1001}, dtype, device());
    const Tensor y = y_buf.Slice(0, 1, 1001);
    ops::dropout_forward(x_buf.Slice(0, 1, 1001), kP, kSeed, 8, y);
    EXPECT_EQ(cpu_f32(y).ToVector<float>(), formula(x.Slice(0, 1, 1001), dtype, 8));
  }
}

TEST_P(DropoutTest, ResidualAddedWithTheBitsOfTheTwoOps) {
  for (DataType dtype : {DataType::F32, DataType::BF16, DataType::F16}) {
    for (uint64_t offset : {0, 3}) {
      SCOPED_TRACE(std::string(to_string(dtype)) + " offset " + std::to_string(offset));
      const Tensor x = as(rounded_randn({9, 455}, dtype, 11), dtype, device());
      const Tensor r = as(rounded_randn({9, 455}, dtype, 12), dtype, device());
      const Tensor d = empty({9, 455}, dtype, device()), y = empty({9, 455}, dtype, device());
      ops::dropout_forward(x, kP, kSeed, offset, d);
      ops::dropout_forward(x, kP, kSeed, offset, y, r);
      const Tensor two_ops = r + d;  // (9, 455)
      EXPECT_EQ(cpu_f32(y).ToVector<float>(), cpu_f32(two_ops).ToVector<float>());
      // Not merely the residual: about a third of the elements add nothing.
      EXPECT_NE(cpu_f32(y).ToVector<float>(), cpu_f32(r).ToVector<float>());
    }
  }
}

TEST_P(DropoutTest, MisalignedResidualGivesTheSameSum) {
  // x and the output aligned, the residual a view one element into its buffer: the
  // CUDA kernel must not read it in 16-byte packs.
  for (DataType dtype : {DataType::F32, DataType::BF16}) {
    SCOPED_TRACE(to_string(dtype));
    const Tensor x = as(rounded_randn({1000}, dtype, 13), dtype, device());
    const Tensor r_buf = as(rounded_randn({1001}, dtype, 14), dtype, device());
    const Tensor r = r_buf.Slice(0, 1, 1001);
    const Tensor d = empty({1000}, dtype, device()), y = empty({1000}, dtype, device());
    ops::dropout_forward(x, kP, kSeed, 8, d);
    ops::dropout_forward(x, kP, kSeed, 8, y, r);
    const Tensor two_ops = r + d;  // (1000)
    EXPECT_EQ(cpu_f32(y).ToVector<float>(), cpu_f32(two_ops).ToVector<float>());
  }
}

TEST_P(DropoutTest, ResidualMustMatchShapeAndDtype) {
  const Tensor x = empty({4, 3}, DataType::F32, device());
  const Tensor y = empty({4, 3}, DataType::F32, device());
  expect_error_mentions(
      [&] { ops::dropout_forward(x, kP, 1, 0, y, empty({3, 4}, DataType::F32, device())); },
      {"residual"});
  expect_error_mentions(
      [&] { ops::dropout_forward(x, kP, 1, 0, y, empty({4, 3}, DataType::BF16, device())); },
      {"residual", "bf16"});
}

ZERO_INSTANTIATE_DEVICE_TEST(DropoutTest);

}  // namespace
}  // namespace zero
