// Tests of the cross-entropy kernels on BF16 and F16 logits (kernels/cross_entropy.cpp
// and the chunked pieces of kernels/linear_cross_entropy.cpp): FP32 log-sum-exp and
// loss, and gradients rounded once into the logits' dtype (also transposed), against
// the FP32 kernels on the same rounded logits (Note [Testing a 16-bit kernel against
// FP32] in half_support.h); the chunk's forward that also makes the gradient; a
// GPT-2-wide row whose sum only FP32 gets right; the checks.
#include <cmath>
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

class CrossEntropyHalfTest : public testing::DeviceTest {};

constexpr int kIgnore = -100;
constexpr int64_t kRows = 37;
// Vocabularies: 193 values a row (a character vocabulary) take the CUDA kernels' warp a
// row (Note [Short rows a warp each] in cuda/linear_ce.cu), 300 their element-wise path
// in BF16 and F16, 304 (a multiple of 8) their 16-byte path.
constexpr int64_t kVocabs[] = {193, 300, 304};

// Targets spread over the vocabulary, every fifth row ignored.
Tensor test_targets(int64_t vocab, int64_t rows = kRows) {
  std::vector<int32_t> t(rows);
  for (int i = 0; i < rows; ++i) {
    t[i] = i % 5 == 4 ? kIgnore : static_cast<int32_t>((53 * i + 7) % vocab);
  }
  // The first and the last value of a row: the kernels' first and last 16-byte packs.
  if (rows > 2) t[0] = 0, t[1] = static_cast<int32_t>(vocab - 1);
  return Tensor::FromI32(t, {rows});
}

TEST_P(CrossEntropyHalfTest, LossInFp32AndGradientsInTheLogitsDtype) {
  for (int64_t vocab : kVocabs) {
    SCOPED_TRACE("vocabulary " + std::to_string(vocab));
    const Tensor targets = test_targets(vocab);
    const Tensor grad_loss = Tensor::Scalar(1.5f);
    for (DataType dtype : kHalfTypes) {
      SCOPED_TRACE(to_string(dtype));
      const Tensor logits = rounded_randn({kRows, vocab}, dtype, 41, 3.0f);
      const Tensor want_loss = Tensor::Empty({}), want_lse = Tensor::Empty({kRows});
      const Tensor want_grad = Tensor::Empty({kRows, vocab});
      ops::cross_entropy_forward(logits, targets, kIgnore, want_loss, want_lse);
      ops::cross_entropy_backward(logits, targets, want_lse, grad_loss, kIgnore, want_grad);

      const Tensor lh = as(logits, dtype, device()), th = targets.To(device());
      const Tensor loss = empty({}, DataType::F32, device());
      const Tensor lse = empty({kRows}, DataType::F32, device());
      ops::cross_entropy_forward(lh, th, kIgnore, loss, lse);
      expect_rounded_from(lse, want_lse);  // F32: far tighter than a 16-bit lse could be
      expect_rounded_from(loss, want_loss);
      const Tensor grad = empty({kRows, vocab}, dtype, device());
      ops::cross_entropy_backward(lh, th, lse, grad_loss.To(device()), kIgnore, grad);
      expect_rounded_from(grad, want_grad);
    }
  }
}

TEST_P(CrossEntropyHalfTest, ChunksMatchTheFp32Chunks) {
  for (int64_t vocab : kVocabs) {
    SCOPED_TRACE("vocabulary " + std::to_string(vocab));
    const Tensor targets = test_targets(vocab);
    const Tensor grad_loss = Tensor::Scalar(0.75f);
    for (DataType dtype : kHalfTypes) {
      SCOPED_TRACE(to_string(dtype));
      const Tensor logits = rounded_randn({kRows, vocab}, dtype, 42, 3.0f);
      // The FP32 reference, in two chunks of rows as the fused loss runs them.
      const Tensor count = Tensor::Empty({});
      ops::cross_entropy_count(targets, kIgnore, vocab, count);
      const Tensor want_loss = Tensor::Zeros({}), want_lse = Tensor::Empty({kRows});
      const Tensor want_grad = logits.Clone(), want_t = Tensor::Empty({vocab, kRows});
      for (auto [r0, r1] : {std::pair<int64_t, int64_t>{0, 20}, {20, kRows}}) {
        const Tensor chunk = want_grad.Slice(0, r0, r1), t = targets.Slice(0, r0, r1);
        ops::cross_entropy_chunk_forward(chunk, t, kIgnore, count, want_lse.Slice(0, r0, r1),
                                         want_loss);
      }
      ops::cross_entropy_chunk_backward(want_grad, targets, want_lse, grad_loss, count, kIgnore,
                                        want_t);

      const Tensor th = targets.To(device()), ch = empty({}, DataType::F32, device());
      ops::cross_entropy_count(th, kIgnore, vocab, ch);
      EXPECT_EQ(ch.Item(), count.Item());
      const Tensor grad = as(logits, dtype, device());
      const Tensor loss = Tensor::Zeros({}, TensorOption().OnDevice(device()));
      const Tensor lse = empty({kRows}, DataType::F32, device());
      for (auto [r0, r1] : {std::pair<int64_t, int64_t>{0, 20}, {20, kRows}}) {
        ops::cross_entropy_chunk_forward(grad.Slice(0, r0, r1), th.Slice(0, r0, r1), kIgnore, ch,
                                         lse.Slice(0, r0, r1), loss);
      }
      expect_rounded_from(lse, want_lse);
      expect_rounded_from(loss, want_loss);
      const Tensor transposed = empty({vocab, kRows}, dtype, device());
      ops::cross_entropy_chunk_backward(grad, th, lse, grad_loss.To(device()), ch, kIgnore,
                                        transposed);
      expect_rounded_from(grad, want_grad);
      expect_rounded_from(transposed, want_t);
      // And without the transposed copy (another kernel on CUDA).
      const Tensor grad2 = as(logits, dtype, device());
      ops::cross_entropy_chunk_backward(grad2, th, lse, grad_loss.To(device()), ch, kIgnore);
      expect_rounded_from(grad2, want_grad);
    }
  }
}

