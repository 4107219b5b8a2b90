// Tests of the layer ops (autograd/ops/nn_ops.cpp) and their kernels: LayerNorm
// against a naive double-precision loop, embedding lookups and their scatter-add
// gradient, dropout's Philox mask (and dropout_add against the two ops), gradients
// against finite differences, a LayerNorm adding the residual's gradient into its own,
// and the errors for bad ids, mismatched shapes and p = 1.
#include <gmock/gmock.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "tests/support/test_support.h"
#include "zero/core/philox.h"

namespace zero {
namespace {

using testing::expect_error_mentions;

using ::testing::HasSubstr;
using testing::check_gradients;
using testing::expect_close;
using testing::randn_leaf;

class NnOpsTest : public testing::DeviceTest {
 protected:
  TensorOption opt() const { return TensorOption().OnDevice(device()); }
};

// ---------------------------------------------------------------- LayerNorm

TEST_P(NnOpsTest, LayerNormMatchesNaiveReference) {
  constexpr int kRows = 6, kC = 5;
  Generator gen(5);
  Tensor x = Tensor::Randn({2, 3, kC}, opt(), &gen) * 3.0f + 1.0f;  // (2, 3, 5)
  Tensor w = Tensor::Randn({kC}, opt(), &gen);
  Tensor b = Tensor::Randn({kC}, opt(), &gen);
  const float eps = 1e-5f;
  Tensor y = layer_norm(x, w, b, eps);
  EXPECT_EQ(y.sizes(), (Shape{2, 3, kC}));

  const std::vector<float> vx = x.ToVector<float>(), vw = w.ToVector<float>(),
                           vb = b.ToVector<float>();
  std::vector<float> expected(vx.size());
  for (int r = 0; r < kRows; ++r) {
    double mean = 0.0, var = 0.0;
    for (int j = 0; j < kC; ++j) mean += vx[r * kC + j] / double{kC};
    for (int j = 0; j < kC; ++j) var += std::pow(vx[r * kC + j] - mean, 2) / kC;
    for (int j = 0; j < kC; ++j) {
      expected[r * kC + j] = static_cast<float>((vx[r * kC + j] - mean) / std::sqrt(var + eps) *
                                                    vw[j] + vb[j]);
    }
  }
  expect_close(y, expected, 1e-5f, 1e-5f);
}

TEST_P(NnOpsTest, LayerNormGradientsForInputWeightAndBias) {
  Tensor x = randn_leaf({2, 3, 5}, device(), 1);
  Tensor w = randn_leaf({5}, device(), 2);
  Tensor b = randn_leaf({5}, device(), 3);
  check_gradients([](const std::vector<Tensor>& in) { return layer_norm(in[0], in[1], in[2]); },
                  {x, w, b});
}

TEST_P(NnOpsTest, LayerNormGradientOfTransposedInput) {
  Tensor x = randn_leaf({5, 4}, device(), 4);  // read as (4, 5) through a transpose
  Tensor w = randn_leaf({5}, device(), 5);
  Tensor b = randn_leaf({5}, device(), 6);
  check_gradients(
      [](const std::vector<Tensor>& in) { return layer_norm(in[0].Transpose(0, 1), in[1], in[2]); },
      {x, w, b});
}

TEST_P(NnOpsTest, LayerNormBackwardFromSumReceivesABroadcastGradient) {
  // sum() hands back a stride-0 gradient. With weight 1 every row of xhat sums to 0,
  // so grad_x is 0, grad_bias counts the rows, grad_weight sums xhat over rows.
  Tensor x = randn_leaf({4, 3}, device(), 7);
  Tensor w = Tensor::Ones({3}, opt().WithRequiresGrad());
  Tensor b = Tensor::Zeros({3}, opt().WithRequiresGrad());
  Tensor y = layer_norm(x, w, b);
  sum(y).Backward();
  expect_close(x.Grad(), std::vector<float>(12, 0.0f), 0.0f, 1e-5f);
  expect_close(b.Grad(), {4.0f, 4.0f, 4.0f});
  expect_close(w.Grad(), sum(y.Detach(), 0));
}

TEST_P(NnOpsTest, LayerNormParameterGradientsOnManyRowsMatchSumsAndRepeat) {
  // Large enough for the kernels' parallel paths: grad_bias[j] = sum of g over rows,
  // grad_weight[j] = sum of g * y (bias 0, weight 1 make y equal to xhat), and a
  // second backward gives bit-identical sums.
  constexpr int kRows = 512, kC = 96;
  Generator gen(21);
  Tensor x = Tensor::Randn({kRows, kC}, opt(), &gen).SetRequiresGrad();
  Tensor w = Tensor::Ones({kC}, opt().WithRequiresGrad());
  Tensor b = Tensor::Zeros({kC}, opt().WithRequiresGrad());
  Tensor g = Tensor::Randn({kRows, kC}, opt(), &gen);
  Tensor y = layer_norm(x, w, b);
  y.Backward(g, /*keep_graph=*/true);
  const std::vector<float> vg = g.ToVector<float>(), vy = y.ToVector<float>();
  std::vector<float> sum_g(kC), sum_gy(kC);
  for (int j = 0; j < kC; ++j) {
    double acc_g = 0.0, acc_gy = 0.0;
    for (int r = 0; r < kRows; ++r) {
      acc_g += vg[r * kC + j];
      acc_gy += static_cast<double>(vg[r * kC + j]) * vy[r * kC + j];
    }
    sum_g[j] = static_cast<float>(acc_g);
    sum_gy[j] = static_cast<float>(acc_gy);
  }
  expect_close(b.Grad(), sum_g, 1e-5f, 1e-4f);
  expect_close(w.Grad(), sum_gy, 1e-4f, 1e-4f);

  const std::vector<float> first_w = w.Grad().ToVector<float>();
  const std::vector<float> first_b = b.Grad().ToVector<float>();
  w.ZeroGrad();
  b.ZeroGrad();
  y.Backward(g);
  EXPECT_EQ(w.Grad().ToVector<float>(), first_w);
  EXPECT_EQ(b.Grad().ToVector<float>(), first_b);
}

// The backward's column sums and grad_x against the CPU for the row widths that take
// each of the CUDA kernel's register layouts (C <= 128, 384, 768, 1024) and the wider
// rows that take two kernels, with row counts that leave the last block part-full.
TEST_P(NnOpsTest, LayerNormBackwardMatchesTheCpuAtEveryWidth) {
  struct Case { int64_t rows, C; };
  for (const Case c : {Case{45, 100}, Case{300, 384}, Case{77, 768}, Case{33, 1000},
                       Case{40, 1100}}) {
    SCOPED_TRACE("rows " + std::to_string(c.rows) + ", C " + std::to_string(c.C));
    Generator gen(c.C);
    const Tensor x = Tensor::Randn({c.rows, c.C}, {}, &gen);
    const Tensor w = Tensor::Randn({c.C}, {}, &gen), b = Tensor::Randn({c.C}, {}, &gen);
    const Tensor g = Tensor::Randn({c.rows, c.C}, {}, &gen);
    const auto grads = [&](Device d) {
      // Clones: on the CPU To() returns the tensor itself, whose gradient would add up.
      const Tensor xd = x.To(d).Clone().SetRequiresGrad();
      const Tensor wd = w.To(d).Clone().SetRequiresGrad();
      const Tensor bd = b.To(d).Clone().SetRequiresGrad();
      layer_norm(xd, wd, bd).Backward(g.To(d));
      return std::vector<Tensor>{xd.Grad(), wd.Grad(), bd.Grad()};
    };
    const std::vector<Tensor> got = grads(device()), want = grads(Device::Cpu());
    expect_close(got[0], want[0], 1e-4f, 1e-4f);
    expect_close(got[1], want[1], 1e-4f, 1e-4f);
    expect_close(got[2], want[2], 1e-4f, 1e-4f);
  }
}

// Note [Sums made by the op]: in x + layer_norm(x), the addition's backward gives x its
// gradient first, and the LayerNorm's backward adds its own into it as it writes it.
// The same graph with the LayerNorm reading a clone of x sends its gradient to the
// clone instead, and the engine adds the two in a pass of its own: the sums must have
// the same bits in every dtype, at widths that take each CUDA path (the fused kernel in
// groups, the fused kernel one value at a time, two kernels past 1024).
TEST_P(NnOpsTest, LayerNormAddsTheResidualGradientAsTheAdditionWould) {
  for (const DataType dtype : {DataType::F32, DataType::BF16, DataType::F16}) {
    for (const int64_t c : {int64_t{768}, int64_t{100}, int64_t{1100}}) {
      SCOPED_TRACE(std::string(to_string(dtype)) + ", C " + std::to_string(c));
      Generator gen(c);
      const auto make = [&](const Shape& sizes) {
        return to_dtype(Tensor::Randn(sizes, {}, &gen).To(device()), dtype);
      };
      const Tensor a0 = make({6, 5, c}), w = make({c}), b = make({c}), g = make({6, 5, c});
      const auto grad_of_a = [&](bool clone) {
        const Tensor a = a0.Clone().SetRequiresGrad();
        const Tensor x = a * 2.0f;  // not a leaf: its gradient sits in a slot
        const Tensor y = x + layer_norm(clone ? x.Clone() : x, w, b);
        y.Backward(g);
        return a.Grad();
      };
      const Tensor fused = grad_of_a(false), unfused = grad_of_a(true);
      EXPECT_EQ(to_dtype(fused.Cpu(), DataType::F32).ToVector<float>(),
                to_dtype(unfused.Cpu(), DataType::F32).ToVector<float>());
    }
  }
}

TEST_P(NnOpsTest, LayerNormRejectsWeightOfWrongShape) {
  Tensor x = Tensor::Zeros({2, 5}, opt());
  Tensor w = Tensor::Ones({4}, opt());
  Tensor b = Tensor::Zeros({5}, opt());
  expect_error_mentions([&] { layer_norm(x, w, b); }, {"weight", "[4]", "[5]", "[2, 5]"});
  expect_error_mentions([&] { layer_norm(x, b, w); }, {"bias", "[4]", "[2, 5]"});
}

TEST_P(NnOpsTest, LayerNormRejectsIntegerWeightAndMixedDevices) {
  Tensor x = Tensor::Zeros({2, 5}, opt());
  Tensor b = Tensor::Zeros({5}, opt());
  Tensor int_w = Tensor::Zeros({5}, opt().WithDtype(DataType::I32));
  expect_error_mentions([&] { layer_norm(x, int_w, b); }, {"weight", "f32", "i32"});
  if (device().is_cuda()) {
    Tensor host_w = Tensor::Ones({5});
    expect_error_mentions([&] { layer_norm(x, host_w, b); }, {"cpu", "cuda"});
  }
}

// ---------------------------------------------------------------- embedding

TEST_P(NnOpsTest, EmbeddingGathersRows) {
  Tensor w = Tensor::Arange(0, 15, 1, opt()).View({5, 3});  // row v is 3v, 3v+1, 3v+2
  Tensor ids = Tensor::FromI32({4, 0, 2, 4}, {2, 2}, opt());
  Tensor out = embedding(w, ids);
  EXPECT_EQ(out.sizes(), (Shape{2, 2, 3}));
  expect_close(out, {12, 13, 14, 0, 1, 2, 6, 7, 8, 12, 13, 14});
}

TEST_P(NnOpsTest, EmbeddingGradientSumsRepeatedIds) {
  Tensor w = randn_leaf({5, 3}, device(), 8);
  Tensor ids = Tensor::FromI32({1, 3, 1, 1, 0, 3}, {2, 3}, opt());
  Tensor g = Tensor::From({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18},
                          {2, 3, 3}, opt());
  embedding(w, ids).Backward(g);
  // Row 1 gets positions 0, 2, 3; row 3 positions 1, 5; row 0 position 4; rows 2, 4 none.
  expect_close(w.Grad(), {13, 14, 15,  1 + 7 + 10, 2 + 8 + 11, 3 + 9 + 12,  0, 0, 0,
                          4 + 16, 5 + 17, 6 + 18,  0, 0, 0});
  check_gradients([&](const std::vector<Tensor>& in) { return embedding(in[0], ids); }, {w});
}

TEST_P(NnOpsTest, EmbeddingGradientOnManyIdsMatchesHostScatterAdd) {
  // Enough ids for the parallel path, many repeating: against a serial loop on the host.
  constexpr int kVocab = 37, kC = 24, kCount = 3000;
  Generator gen(31);
  Tensor w = Tensor::Randn({kVocab, kC}, opt(), &gen).SetRequiresGrad();
  std::vector<int32_t> id_values(kCount);
  for (int i = 0; i < kCount; ++i) id_values[i] = (i * 7 + i / 5) % (kVocab - 2);  // 35, 36 unused
  Tensor ids = Tensor::FromI32(id_values, {30, 100}, opt());
  Tensor g = Tensor::Randn({30, 100, kC}, opt(), &gen);
  embedding(w, ids).Backward(g);
  const std::vector<float> vg = g.ToVector<float>();
  std::vector<double> acc(kVocab * kC, 0.0);
  for (int i = 0; i < kCount; ++i) {
    for (int j = 0; j < kC; ++j) acc[id_values[i] * kC + j] += vg[i * kC + j];
  }
  expect_close(w.Grad(), std::vector<float>(acc.begin(), acc.end()), 1e-5f, 1e-5f);
}

TEST_P(NnOpsTest, EmbeddingRejectsIdOutOfRange) {
  Tensor w = Tensor::Zeros({5, 3}, opt());
  if (device().is_cuda()) {
    // See Note [Bad indices on the GPU]: the bad id's row is NaN, the others are right.
    const std::vector<float> out = embedding(w, Tensor::FromI32({0, 7}, {2}, opt())).ToVector<float>();
    for (int c = 0; c < 3; ++c) {
      EXPECT_EQ(out[c], 0.0f);
      EXPECT_TRUE(std::isnan(out[3 + c])) << "column " << c;
    }
    return;
  }
  expect_error_mentions([&] { embedding(w, Tensor::FromI32({0, 1, 7, 2}, {2, 2}, opt())); },
                        {"id 7", "[1, 0]", "V = 5"});
  expect_error_mentions([&] { embedding(w, Tensor::FromI32({5}, {1}, opt())); },
                        {"id 5", "[0]", "V = 5"});
  expect_error_mentions([&] { embedding(w, Tensor::FromI32({-1}, {1}, opt())); },
                        {"id -1", "V = 5"});
}

// ---------------------------------------------------------------- dropout

TEST_P(NnOpsTest, DropoutKeepsAboutOneMinusPAndScalesKeptValues) {
  constexpr int kCount = 100000;
  const float p = 0.3f;
  Generator gen(17);
  Tensor y = dropout(Tensor::Ones({kCount}, opt()), p, true, &gen);
  EXPECT_EQ(gen.offset(), uint64_t{kCount});
  int kept = 0;
  for (float v : y.ToVector<float>()) {
    if (v == 0.0f) continue;
    ++kept;
    ASSERT_NEAR(v, 1.0f / (1.0f - p), 1e-6f);
  }
  EXPECT_NEAR(static_cast<double>(kept) / kCount, 1.0 - p, 0.01);
}

TEST_P(NnOpsTest, DropoutMaskIsThePhiloxFormula) {
  const float p = 0.5f;
  Generator gen(99);
  gen.Reserve(3);
  // Offsets 3 mod 4 and then not; 15 elements is not a whole number of Philox blocks
  // (the CUDA kernel draws four elements' words at a time).
  for (const Shape& shape : {Shape{4, 8}, Shape{3, 5}, Shape{3, 5}}) {
    Tensor x = Tensor::Randn(shape, opt(), &gen) + 10.0f;  // no zeros
    const uint64_t offset = gen.offset();
    Tensor y = dropout(x, p, true, &gen);
    const std::vector<float> vx = x.ToVector<float>();
    std::vector<float> expected(vx.size());
    for (size_t i = 0; i < vx.size(); ++i) {
      expected[i] = philox_uniform(99, offset + i) >= p ? vx[i] / (1.0f - p) : 0.0f;
    }
    expect_close(y, expected, 1e-6f, 0.0f);
  }
}

TEST_P(NnOpsTest, DropoutSameSeedSameMaskNextOffsetNewMask) {
  Tensor x = Tensor::Ones({256}, opt());
  Generator g1(5), g2(5);
  const std::vector<float> a = dropout(x, 0.5f, true, &g1).ToVector<float>();
  const std::vector<float> b = dropout(x, 0.5f, true, &g2).ToVector<float>();
  EXPECT_EQ(a, b);
  const std::vector<float> c = dropout(x, 0.5f, true, &g1).ToVector<float>();  // next offset
  int differ = 0;
  for (size_t i = 0; i < a.size(); ++i) differ += a[i] != c[i];
  EXPECT_GT(differ, 64);  // about half of 256 for independent masks
}

TEST_P(NnOpsTest, DropoutGradientIsMaskedAndScaled) {
  const float p = 0.25f;
  Tensor x = randn_leaf({3, 10}, device(), 9);
  Generator gen(123);
  gen.Reserve(7);  // so a backward that ignored the offset would differ
  Tensor y = dropout(x, p, true, &gen);
  Tensor g = Tensor::Randn({3, 10}, opt(), &gen);
  y.Backward(g);
  const std::vector<float> vg = g.ToVector<float>();
  std::vector<float> expected(vg.size());
  for (size_t i = 0; i < vg.size(); ++i) {
    expected[i] = philox_uniform(123, 7 + i) >= p ? vg[i] / (1.0f - p) : 0.0f;
  }
  expect_close(x.Grad(), expected, 1e-6f, 0.0f);
}

TEST_P(NnOpsTest, DropoutAddIsResidualPlusDropoutForwardAndBackward) {
  const float p = 0.25f;
  Tensor r1 = randn_leaf({5, 12}, device(), 21), x1 = randn_leaf({5, 12}, device(), 22);
  Tensor r2 = randn_leaf({5, 12}, device(), 21), x2 = randn_leaf({5, 12}, device(), 22);
  Generator g1(31), g2(31);
  g1.Reserve(2);  // an offset that is not a multiple of 4
  g2.Reserve(2);
  Tensor fused = dropout_add(r1, x1, p, true, &g1);
  Tensor two_ops = r2 + dropout(x2, p, true, &g2);
  EXPECT_EQ(g1.offset(), g2.offset());
  EXPECT_EQ(fused.ToVector<float>(), two_ops.ToVector<float>());
  Generator gg(4);
  const Tensor g = Tensor::Randn({5, 12}, opt(), &gg);
  fused.Backward(g);
  two_ops.Backward(g);
  EXPECT_EQ(r1.Grad().ToVector<float>(), g.ToVector<float>());
  EXPECT_EQ(x1.Grad().ToVector<float>(), x2.Grad().ToVector<float>());
  int zeros = 0;  // the mask reached x's gradient
  for (float v : x1.Grad().ToVector<float>()) zeros += v == 0.0f;
  EXPECT_GT(zeros, 5);
  // In eval mode, or with p = 0, the sum itself; no stream words taken.
  const uint64_t before = g1.offset();
  EXPECT_EQ(dropout_add(r1, x1, p, false, &g1).ToVector<float>(), (r1 + x1).ToVector<float>());
  EXPECT_EQ(dropout_add(r1, x1, 0.0f, true, &g1).ToVector<float>(), (r1 + x1).ToVector<float>());
  EXPECT_EQ(g1.offset(), before);
  expect_error_mentions([&] { dropout_add(r1, x1, 1.0f); }, {"p < 1"});
}

TEST_P(NnOpsTest, DropoutInEvalModeOrWithZeroPIsTheIdentity) {
  Tensor x = randn_leaf({4}, device(), 10);
  Generator gen(1);
  EXPECT_EQ(dropout(x, 0.5f, /*training=*/false, &gen).impl(), x.impl());
  EXPECT_EQ(dropout(x, 0.0f, true, &gen).impl(), x.impl());
  EXPECT_EQ(gen.offset(), 0u);
}

TEST_P(NnOpsTest, DropoutRejectsPOutsideZeroToOne) {
  Tensor x = Tensor::Ones({4}, opt());
  expect_error_mentions([&] { dropout(x, 1.0f); }, {"use p < 1"});
  expect_error_mentions([&] { dropout(x, -0.1f); }, {"[0, 1)", "-0.1"});
}

ZERO_INSTANTIATE_DEVICE_TEST(NnOpsTest);

}  // namespace
}  // namespace zero
