// The fused attention on BF16 and F16 operands (Note [16-bit attention through the FP32
// kernels] in kernels/attention_widen.h). On the CPU, forward and backward must be
// exactly the FP32 results on the widened operands, rounded once to the 16-bit dtype; on
// CUDA, whose products run on 16-bit Tensor Cores (P and dS rounded to 16 bits), within
// a few units of the format of that, and not the same bits. On both devices, close to
// FP32 on the unrounded operands within the format's rounding.
#include <algorithm>
#include <cmath>
#include <vector>

#include "tests/support/test_support.h"
#include "zero/kernels/tensor_ops.h"

namespace zero {
namespace {

class AttentionHalfTest : public testing::DeviceTest {};

Tensor as(const Tensor& t, DataType dtype) {
  Tensor out = Tensor::Empty(t.sizes(), TensorOption().WithDtype(dtype).OnDevice(t.device()));
  ops::convert(t, out);
  return out;
}

// The largest magnitude of a tensor's elements, read as FP32; infinite if one is NaN.
double max_abs(const Tensor& t) {
  double m = 0.0;
  for (const float x : as(t, DataType::F32).ToVector<float>()) {
    if (std::isnan(x)) return INFINITY;
    m = std::max(m, std::fabs(double(x)));
  }
  return m;
}

// out, grad_q, grad_k, grad_v (in q's dtype) and lse for causal attention with dropout
// 0.1 on [B 2, H 2, T 70, D 32]: past one 64-row tile, and a D the CUDA kernels compile.
std::vector<Tensor> run(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g) {
  const TensorOption like = TensorOption().WithDtype(q.dtype()).OnDevice(q.device());
  const Tensor out = Tensor::Empty(q.sizes(), like);
  const Tensor lse =
      Tensor::Empty({q.size(0), q.size(1), q.size(2)}, TensorOption().OnDevice(q.device()));
  ops::attention_forward(q, k, v, true, 0.1f, 5, 9, out, lse);
  std::vector<Tensor> r = {out, Tensor::Empty(q.sizes(), like), Tensor::Empty(k.sizes(), like),
                           Tensor::Empty(v.sizes(), like), lse};
  ops::attention_backward(q, k, v, out, lse, g, true, 0.1f, 5, 9, r[1], r[2], r[3]);
  return r;
}

TEST_P(AttentionHalfTest, IsTheFp32ResultRoundedOnceAndCloseToFp32) {
  Generator gen(4);
  const TensorOption on = TensorOption().OnDevice(device());
  const Shape shape = {2, 2, 70, 32};
  const Tensor q = Tensor::Randn(shape, on, &gen), k = Tensor::Randn(shape, on, &gen);
  const Tensor v = Tensor::Randn(shape, on, &gen), g = Tensor::Randn(shape, on, &gen);
  const std::vector<Tensor> fp32 = run(q, k, v, g);
  const char* names[] = {"out", "grad_q", "grad_k", "grad_v", "lse"};
  for (const DataType dtype : {DataType::BF16, DataType::F16}) {
    SCOPED_TRACE(to_string(dtype));
    const Tensor qh = as(q, dtype), kh = as(k, dtype), vh = as(v, dtype), gh = as(g, dtype);
    const std::vector<Tensor> half = run(qh, kh, vh, gh);
    // The backward's FP32 reference takes the 16-bit forward's output, as the 16-bit
    // backward does: out is an input of the backward (its delta term).
    const Tensor q32 = as(qh, DataType::F32), k32 = as(kh, DataType::F32);
    const Tensor v32 = as(vh, DataType::F32), g32 = as(gh, DataType::F32);
    const std::vector<Tensor> wide = run(q32, k32, v32, g32);
    const TensorOption like32 = TensorOption().OnDevice(device());
    const Tensor out_h32 = as(half[0], DataType::F32);
    std::vector<Tensor> grads = {Tensor::Empty(shape, like32), Tensor::Empty(shape, like32),
                                 Tensor::Empty(shape, like32)};
    ops::attention_backward(q32, k32, v32, out_h32, wide[4], g32, true, 0.1f, 5, 9, grads[0],
                            grads[1], grads[2]);
    const std::vector<Tensor> want = {wide[0], grads[0], grads[1], grads[2]};
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(half[i].dtype(), dtype) << names[i];
      const Tensor got = as(half[i], DataType::F32);
      const Tensor rounded = as(as(want[i], dtype), DataType::F32);
      if (device().is_cpu()) {
        EXPECT_EQ(got.ToVector<float>(), rounded.ToVector<float>())
            << names[i] << ": not the FP32 result rounded once";
      } else {
        // P's and dS's rounding before their products: about 2^-9 (BF16) or 2^-12 (F16)
        // of each term, a unit or two of the format in the result.
        const double units = dtype == DataType::BF16 ? 0.02 : 0.003;
        EXPECT_LT(testing::max_relative_error(got, want[i]), units) << names[i];
        EXPECT_NE(got.ToVector<float>(), rounded.ToVector<float>())
            << names[i] << ": the FP32 products rounded, not 16-bit Tensor-Core products";
      }
      // Against FP32 on the unrounded inputs: the inputs' rounding (2^-8 or 2^-11 relative)
      // moves every score, so allow several units of the format.
      const double tolerance = dtype == DataType::BF16 ? 0.06 : 0.01;
      EXPECT_LT(testing::max_relative_error(as(half[i], DataType::F32), fp32[i]), tolerance)
          << names[i];
    }
    if (device().is_cpu()) {
      EXPECT_EQ(half[4].ToVector<float>(), wide[4].ToVector<float>()) << "lse";
    } else {  // exact products of 16-bit values, summed in another order
      EXPECT_LT(testing::max_relative_error(half[4], wide[4]), 1e-5) << "lse";
    }
  }
}

TEST_P(AttentionHalfTest, MixedDtypesAreRefused) {
  const TensorOption on = TensorOption().OnDevice(device());
  const Tensor q = as(Tensor::Zeros({1, 1, 4, 8}, on), DataType::BF16);
  const Tensor k = Tensor::Zeros({1, 1, 4, 8}, on), out = Tensor::Empty({1, 1, 4, 8}, on);
  const Tensor lse = Tensor::Empty({1, 1, 4}, on);
  EXPECT_THROW(ops::attention_forward(q, k, k, true, 0.0f, 0, 0, out, lse), Error);
  const Tensor qi = Tensor::Zeros({1, 1, 4, 8}, on.WithDtype(DataType::I32));
  EXPECT_TRUE(testing::contains(
      testing::error_message(
          [&] { ops::attention_forward(qi, qi, qi, true, 0.0f, 0, 0, qi, lse); }),
      "f32, bf16 or f16"));
}

// The 16-bit CUDA kernels on the edges of their tiles (the forward's 128-query tiles of
// Note [Two row blocks a warp], the 64-row tiles elsewhere, D = 128's one-block path):
// lengths just past a tile, fewer queries than keys, with and without the causal mask
// and dropout, each D the kernels compile, against the FP32 kernels on the same
// (widened) operands, in BF16 and F16.
TEST(AttentionHalfCudaTest, TileEdgesAgainstTheFp32Kernels) {
  if (!cuda_available()) GTEST_SKIP() << "needs a CUDA device";
  struct Case { int64_t tq, tk, D; bool causal; float p; };
  const Case cases[] = {{200, 200, 64, true, 0.0f},  {129, 129, 64, true, 0.1f},
                        {66, 180, 64, true, 0.0f},   {130, 130, 128, false, 0.0f},
                        {257, 257, 32, false, 0.1f}, {64, 64, 64, true, 0.0f}};
  const TensorOption on = TensorOption().OnDevice(Device::Cuda(0));
  Generator gen(11);
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << "Tq " << c.tq << " Tk " << c.tk << " D " << c.D
                                    << (c.causal ? " causal" : "") << " p " << c.p);
    const Tensor q = Tensor::Randn({1, 2, c.tq, c.D}, on, &gen);
    const Tensor k = Tensor::Randn({1, 2, c.tk, c.D}, on, &gen);
    const Tensor v = Tensor::Randn({1, 2, c.tk, c.D}, on, &gen);
    const Tensor g = Tensor::Randn({1, 2, c.tq, c.D}, on, &gen);
    // out, lse, dq, dk, dv of operands in q's dtype.
    const auto attend = [&](const Tensor& q_, const Tensor& k_, const Tensor& v_,
                            const Tensor& g_) {
      const TensorOption like = TensorOption().WithDtype(q_.dtype()).OnDevice(q_.device());
      std::vector<Tensor> r = {Tensor::Empty(q_.sizes(), like), Tensor::Empty({1, 2, c.tq}, on),
                               Tensor::Empty(q_.sizes(), like), Tensor::Empty(k_.sizes(), like),
                               Tensor::Empty(v_.sizes(), like)};
      ops::attention_forward(q_, k_, v_, c.causal, c.p, 5, 2, r[0], r[1]);
      ops::attention_backward(q_, k_, v_, r[0], r[1], g_, c.causal, c.p, 5, 2, r[2], r[3], r[4]);
      return r;
    };
    for (const DataType dtype : {DataType::BF16, DataType::F16}) {
      SCOPED_TRACE(to_string(dtype));
      const Tensor qh = as(q, dtype), kh = as(k, dtype), vh = as(v, dtype), gh = as(g, dtype);
      const std::vector<Tensor> half = attend(qh, kh, vh, gh);
      const std::vector<Tensor> wide = attend(as(qh, DataType::F32), as(kh, DataType::F32),
                                              as(vh, DataType::F32), as(gh, DataType::F32));
      const char* names[] = {"out", "lse", "dq", "dk", "dv"};
      // As above: P's and dS's rounding to 16 bits before their products.
      const double units = dtype == DataType::BF16 ? 0.02 : 0.003;
      for (int i = 0; i < 5; ++i) {
        EXPECT_LT(testing::max_relative_error(as(half[i], DataType::F32), wide[i]),
                  i == 1 ? 1e-5 : units)
            << names[i];
      }
    }
  }
}

