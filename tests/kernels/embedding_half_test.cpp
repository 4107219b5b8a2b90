// Tests of the embedding lookup in BF16 and F16 (kernels/embedding.cpp): the forward
// gathers 16-bit rows bit for bit; the backward sums 16-bit gradient rows in FP32 and
// rounds once into a 16-bit or an F32 grad_weight, against the FP32 kernel on the same
// rounded inputs (Note [Testing a 16-bit kernel against FP32] in half_support.h), and
// adds into what grad_weight holds when asked to.
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

class EmbeddingHalfTest : public testing::DeviceTest {};

constexpr int64_t kVocab = 50, kWidth = 24;

// [2, 600] ids: the first row walks the table, the second names row 3 every time, so
// row 3 sums over 600 gradients.
Tensor test_ids() {
  std::vector<int32_t> ids(1200);
  for (int i = 0; i < 1200; ++i) ids[i] = i < 600 ? (7 * i) % kVocab : 3;
  return Tensor::FromI32(ids, {2, 600});
}

TEST_P(EmbeddingHalfTest, ForwardGathersRowsExactly) {
  const Tensor ids = test_ids();
  const std::vector<int32_t> idv = ids.ToVector<int32_t>();
  for (DataType dtype : kHalfTypes) {
    SCOPED_TRACE(to_string(dtype));
    const Tensor w = rounded_randn({kVocab, kWidth}, dtype, 5);
    const Tensor out = empty({2, 600, kWidth}, dtype, device());
    ops::embedding_forward(as(w, dtype, device()), ids.To(device()), out);
    const std::vector<float> got = cpu_f32(out).ToVector<float>(), table = w.ToVector<float>();
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i], table[idv[i / kWidth] * kWidth + i % kWidth]) << "element " << i;
    }
  }
}

TEST_P(EmbeddingHalfTest, BackwardSumsInFp32) {
  const Tensor ids = test_ids();
  for (DataType dtype : kHalfTypes) {
    // Gradients near 1 + 2^-6: 600 of them sum to about 609 in row 3, where a 16-bit
    // running sum would stall (BF16's ulp is 2 from 256 on, F16's from 2048).
    Tensor g = rounded_randn({2, 600, kWidth}, dtype, 6, 0.01f);
    ops::binary_scalar(ops::BinaryOp::kAdd, g, 1.0f + 0x1p-6f, g);
    g = cpu_f32(as(g, dtype));
    const Tensor want = Tensor::Empty({kVocab, kWidth});
    ops::embedding_backward(g, ids, want);
    for (DataType grad_dtype : {dtype, DataType::F32}) {
      SCOPED_TRACE(std::string(to_string(dtype)) + " into " + to_string(grad_dtype));
      const Tensor gw = empty({kVocab, kWidth}, grad_dtype, device());
      ops::embedding_backward(as(g, dtype, device()), ids.To(device()), gw);
      expect_rounded_from(gw, want);
      EXPECT_GT(cpu_f32(gw).ToVector<float>()[3 * kWidth], 600.0f);
    }
  }
}

// With `accumulate` the sums are added to what grad_weight holds (a tied table's
// gradient from the output head), rounded once; rows no id names keep their values.
TEST_P(EmbeddingHalfTest, BackwardAccumulatesIntoWhatTheTableHolds) {
  std::vector<int32_t> idv(300);
  for (int i = 0; i < 300; ++i) idv[i] = (7 * i) % (kVocab - 10);  // rows 40..49 unnamed
  const Tensor ids = Tensor::FromI32(idv, {300});
  for (DataType dtype : kHalfTypes) {
    const Tensor g = rounded_randn({300, kWidth}, dtype, 7);
    const Tensor sums = Tensor::Empty({kVocab, kWidth});
    ops::embedding_backward(g, ids, sums);
    for (DataType grad_dtype : {dtype, DataType::F32}) {
      SCOPED_TRACE(std::string(to_string(dtype)) + " into " + to_string(grad_dtype));
      const Tensor base = rounded_randn({kVocab, kWidth}, grad_dtype, 8, 4.0f);
      const Tensor want = base.Clone();
      ops::binary(ops::BinaryOp::kAdd, base, sums, want);
      const Tensor gw = as(base, grad_dtype, device());
      ops::embedding_backward(as(g, dtype, device()), ids.To(device()), gw, /*accumulate=*/true);
      expect_rounded_from(gw, want);
      const std::vector<float> got = cpu_f32(gw).ToVector<float>(), b = base.ToVector<float>();
      for (int64_t i = 40 * kWidth; i < kVocab * kWidth; ++i) ASSERT_EQ(got[i], b[i]) << i;
    }
  }
}

TEST_P(EmbeddingHalfTest, ChecksNameTheDtypes) {
  const Tensor ids = Tensor::FromI32({0, 1}, {2}).To(device());
  const Tensor w = empty({4, 8}, DataType::BF16, device());
  const std::string out32 = error_message(
      [&] { ops::embedding_forward(w, ids, empty({2, 8}, DataType::F32, device())); });
  EXPECT_TRUE(contains(out32, "output of dtype bf16, got f32")) << out32;
  const std::string grad16 = error_message([&] {
    ops::embedding_backward(empty({2, 8}, DataType::BF16, device()), ids,
                            empty({4, 8}, DataType::F16, device()));
  });
  EXPECT_TRUE(contains(grad16, "grad_weight of dtype bf16 or f32, got f16")) << grad16;
  const std::string ints = error_message([&] {
    ops::embedding_forward(empty({4, 8}, DataType::I32, device()), ids,
                           empty({2, 8}, DataType::I32, device()));
  });
  EXPECT_TRUE(contains(ints, "weight of dtype f32, bf16 or f16, got i32")) << ints;
}

ZERO_INSTANTIATE_DEVICE_TEST(EmbeddingHalfTest);

}  // namespace
}  // namespace zero