// The chunk's forward given grad_loss also makes the gradient in place: one kernel
// reading each row once on CUDA where the row fits in shared memory (8200 and 60000
// values in BF16 and F16, 8200 in F32), a warp a row for up to 256 values (193 and 256),
// the two kernels otherwise (304 values, and 60000 in F32: 240 KB); 400 rows as well as
// 37, more rows than an H100 or H200 has SMs. Against the FP32 forward and backward run
// one after the other.
TEST_P(CrossEntropyHalfTest, ChunkForwardMakesTheGradientAsTheBackwardDoes) {
  struct Case {
    int64_t rows, vocab;
  };
  const Case cases[] = {{kRows, 193}, {400, 256}, {kRows, 304},
                        {kRows, 8200}, {400, 8200}, {kRows, 60000}};
  for (const Case& c : cases) {
    const int64_t rows = c.rows, vocab = c.vocab;
    SCOPED_TRACE(std::to_string(rows) + " rows, vocabulary " + std::to_string(vocab));
    const Tensor targets = test_targets(vocab, rows), grad_loss = Tensor::Scalar(0.75f);
    for (DataType dtype : {DataType::F32, DataType::BF16, DataType::F16}) {
      SCOPED_TRACE(to_string(dtype));
      const Tensor logits = rounded_randn({rows, vocab}, dtype, 43, 3.0f);
      const Tensor count = Tensor::Empty({});
      ops::cross_entropy_count(targets, kIgnore, vocab, count);
      const Tensor want_loss = Tensor::Zeros({}), want_lse = Tensor::Empty({rows});
      const Tensor want_grad = logits.Clone();
      ops::cross_entropy_chunk_forward(want_grad, targets, kIgnore, count, want_lse, want_loss);
      ops::cross_entropy_chunk_backward(want_grad, targets, want_lse, grad_loss, count, kIgnore);

      const Tensor th = targets.To(device()), grad = as(logits, dtype, device());
      const Tensor loss = Tensor::Zeros({}, TensorOption().OnDevice(device()));
      const Tensor lse = empty({rows}, DataType::F32, device());
      ops::cross_entropy_chunk_forward(grad, th, kIgnore, count.To(device()), lse, loss,
                                       grad_loss.To(device()));
      expect_rounded_from(lse, want_lse);
      expect_rounded_from(loss, want_loss);
      expect_rounded_from(grad, want_grad);
    }
  }
}