// The 16-bit forward and backward at D = 64, which on an sm_90 GPU run on warpgroup
// products (Note [Attention on warpgroups] in sm90/attention_forward_wgmma.cu and its
// backward's; on other GPUs these cases take the mma.sync kernels), on the GPT's packed
// layout: q, k and v column ranges of [B, T, 3C] tensors, the output written into
// [B, T, C] and the gradients into [B, T, 3C]. Lengths on and around the 128-row tiles,
// a long causal run, fewer queries than keys, with and without dropout (the char
// model's T = 256 among them); against the FP32 kernels on the same (widened) operands
// and the same mask.
TEST(AttentionHalfCudaTest, PackedLayoutAgainstTheFp32Kernels) {
  if (!cuda_available()) GTEST_SKIP() << "needs a CUDA device";
  struct Case { int64_t tq, tk; bool causal; float p; };
  const Case cases[] = {{1, 1, true, 0.0f},        {1, 2, true, 0.0f},
                        {127, 127, true, 0.0f},    {129, 129, true, 0.0f},
                        {300, 300, false, 0.0f},   {1024, 1024, true, 0.0f},
                        {70, 333, true, 0.0f},     {100, 256, false, 0.0f},
                        {256, 256, true, 0.1f},    {301, 301, false, 0.2f},
                        {71, 333, true, 0.1f},     {1, 2, true, 0.1f}};
  constexpr int64_t B = 2, H = 3, D = 64, C = H * D;
  const TensorOption on = TensorOption().OnDevice(Device::Cuda(0));
  // Part i (q, k, v) of a packed [B, T, 3C] tensor as [B, H, T, D] heads.
  const auto heads = [&](const Tensor& packed, int i) {
    return packed.Split(C, 2)[i].View({B, packed.size(1), H, D}).Transpose(1, 2);
  };
  Generator gen(12);
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << "Tq " << c.tq << " Tk " << c.tk
                                      << (c.causal ? " causal" : "") << " p " << c.p);
    const Tensor queries = Tensor::Randn({B, c.tq, 3 * C}, on, &gen);  // q in part 0
    const Tensor keys = Tensor::Randn({B, c.tk, 3 * C}, on, &gen);     // k, v in parts 1, 2
    const Tensor grad_y = Tensor::Randn({B, c.tq, C}, on, &gen);
    // y, lse, the queries' gradient (dq in part 0) and the keys' (dk, dv in parts 1, 2),
    // for operands in the dtype of x.
    const auto attend = [&](const Tensor& x, const Tensor& z, const Tensor& gy) {
      const TensorOption like = TensorOption().WithDtype(x.dtype()).OnDevice(x.device());
      const Tensor y = Tensor::Empty({B, c.tq, C}, like), lse = Tensor::Empty({B, H, c.tq}, on);
      const Tensor gx = Tensor::Zeros(x.sizes(), like), gz = Tensor::Zeros(z.sizes(), like);
      const Tensor out = y.View({B, c.tq, H, D}).Transpose(1, 2);
      ops::attention_forward(heads(x, 0), heads(z, 1), heads(z, 2), c.causal, c.p, 7, 3, out,
                             lse);
      ops::attention_backward(heads(x, 0), heads(z, 1), heads(z, 2), out, lse,
                              gy.View({B, c.tq, H, D}).Transpose(1, 2), c.causal, c.p, 7, 3,
                              heads(gx, 0), heads(gz, 1), heads(gz, 2));
      return std::vector<Tensor>{y, lse, gx, gz};
    };
    for (const DataType dtype : {DataType::BF16, DataType::F16}) {
      SCOPED_TRACE(to_string(dtype));
      const Tensor xh = as(queries, dtype), zh = as(keys, dtype), gh = as(grad_y, dtype);
      const std::vector<Tensor> half = attend(xh, zh, gh);
      const std::vector<Tensor> wide =
          attend(as(xh, DataType::F32), as(zh, DataType::F32), as(gh, DataType::F32));
      const char* names[] = {"y", "lse", "dq", "dk and dv"};
      const double units = dtype == DataType::BF16 ? 0.02 : 0.003;  // as above
      for (int i = 0; i < 4; ++i) {
        if (i == 2 && c.tk == 1) {
          // One key: each query's softmax is 1 whatever its score, so dq is zero and both
          // kernels write only rounding noise, which has no relative error to measure. It
          // must be small beside the other gradients instead.
          EXPECT_LT(max_abs(half[2]), units * max_abs(wide[3])) << names[i];
          continue;
        }
        EXPECT_LT(testing::max_relative_error(as(half[i], DataType::F32), wide[i]),
                  i == 1 ? 1e-5 : units)
            << names[i];
      }
    }
  }
}

ZERO_INSTANTIATE_DEVICE_TEST(AttentionHalfTest);

}  // namespace
}  // namespace zero
