// Tests of causal_self_attention, the packed op of autograd/ops/fused_ops.cpp: against
// the unpacked path the GPT block used before it (split qkv [B, T, 3C] into q, k, v,
// view each as [B, H, T, D], attention, merge the heads) in values and qkv gradients,
// with and without dropout, on T not a multiple of the CUDA tile of 64 and head sizes
// 16/64/96; against finite differences, including inputs and gradients that are not
// contiguous; and for clear errors on bad shapes.
#include <functional>
#include <string>
#include <vector>

#include "tests/support/test_support.h"
#include "zero/autograd/functional.h"

namespace zero {
namespace {

using testing::check_gradients;
using testing::expect_close;
using testing::expect_error_mentions;
using testing::randn_leaf;

class PackedAttentionTest : public testing::DeviceTest {};

// The unpacked composition: what CausalSelfAttention::Forward did before the packed op.
Tensor split_attention_merge(const Tensor& qkv, int64_t n_head, float dropout_p = 0.0f,
                             Generator* gen = nullptr) {
  const int64_t b = qkv.size(0), t = qkv.size(1), c = qkv.size(2) / 3, d = c / n_head;
  const std::vector<Tensor> parts = qkv.Split(c, 2);  // 3 x (B, T, C)
  std::vector<Tensor> heads;
  for (const Tensor& part : parts) heads.push_back(part.View({b, t, n_head, d}).Transpose(1, 2));
  const Tensor y = attention(heads[0], heads[1], heads[2], true, dropout_p, gen);  // (B, H, T, D)
  return y.Transpose(1, 2).Reshape({b, t, c});  // (B, T, C)
}

// The gradient of sum(f() * R) for `leaf`, R a fixed random tensor shared by the packed
// op and its reference.
Tensor grad_of(const std::function<Tensor()>& f, Tensor leaf) {
  leaf.ZeroGrad();
  Tensor out = f();
  Generator gen(77);
  sum(out * Tensor::Randn(out.sizes(), out.options(), &gen)).Backward();
  return leaf.Grad();
}

struct PackedCase {
  int64_t B, T, H, D;
};

std::string describe(const PackedCase& c) {
  return "B=" + std::to_string(c.B) + " T=" + std::to_string(c.T) + " H=" +
         std::to_string(c.H) + " D=" + std::to_string(c.D);
}

// Values and gradients of the packed op against the unpacked path, `dropout_p` drawn
// from generators in the same state. The CPU computes both from the same contiguous
// rows, so there they must agree bit for bit.
void expect_matches_unpacked(const PackedCase& c, Device device, float dropout_p,
                             uint64_t seed) {
  SCOPED_TRACE(describe(c) + " p=" + std::to_string(dropout_p));
  Tensor qkv = randn_leaf({c.B, c.T, 3 * c.H * c.D}, device, seed);  // (B, T, 3C)
  Generator gen(seed);
  const auto packed = [&] {
    gen.SetState(seed, 500);
    return causal_self_attention(qkv, c.H, dropout_p, &gen);
  };
  const auto unpacked = [&] {
    gen.SetState(seed, 500);
    return split_attention_merge(qkv, c.H, dropout_p, &gen);
  };
  const Tensor y = packed();
  EXPECT_EQ(y.sizes(), (Shape{c.B, c.T, c.H * c.D}));
  // 500 is a multiple of 4, so the mask starts there: 4 words per 2 x 2 square.
  const int64_t squares = c.B * c.H * ((c.T + 1) / 2) * ((c.T + 1) / 2);
  EXPECT_EQ(gen.offset(), 500 + uint64_t(dropout_p > 0.0f ? 4 * squares : 0))
      << "the packed op draws as many stream words as attention";
  const Tensor y_ref = unpacked();
  const Tensor g = grad_of(packed, qkv), g_ref = grad_of(unpacked, qkv);
  expect_close(y, y_ref, 1e-5f, 1e-6f);
  expect_close(g, g_ref, 1e-5f, 1e-6f);
  if (device.is_cpu()) {
    EXPECT_EQ(y.ToVector<float>(), y_ref.ToVector<float>()) << "bit for bit on the CPU";
    EXPECT_EQ(g.ToVector<float>(), g_ref.ToVector<float>()) << "bit for bit on the CPU";
  }
}

TEST_P(PackedAttentionTest, MatchesSplitAttentionMerge) {
  const PackedCase cases[] = {
      {2, 5, 2, 16},   // several (b, h) slices, one tile
      {2, 70, 3, 16},  // T not a multiple of 64
      {1, 67, 2, 64},  // GPT-2's head size, two query tiles
      {1, 65, 2, 96},  // a head size padded to the kernels' 128
  };
  uint64_t seed = 10;
  for (const PackedCase& c : cases) expect_matches_unpacked(c, device(), 0.0f, seed++);
}

TEST_P(PackedAttentionTest, DropoutMatchesSplitAttentionMergeWithTheSameGenerator) {
  const PackedCase cases[] = {{2, 5, 2, 16}, {2, 70, 3, 16}, {1, 65, 2, 96}};
  uint64_t seed = 20;
  for (const PackedCase& c : cases) expect_matches_unpacked(c, device(), 0.3f, seed++);
}

TEST_P(PackedAttentionTest, GradientsAgainstFiniteDifferences) {
  Tensor qkv = randn_leaf({2, 4, 3 * 2 * 3}, device(), 30);  // B 2, T 4, H 2, D 3
  check_gradients([](const std::vector<Tensor>& in) { return causal_self_attention(in[0], 2); },
                  {qkv});
  Generator gen(31);
  check_gradients(
      [&](const std::vector<Tensor>& in) {
        gen.SetState(31, 0);  // one fixed mask for every evaluation
        return causal_self_attention(in[0], 2, 0.3f, &gen);
      },
      {qkv});
}

TEST_P(PackedAttentionTest, StridedInputsAndGradients) {
  // qkv whose rows are contiguous but not packed together (columns 1 .. 19 of a wider
  // tensor, read in place), and qkv whose last dimension is strided (copied first);
  // the transposed output gives the op a gradient with a strided last dimension.
  Tensor wide = randn_leaf({2, 4, 22}, device(), 40);
  check_gradients(
      [](const std::vector<Tensor>& in) {
        return causal_self_attention(in[0].Slice(2, 1, 19), 2).Transpose(1, 2);
      },
      {wide});
  Tensor transposed = randn_leaf({2, 18, 4}, device(), 41);  // (B, 3C, T)
  check_gradients(
      [](const std::vector<Tensor>& in) {
        return causal_self_attention(in[0].Transpose(1, 2), 3);
      },
      {transposed});
}

TEST_P(PackedAttentionTest, BadShapesAreErrors) {
  const TensorOption on = TensorOption().OnDevice(device());
  const Tensor flat = Tensor::Zeros({4, 12}, on);
  expect_error_mentions([&] { causal_self_attention(flat, 2); }, {"[B, T, 3C]", "[4, 12]"});
  const Tensor odd = Tensor::Zeros({1, 4, 20}, on);
  expect_error_mentions([&] { causal_self_attention(odd, 2); },
                        {"multiple of 3 * n_head = 6", "[1, 4, 20]"});
  const Tensor qkv = Tensor::Zeros({1, 4, 12}, on);
  expect_error_mentions([&] { causal_self_attention(qkv, 0); }, {"n_head >= 1", "got 0"});
  expect_error_mentions([&] { causal_self_attention(qkv, 2, 1.0f); },
                        {"dropout probability", "[0, 1)"});
  const Tensor ints = Tensor::Zeros({1, 4, 12}, on.WithDtype(DataType::I32));
  expect_error_mentions([&] { causal_self_attention(ints, 2); }, {"f32", "i32"});
  if (device().is_cuda()) {
    const Tensor wide_heads = Tensor::Zeros({1, 2, 3 * 160}, on);
    expect_error_mentions([&] { causal_self_attention(wide_heads, 1); }, {"D <= 128", "D = 160"});
  }
}

ZERO_INSTANTIATE_DEVICE_TEST(PackedAttentionTest);

}  // namespace
}  // namespace zero
