// Tests of matmul and the fused Linear in BF16 and F16 (kernels/matmul.cpp, linear.cpp;
// cuBLAS and cuBLASLt on CUDA): batched, broadcast and transposed products, 16-bit and
// F32 outputs, accumulation, the bias epilogue and the parameter gradients, each against
// the FP32 CPU kernel on the same rounded inputs (Note [Testing a 16-bit kernel against
// FP32] in half_support.h); FP32 accumulation over a long K; and the dtype checks.
#include <string>
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

class MatmulHalfTest : public testing::DeviceTest {};


// The F32 CPU product of F32 tensors (the reference), added to `acc` when given.
Tensor reference_matmul(const Tensor& a, const Tensor& b, const Tensor& acc = Tensor()) {
  Tensor out = acc.defined() ? acc.Contiguous().Clone()
                             : Tensor::Empty(ops::matmul_shape(a.sizes(), b.sizes()));
  ops::matmul(a, b, out, acc.defined());
  return out;
}

TEST_P(MatmulHalfTest, BatchedBroadcastAndTransposedProducts) {
  for (DataType dtype : kHalfTypes) {
    SCOPED_TRACE(to_string(dtype));
    const Tensor a = rounded_randn({3, 40, 72}, dtype, 11);
    const Tensor b = rounded_randn({72, 56}, dtype, 12);
    const Tensor bt = rounded_randn({56, 72}, dtype, 13);  // read through a transposed view
    const Tensor want = reference_matmul(a, b), want_t = reference_matmul(a, bt.Transpose(0, 1));
    const Tensor ah = as(a, dtype, device()), bh = as(b, dtype, device());
    for (DataType out_dtype : {dtype, DataType::F32}) {
      SCOPED_TRACE(std::string("into ") + to_string(out_dtype));
      const Tensor out = empty({3, 40, 56}, out_dtype, device());
      ops::matmul(ah, bh, out);
      expect_rounded_from(out, want);
      const Tensor out_t = empty({3, 40, 56}, out_dtype, device());
      ops::matmul(ah, as(bt, dtype, device()).Transpose(0, 1), out_t);
      expect_rounded_from(out_t, want_t);
    }
    // out += a @ b: the old 16-bit value, plus the product, rounded once.
    const Tensor start = rounded_randn({3, 40, 56}, dtype, 14);
    const Tensor acc = as(start, dtype, device());
    ops::matmul(ah, bh, acc, /*accumulate=*/true);
    expect_rounded_from(acc, reference_matmul(a, b, start));
  }
}

TEST_P(MatmulHalfTest, AccumulatesInFp32) {
  // Dot products of 4096 pairs (1, 1 + 2^-6): 4160 exactly, a value both formats hold.
  // A 16-bit running sum would stall at 256 (BF16) or 2048 (F16).
  const Tensor a = Tensor::Ones({2, 4096});
  const Tensor b = Tensor::Full({4096, 3}, 1.0f + 0x1p-6f);
  for (DataType dtype : kHalfTypes) {
    SCOPED_TRACE(to_string(dtype));
    const Tensor out = empty({2, 3}, dtype, device());
    ops::matmul(as(a, dtype, device()), as(b, dtype, device()), out);
    EXPECT_EQ(cpu_f32(out).ToVector<float>(), std::vector<float>(6, 4160.0f));
  }
}

TEST_P(MatmulHalfTest, LinearForwardAddsTheBiasBeforeRounding) {
  for (DataType dtype : kHalfTypes) {
    SCOPED_TRACE(to_string(dtype));
    const Tensor x = rounded_randn({33, 72}, dtype, 21);
    const Tensor w = rounded_randn({40, 72}, dtype, 22, 0.2f);
    const Tensor b = rounded_randn({40}, dtype, 23);
    for (bool with_bias : {true, false}) {
      SCOPED_TRACE(with_bias ? "with bias" : "without bias");
      const Tensor want = Tensor::Empty({33, 40});
      ops::linear_forward(x, w, with_bias ? b : Tensor(), want);
      const Tensor out = empty({33, 40}, dtype, device());
      ops::linear_forward(as(x, dtype, device()), as(w, dtype, device()),
                          with_bias ? as(b, dtype, device()) : Tensor(), out);
      expect_rounded_from(out, want);
    }
  }
}

TEST_P(MatmulHalfTest, LinearParameterGradientsInEitherDtype) {
  for (DataType dtype : kHalfTypes) {
    const Tensor g = rounded_randn({33, 40}, dtype, 31);
    const Tensor x = rounded_randn({33, 72}, dtype, 32);
    const Tensor want_w = Tensor::Empty({40, 72}), want_b = Tensor::Empty({40});
    ops::linear_backward_params(g, x, want_w, want_b);
    const Tensor gh = as(g, dtype, device()), xh = as(x, dtype, device());
    // Both in the operands' dtype, both FP32, and one of each (the bias a column sum of
    // its own then).
    const std::vector<std::pair<DataType, DataType>> cases = {
        {dtype, dtype}, {DataType::F32, DataType::F32}, {DataType::F32, dtype}};
    for (const auto& [w_dtype, b_dtype] : cases) {
      SCOPED_TRACE(std::string(to_string(dtype)) + ": grad_weight " + to_string(w_dtype) +
                   ", grad_bias " + to_string(b_dtype));
      const Tensor gw = empty({40, 72}, w_dtype, device()), gb = empty({40}, b_dtype, device());
      ops::linear_backward_params(gh, xh, gw, gb);
      expect_rounded_from(gw, want_w);
      expect_rounded_from(gb, want_b);
      const Tensor gb_only = empty({40}, b_dtype, device());
      ops::linear_backward_params(gh, xh, Tensor(), gb_only);
      expect_rounded_from(gb_only, want_b);
    }
  }
}

TEST_P(MatmulHalfTest, ChecksNameTheDtypes) {
  const Tensor a = empty({2, 3}, DataType::BF16, device());
  const Tensor b32 = empty({3, 4}, DataType::F32, device());
  const std::string mixed =
      error_message([&] { ops::matmul(a, b32, empty({2, 4}, DataType::BF16, device())); });
  EXPECT_TRUE(contains(mixed, "every operand of dtype bf16, got one of dtype f32")) << mixed;
  const std::string out16 = error_message([&] {
    ops::matmul(a, empty({3, 4}, DataType::BF16, device()), empty({2, 4}, DataType::F16, device()));
  });
  EXPECT_TRUE(contains(out16, "output of dtype bf16 or f32, got f16")) << out16;
  const Tensor i = empty({2, 2}, DataType::I32, device());
  const std::string ints = error_message([&] { ops::matmul(i, i, i); });
  EXPECT_TRUE(contains(ints, "f32, bf16 or f16, got i32")) << ints;
  const std::string bias32 = error_message([&] {
    ops::linear_forward(a, empty({4, 3}, DataType::BF16, device()),
                        empty({4}, DataType::F32, device()), empty({2, 4}, DataType::BF16, device()));
  });
  EXPECT_TRUE(contains(bias32, "bias of dtype bf16, got f32")) << bias32;
  const std::string grad16 = error_message([&] {
    ops::linear_backward_params(empty({2, 4}, DataType::BF16, device()), a,
                                empty({4, 3}, DataType::F16, device()), Tensor());
  });
  EXPECT_TRUE(contains(grad16, "grad_weight of dtype bf16 or f32, got f16")) << grad16;
}

ZERO_INSTANTIATE_DEVICE_TEST(MatmulHalfTest);

}  // namespace
}  // namespace zero
