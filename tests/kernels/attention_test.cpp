// Tests of the attention kernels called directly (kernels/attention.cpp): the saved
// per-row logsumexp and the output against a naive double-precision loop (the
// autograd tests in tests/autograd/fused_ops_test.cpp only see the output), and the
// argument checks of the dispatch.
#include <cmath>
#include <string>
#include <vector>

#include "tests/support/test_support.h"
#include "zero/kernels/tensor_ops.h"

namespace zero {
namespace {

using testing::expect_close;
using testing::expect_error_mentions;

class AttentionTest : public testing::DeviceTest {};

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
      {"q to be contiguous"});
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

ZERO_INSTANTIATE_DEVICE_TEST(AttentionTest);

}  // namespace
}  // namespace zero
