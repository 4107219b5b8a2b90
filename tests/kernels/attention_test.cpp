// Tests of the attention kernels called directly (kernels/attention.cpp): the saved
// per-row logsumexp and the output against a naive double-precision loop (the
// autograd tests in tests/autograd/fused_ops_test.cpp only see the output), strided
// operands (views of a packed qkv, outputs inside wider buffers) against contiguous
// ones, and the argument checks of the dispatch.
#include <cmath>
#include <string>
#include <vector>

#include "tests/support/test_support.h"
#include "zero/kernels/attention_dropout.h"
#include "zero/kernels/precision.h"
#include "zero/kernels/tensor_ops.h"

namespace zero {
namespace {

using testing::expect_close;
using testing::expect_error_mentions;

class AttentionTest : public testing::DeviceTest {};

// The CUDA kernels draw a 2 x 2 square of dropout factors from one Philox block. Each
// factor must be the documented stream word's (attention_dropout.h), written here as a
// word index: the offset rounded up to 4 words, then 4 words per square, the squares of
// a slice row by row; the kept flags of square_bits likewise. Odd Tq and Tk give the last
// square of a row or column two unused words. The call's stream must cover every word it
// draws.
TEST(AttentionDropoutTest, FactorsAreTheDocumentedStreamWords) {
  constexpr uint64_t kSeed = 1234;
  constexpr int64_t kSlices = 2, kTq = 5, kTk = 7;
  for (float p : {0.2f, 0.5f}) {
    for (uint64_t offset = 0; offset < 5; ++offset) {
      const ops::AttentionDropout drop(p, kSeed, offset, kTq, kTk);
      const uint64_t first = (offset + 3) / 4 * 4;
      const uint64_t words = ops::AttentionDropout::stream_words(offset, kSlices, kTq, kTk);
      EXPECT_EQ(offset + words, first + 4 * kSlices * 3 * 4) << "offset " << offset;
      int dropped = 0;
      for (int64_t bh = 0; bh < kSlices; ++bh) {
        for (int64_t i = 0; i < kTq; ++i) {
          for (int64_t j = 0; j < kTk; ++j) {
            const uint64_t word = first + 4 * ((bh * 3 + i / 2) * 4 + j / 2) + 2 * (i % 2) + j % 2;
            const float expected = philox_uniform(kSeed, word) >= p ? 1.0f / (1.0f - p) : 0.0f;
            ASSERT_EQ(drop.factor(bh, i, j), expected)
                << "p " << p << " offset " << offset << " at " << bh << ", " << i << ", " << j;
            float square[4];
            drop.square(bh, i / 2, j / 2, square);
            ASSERT_EQ(square[2 * (i % 2) + j % 2], expected);
            const uint32_t bits = drop.square_bits(bh, i / 2, j / 2);  // the wgmma kernels'
            ASSERT_EQ((bits >> (2 * (i % 2) + j % 2) & 1u) != 0, expected != 0.0f);
            ASSERT_EQ(bits >> 4, 0u);
            dropped += expected == 0.0f;
          }
        }
      }
      EXPECT_GT(dropped, 0) << "p " << p;  // the masks are not all ones
    }
  }
  const ops::AttentionDropout none(0.0f, kSeed, 0, kTq, kTk);
  EXPECT_EQ(none.factor(1, 4, 6), 1.0f) << "p = 0 keeps everything";
}

TEST_P(AttentionTest, ForwardMatchesNaiveDoubleLoopAndSavesLogSumExp) {
  // One (b, h) slice; Tq < Tk with the causal mask aligned to the end, T past one
  // CUDA tile of 64, D not a power of two.
  const int64_t tq = 66, tk = 80, D = 24;
  Generator gen(3);
  Tensor q = Tensor::Randn({1, 1, tq, D}, {}, &gen), k = Tensor::Randn({1, 1, tk, D}, {}, &gen);
  Tensor v = Tensor::Randn({1, 1, tk, D}, {}, &gen);
  const std::vector<float> pq = q.ToVector<float>(), pk = k.ToVector<float>();
  const std::vector<float> pv = v.ToVector<float>();
  std::vector<float> expected_out(tq * D), expected_lse(tq);
  for (int64_t i = 0; i < tq; ++i) {
    const int64_t n_keys = tk - tq + i + 1;
    std::vector<double> s(n_keys);
    double m = -INFINITY;
    for (int64_t j = 0; j < n_keys; ++j) {
      double dot = 0.0;
      for (int64_t d = 0; d < D; ++d) dot += double(pq[i * D + d]) * pk[j * D + d];
      s[j] = dot / std::sqrt(double(D));
      m = std::max(m, s[j]);
    }
    double l = 0.0;
    for (double sj : s) l += std::exp(sj - m);
    expected_lse[i] = static_cast<float>(m + std::log(l));
    for (int64_t d = 0; d < D; ++d) {
      double o = 0.0;
      for (int64_t j = 0; j < n_keys; ++j) o += std::exp(s[j] - m) / l * pv[j * D + d];
      expected_out[i * D + d] = static_cast<float>(o);
    }
  }
  Tensor out = Tensor::Empty({1, 1, tq, D}, TensorOption().OnDevice(device()));
  Tensor lse = Tensor::Empty({1, 1, tq}, TensorOption().OnDevice(device()));
  ops::attention_forward(q.To(device()), k.To(device()), v.To(device()), true, 0.0f, 0, 0, out, lse);
  expect_close(out, expected_out, 1e-4f, 1e-5f);
  expect_close(lse, expected_lse, 1e-5f, 1e-5f);
}

TEST_P(AttentionTest, DispatchChecksArguments) {
  const TensorOption on(TensorOption().OnDevice(device()));
  Tensor q = Tensor::Zeros({2, 3, 4, 8}, on);
  Tensor out = Tensor::Empty({2, 3, 4, 8}, on);
  const Tensor lse_2d = Tensor::Empty({2, 3}, on);
  expect_error_mentions([&] { ops::attention_forward(q, q, q, true, 0.0f, 0, 0, out, lse_2d); },
                        {"lse of shape [2, 3, 4]", "[2, 3]"});
  const Tensor lse_i32 = Tensor::Empty({2, 3, 4}, on.WithDtype(DataType::I32));
  expect_error_mentions([&] { ops::attention_forward(q, q, q, true, 0.0f, 0, 0, out, lse_i32); },
                        {"lse of dtype f32", "i32"});
  Tensor strided = Tensor::Zeros({2, 3, 8, 4}, on);
  Tensor lse = Tensor::Empty({2, 3, 4}, on);
  expect_error_mentions(
      [&] { ops::attention_forward(Tensor(meta_transpose(strided.meta(), 2, 3), strided.node()), q,
                                   q, true, 0.0f, 0, 0, out, lse); },
      {"q with a contiguous last dimension", "strides [96, 32, 1, 4]"});
  Tensor wide = Tensor::Zeros({1, 1, 2, 160}, on);
  Tensor wide_out = Tensor::Empty({1, 1, 2, 160}, on);
  Tensor wide_lse = Tensor::Empty({1, 1, 2}, on);
  if (device().is_cuda()) {
    expect_error_mentions(
        [&] { ops::attention_forward(wide, wide, wide, true, 0.0f, 0, 0, wide_out, wide_lse); },
        {"D <= 128", "D = 160"});
  } else {
    // The CPU reference has no limit on D: attention over equal keys averages v.
    ops::attention_forward(wide, wide, wide, true, 0.0f, 0, 0, wide_out, wide_lse);
    expect_close(wide_out, std::vector<float>(320, 0.0f));
    expect_close(wide_lse, {0.0f, std::log(2.0f)});
  }
}

TEST_P(AttentionTest, StridedOperandsMatchContiguous) {
  // q, k, v: the column ranges of a packed [B, T, 3C] buffer viewed as [B, H, T, D]
  // (strides (T*3C, D, 3C, 1)); out, grad_out and the gradients likewise inside buffers
  // 5 columns wider than they need, whose extra columns must stay untouched.
  const int64_t B = 2, T = 67, H = 3, D = 16, C = H * D, kPad = 5;
  const TensorOption on(TensorOption().OnDevice(device()));
  const auto heads = [&](const Tensor& buffer, int64_t c0) {  // (B, H, T, D) view
    return buffer.Slice(2, c0, c0 + C).View({B, T, H, D}).Transpose(1, 2);
  };
  const auto sentinel_buffer = [&](int64_t width) {
    Tensor t = Tensor::Empty({B, T, width}, on);
    t.Fill_(-7.0f);
    return t;
  };
  Generator gen(11);
  const Tensor qkv = Tensor::Randn({B, T, 3 * C}, {}, &gen).To(device());
  const Tensor grad_y = Tensor::Randn({B, T, C + kPad}, {}, &gen).To(device());
  const Tensor q = heads(qkv, 0), k = heads(qkv, C), v = heads(qkv, 2 * C);
  const Tensor grad_out = heads(grad_y, kPad);
  ASSERT_FALSE(q.is_contiguous());
  ASSERT_FALSE(grad_out.is_contiguous());
  for (float p : {0.0f, 0.25f}) {
    SCOPED_TRACE("dropout " + std::to_string(p));
    // Contiguous reference.
    const Tensor qc = q.Contiguous(), kc = k.Contiguous(), vc = v.Contiguous();
    Tensor out_c = Tensor::Empty({B, H, T, D}, on), lse_c = Tensor::Empty({B, H, T}, on);
    ops::attention_forward(qc, kc, vc, true, p, 5, 9, out_c, lse_c);
    Tensor gq_c = Tensor::Empty(q.sizes(), on), gk_c = Tensor::Empty(q.sizes(), on);
    Tensor gv_c = Tensor::Empty(q.sizes(), on);
    ops::attention_backward(qc, kc, vc, out_c, lse_c, grad_out.Contiguous(), true, p, 5, 9, gq_c,
                            gk_c, gv_c);
    // Strided: y written into columns kPad.. of a wider buffer, the gradients into one.
    Tensor y = sentinel_buffer(C + kPad), lse = Tensor::Empty({B, H, T}, on);
    const Tensor out = heads(y, kPad);
    ops::attention_forward(q, k, v, true, p, 5, 9, out, lse);
    expect_close(out, out_c, 1e-6f, 1e-7f);
    expect_close(lse, lse_c, 1e-6f, 1e-7f);
    expect_close(y.Slice(2, 0, kPad), std::vector<float>(B * T * kPad, -7.0f));
    Tensor grad_qkv = sentinel_buffer(3 * C + kPad);
    ops::attention_backward(q, k, v, out, lse, grad_out, true, p, 5, 9, heads(grad_qkv, 0),
                            heads(grad_qkv, C), heads(grad_qkv, 2 * C));
    expect_close(heads(grad_qkv, 0), gq_c, 1e-6f, 1e-7f);
    expect_close(heads(grad_qkv, C), gk_c, 1e-6f, 1e-7f);
    expect_close(heads(grad_qkv, 2 * C), gv_c, 1e-6f, 1e-7f);
    expect_close(grad_qkv.Slice(2, 3 * C, 3 * C + kPad),
                 std::vector<float>(B * T * kPad, -7.0f));
  }
}

// The CUDA kernels in each precision mode against the CPU's double accumulators, forward
// and backward, with dropout, over several tiles of 64 and D = 64 (the GPT's head width):
// ieee (FP32 FMAs, the default), 3xtf32 (three TF32 products) and tf32 (one, operands
// truncated to TF32), each within its own bound and each a different computation.
TEST(AttentionModesCudaTest, EveryModeAgainstTheCpu) {
  if (!cuda_available()) GTEST_SKIP() << "needs a CUDA device";
  const int64_t B = 2, H = 2, T = 150, D = 64;
  constexpr float kP = 0.2f;
  Generator gen(21);
  const Tensor q = Tensor::Randn({B, H, T, D}, {}, &gen), k = Tensor::Randn({B, H, T, D}, {}, &gen);
  const Tensor v = Tensor::Randn({B, H, T, D}, {}, &gen);
  const Tensor grad_out = Tensor::Randn({B, H, T, D}, {}, &gen);
  // Runs forward and backward on `device`: out, dq, dk, dv.
  const auto run = [&](Device device) {
    const TensorOption on = TensorOption().OnDevice(device);
    const Tensor qd = q.To(device), kd = k.To(device), vd = v.To(device);
    Tensor out = Tensor::Empty({B, H, T, D}, on), lse = Tensor::Empty({B, H, T}, on);
    ops::attention_forward(qd, kd, vd, true, kP, 3, 8, out, lse);
    std::vector<Tensor> r = {out, Tensor::Empty(q.sizes(), on), Tensor::Empty(q.sizes(), on),
                             Tensor::Empty(q.sizes(), on)};
    ops::attention_backward(qd, kd, vd, out, lse, grad_out.To(device), true, kP, 3, 8, r[1], r[2],
                            r[3]);
    return r;
  };
  const std::vector<Tensor> want = run(Device::Cpu());
  const char* names[] = {"out", "dq", "dk", "dv"};
  const auto run_in = [&](MatmulPrecision precision) {
    const ScopedMatmulPrecision guard(precision);
    return run(Device::Cuda(0));
  };
  const std::vector<Tensor> ieee = run_in(MatmulPrecision::kIeee);
  const std::vector<Tensor> split = run_in(MatmulPrecision::kSplitTf32);
  const std::vector<Tensor> tf32 = run_in(MatmulPrecision::kTf32);
  for (int i = 0; i < 4; ++i) {
    const double e_ieee = testing::max_relative_error(ieee[i], want[i]);
    const double e_split = testing::max_relative_error(split[i], want[i]);
    const double e_tf32 = testing::max_relative_error(tf32[i], want[i]);
    // FP32 arithmetic: a few FP32 roundings of the largest element (2^-24 = 6e-8).
    EXPECT_LT(e_ieee, 2e-6) << names[i] << ", ieee mode";
    EXPECT_LT(e_split, 1e-5) << names[i] << ", 3xtf32 mode";
    EXPECT_LT(e_tf32, 1e-2) << names[i] << ", tf32 mode";
    EXPECT_GT(e_tf32, 10 * e_split) << names[i] << ": tf32 mode ran the split products";
    EXPECT_NE(ieee[i].Cpu().ToVector<float>(), split[i].Cpu().ToVector<float>())
        << names[i] << ": ieee and 3xtf32 modes gave the same bits";
  }
}

ZERO_INSTANTIATE_DEVICE_TEST(AttentionTest);

}  // namespace
}  // namespace zero