// The fused loss pads a vocabulary that is not a multiple of 8 (Note [A padded head] in
// autograd/ops/fused_ops.cpp): the chunk's logits are then a view whose rows are `width`
// values apart. The kernels give it what they give the same logits stored contiguously,
// and leave the pad columns as they were.
TEST_P(CrossEntropyHalfTest, ChunkRowsAFewValuesApart) {
  constexpr int64_t kVocab = 193, kWidth = 200;
  const Tensor targets = test_targets(kVocab), grad_loss = Tensor::Scalar(0.75f);
  const Tensor th = targets.To(device()), gh = grad_loss.To(device());
  for (DataType dtype : {DataType::F32, DataType::BF16}) {
    SCOPED_TRACE(to_string(dtype));
    const Tensor padded = rounded_randn({kRows, kWidth}, dtype, 44, 3.0f);
    const Tensor count = empty({}, DataType::F32, device());
    ops::cross_entropy_count(th, kIgnore, kVocab, count);
    // The forward making the gradient, then the backward with its transposed copy.
    for (bool at_once : {true, false}) {
      SCOPED_TRACE(at_once ? "forward with the gradient" : "backward with the copy");
      const Tensor want = as(padded.Slice(1, 0, kVocab).Contiguous(), dtype, device());
      const Tensor got_buffer = as(padded, dtype, device());
      const Tensor got = got_buffer.Slice(1, 0, kVocab);  // (rows, V), rows kWidth apart
      const Tensor want_t = empty({kVocab, kRows}, dtype, device());
      const Tensor got_t = empty({kVocab, kRows}, dtype, device());
      std::vector<float> stats[2];  // lse of every row, then the loss
      int k = 0;
      for (const auto& [logits, transposed] : {std::pair{want, want_t}, {got, got_t}}) {
        const Tensor loss = Tensor::Zeros({}, TensorOption().OnDevice(device()));
        const Tensor lse = empty({kRows}, DataType::F32, device());
        ops::cross_entropy_chunk_forward(logits, th, kIgnore, count, lse, loss,
                                         at_once ? gh : Tensor());
        if (!at_once) {
          ops::cross_entropy_chunk_backward(logits, th, lse, gh, count, kIgnore, transposed);
        }
        stats[k] = cpu_f32(lse).ToVector<float>();
        stats[k++].push_back(loss.Item());
      }
      EXPECT_EQ(stats[1], stats[0]);
      EXPECT_GT(stats[0].back(), 0.5f);  // a real loss, not a default
      EXPECT_EQ(cpu_f32(got).ToVector<float>(), cpu_f32(want).ToVector<float>());
      if (!at_once) {
        EXPECT_EQ(cpu_f32(got_t).ToVector<float>(), cpu_f32(want_t).ToVector<float>());
      }
      EXPECT_EQ(cpu_f32(got_buffer.Slice(1, kVocab, kWidth)).ToVector<float>(),
                cpu_f32(padded.Slice(1, kVocab, kWidth)).ToVector<float>());
    }
  }
  // A view whose rows are not of unit stride is refused.
  const Tensor lse = empty({4}, DataType::F32, device()), loss = empty({}, DataType::F32, device());
  const std::string strided = error_message([&] {
    ops::cross_entropy_chunk_forward(empty({3, 4}, DataType::F32, device()).Transpose(0, 1),
                                     th.Slice(0, 0, 4), kIgnore, loss, lse, loss);
  });
  EXPECT_TRUE(contains(strided, "rows have unit stride")) << strided;
}

TEST_P(CrossEntropyHalfTest, WideRowSumsInFp32) {
  // One GPT-2-wide row of zeros: lse = log(50304). Summed in 16 bits, exp(0) = 1 would
  // stop adding at 256 (BF16) or 2048 (F16), giving log(256) or log(2048).
  constexpr int64_t kWide = 50304;
  for (DataType dtype : kHalfTypes) {
    SCOPED_TRACE(to_string(dtype));
    const Tensor logits = empty({1, kWide}, dtype, device());
    ops::fill(logits, 0.0f);
    const Tensor targets = Tensor::FromI32({5}, {1}).To(device());
    const Tensor loss = empty({}, DataType::F32, device()), lse = empty({1}, DataType::F32, device());
    ops::cross_entropy_forward(logits, targets, kIgnore, loss, lse);
    EXPECT_NEAR(lse.Item(), std::log(static_cast<double>(kWide)), 1e-5);
    EXPECT_NEAR(loss.Item(), std::log(static_cast<double>(kWide)), 1e-5);
  }
}

TEST_P(CrossEntropyHalfTest, ChecksNameTheDtypes) {
  const Tensor logits = empty({2, 3}, DataType::BF16, device());
  const Tensor targets = Tensor::FromI32({0, 1}, {2}).To(device());
  const Tensor loss = empty({}, DataType::F32, device()), lse = empty({2}, DataType::F32, device());
  const std::string lse16 = error_message([&] {
    ops::cross_entropy_forward(logits, targets, kIgnore, loss, empty({2}, DataType::BF16, device()));
  });
  EXPECT_TRUE(contains(lse16, "lse of dtype f32, got bf16")) << lse16;
  const std::string grad32 = error_message([&] {
    ops::cross_entropy_backward(logits, targets, lse, loss, kIgnore,
                                empty({2, 3}, DataType::F32, device()));
  });
  EXPECT_TRUE(contains(grad32, "grad_logits of dtype bf16, got f32")) << grad32;
  const std::string ints = error_message([&] {
    ops::cross_entropy_forward(empty({2, 3}, DataType::I32, device()), targets, kIgnore, loss, lse);
  });
  EXPECT_TRUE(contains(ints, "logits of dtype f32, bf16 or f16, got i32")) << ints;
  const std::string t32 = error_message([&] {
    ops::cross_entropy_chunk_backward(logits, targets, lse, loss, loss, kIgnore,
                                      empty({3, 2}, DataType::F32, device()));
  });
  EXPECT_TRUE(contains(t32, "transposed of dtype bf16, got f32")) << t32;
}

ZERO_INSTANTIATE_DEVICE_TEST(CrossEntropyHalfTest);

}  // namespace
}  // namespace zero
