// Tests of the fused ops (autograd/ops/fused_ops.cpp): linear, attention and
// linear_cross_entropy, each against the unfused composition of matmul, softmax,
// masked_fill and cross_entropy in values and gradients, against finite differences,
// on the shapes their kernels treat specially (causal masks aligned to the end, T not
// a multiple of the CUDA tile of 64, head sizes 16/40/64/128, ignored targets, N not a
// multiple of the chunk), and for clear errors on bad shapes.
#include <cmath>
#include <functional>
#include <string>

#include "tests/support/test_support.h"
#include "zero/autograd/ops/fused_ops.h"
#include "zero/core/philox.h"
#include "zero/kernels/precision.h"

namespace zero {
namespace {

using autograd::OpLinearCrossEntropy;
using testing::check_gradients;
using testing::expect_close;
using testing::expect_error_mentions;
using testing::randn_leaf;

class FusedOpsTest : public testing::DeviceTest {};

// The gradients of sum(f() * R) for each leaf, R a fixed random tensor: the same
// projection for the fused op and its reference, so their gradients must agree.
std::vector<Tensor> grads_of(const std::function<Tensor()>& f, std::vector<Tensor> leaves) {
  for (Tensor& leaf : leaves) leaf.ZeroGrad();
  Tensor out = f();
  Generator gen(77);
  sum(out * Tensor::Randn(out.sizes(), out.options(), &gen)).Backward();
  std::vector<Tensor> grads;
  for (const Tensor& leaf : leaves) grads.push_back(leaf.Grad());
  return grads;
}

void expect_same_grads(const std::vector<Tensor>& actual, const std::vector<Tensor>& expected,
                       float rtol, float atol) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    SCOPED_TRACE("gradient of input " + std::to_string(i));
    ASSERT_TRUE(actual[i].defined() && expected[i].defined());
    expect_close(actual[i], expected[i], rtol, atol);
  }
}

Tensor targets_of(const std::vector<int32_t>& t, Device device) {
  return Tensor::FromI32(t, {static_cast<int64_t>(t.size())}).To(device);
}

// ---- linear ----------------------------------------------------------------------

Tensor linear_reference(const Tensor& x, const Tensor& w, const Tensor& b) {
  Tensor y = matmul(x, w.Transpose(0, 1));
  return b.defined() ? y + b : y;
}

TEST_P(FusedOpsTest, LinearMatchesMatmulPlusBias) {
  Tensor x = randn_leaf({2, 3, 5}, device(), 1);  // leading dimensions are flattened
  Tensor w = randn_leaf({4, 5}, device(), 2);
  Tensor b = randn_leaf({4}, device(), 3);
  Tensor y = linear(x, w, b);
  EXPECT_EQ(y.sizes(), (Shape{2, 3, 4}));
  expect_close(y, linear_reference(x, w, b), 1e-5f, 1e-5f);
  expect_same_grads(grads_of([&] { return linear(x, w, b); }, {x, w, b}),
                    grads_of([&] { return linear_reference(x, w, b); }, {x, w, b}), 1e-5f, 1e-5f);
  // Without a bias, and a 1-d x (one row).
  expect_close(linear(x, w), matmul(x, w.Transpose(0, 1)), 1e-5f, 1e-5f);
  Tensor x1 = randn_leaf({5}, device(), 4);
  expect_close(linear(x1, w, b), linear_reference(x1.Unsqueeze(0), w, b).Squeeze(0), 1e-5f,
               1e-5f);
}

TEST_P(FusedOpsTest, LinearHandComputed) {
  Tensor x = Tensor::From({1, 2, 3, 4, 5, 6}, {2, 3}).To(device());
  Tensor w = Tensor::From({1, 0, -1, 0.5f, 0.5f, 0.5f}, {2, 3}).To(device());
  Tensor b = Tensor::From({10, 20}, {2}).To(device());
  // Row 0: (1 - 3) + 10, (1 + 2 + 3) / 2 + 20; row 1: (4 - 6) + 10, 15 / 2 + 20.
  expect_close(linear(x, w, b), {8, 23, 8, 27.5f});
}

TEST_P(FusedOpsTest, LinearGradientsAgainstFiniteDifferences) {
  Tensor x = randn_leaf({3, 2, 4}, device(), 5);
  Tensor w = randn_leaf({3, 4}, device(), 6);
  Tensor b = randn_leaf({3}, device(), 7);
  check_gradients([](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2]); },
                  {x, w, b});
  check_gradients([](const std::vector<Tensor>& in) { return linear(in[0], in[1]); }, {x, w});
  // A transposed weight view goes through a contiguous copy.
  Tensor wt = randn_leaf({4, 3}, device(), 8);
  check_gradients(
      [](const std::vector<Tensor>& in) { return linear(in[0], in[1].Transpose(0, 1), in[2]); },
      {x, wt, b});
}

TEST_P(FusedOpsTest, LinearOnlyWeightNeedsGrad) {
  Tensor x = Tensor::Ones({2, 3}).To(device());  // no grad: only grad_weight and grad_bias
  Tensor w = randn_leaf({4, 3}, device(), 9);
  Tensor b = randn_leaf({4}, device(), 10);
  sum(linear(x, w, b)).Backward();
  expect_close(w.Grad(), std::vector<float>(12, 2.0f));  // sum over 2 rows of 1 * x[r, i]
  expect_close(b.Grad(), std::vector<float>(4, 2.0f));   // two rows
  EXPECT_FALSE(x.Grad().defined());
}

TEST_P(FusedOpsTest, LinearBadShapesAreErrors) {
  Tensor x = Tensor::Zeros({2, 5}).To(device());
  Tensor w = Tensor::Zeros({4, 5}).To(device());
  expect_error_mentions([&] { linear(Tensor::Zeros({2, 6}).To(device()), w); },
                        {"[..., 5]", "[2, 6]", "[4, 5]"});
  expect_error_mentions([&] { linear(x, Tensor::Zeros({5}).To(device())); }, {"[out, in]", "[5]"});
  expect_error_mentions([&] { linear(x, w, Tensor::Zeros({5}).To(device())); },
                        {"bias of shape [4]", "[5]"});
}

// ---- attention ---------------------------------------------------------------------

// softmax(q k^T / sqrt(D), masked) v with the causal mask aligned to the end.
Tensor attention_reference(const Tensor& q, const Tensor& k, const Tensor& v, bool causal) {
  const int64_t tq = q.size(2), tk = k.size(2);
  Tensor scores = matmul(q, k.Transpose(-1, -2)) * (1.0f / std::sqrt(float(q.size(3))));
  if (causal) {
    std::vector<int32_t> mask(tq * tk);
    for (int64_t i = 0; i < tq; ++i)
      for (int64_t j = 0; j < tk; ++j) mask[i * tk + j] = j > tk - tq + i;
    scores = masked_fill(scores, Tensor::FromI32(mask, {tq, tk}).To(q.device()), -INFINITY);
  }
  return matmul(softmax(scores), v);  // (B, H, Tq, D)
}

struct AttentionCase {
  int64_t B, H, Tq, Tk, D;
  bool causal;
};

std::string describe(const AttentionCase& c) {
  return "B " + std::to_string(c.B) + " H " + std::to_string(c.H) + " Tq " +
         std::to_string(c.Tq) + " Tk " + std::to_string(c.Tk) + " D " + std::to_string(c.D) +
         (c.causal ? " causal" : " full");
}

TEST_P(FusedOpsTest, AttentionMatchesComposition) {
  const AttentionCase cases[] = {
      {2, 2, 5, 5, 16, true},    {2, 2, 5, 5, 16, false},  // Tq = Tk
      {1, 3, 3, 7, 16, true},    {1, 3, 3, 7, 16, false},  // Tq < Tk: mask aligned to the end
      {1, 2, 1, 9, 16, true},                              // one new token against a cache
      {1, 2, 70, 70, 64, true},  {1, 1, 70, 70, 64, false},  // T not a multiple of 64
      {1, 1, 67, 131, 64, true},                           // several key tiles, Tq < Tk
      {1, 1, 65, 65, 40, true},  {1, 1, 33, 33, 128, true},  // padded and widest D
  };
  uint64_t seed = 100;
  for (const AttentionCase& c : cases) {
    SCOPED_TRACE(describe(c));
    Tensor q = randn_leaf({c.B, c.H, c.Tq, c.D}, device(), seed++);
    Tensor k = randn_leaf({c.B, c.H, c.Tk, c.D}, device(), seed++);
    Tensor v = randn_leaf({c.B, c.H, c.Tk, c.D}, device(), seed++);
    Tensor out = attention(q, k, v, c.causal);
    EXPECT_EQ(out.sizes(), q.sizes());
    expect_close(out, attention_reference(q, k, v, c.causal), 1e-4f, 1e-5f);
    expect_same_grads(grads_of([&] { return attention(q, k, v, c.causal); }, {q, k, v}),
                      grads_of([&] { return attention_reference(q, k, v, c.causal); }, {q, k, v}),
                      1e-3f, 1e-4f);
  }
}

TEST_P(FusedOpsTest, AttentionCausalMaskIsAlignedToTheEnd) {
  // Tq = Tk: the first query sees only the first key, so its output is v[0].
  Tensor q = randn_leaf({1, 1, 4, 8}, device(), 20), k = randn_leaf({1, 1, 4, 8}, device(), 21);
  Tensor v = randn_leaf({1, 1, 4, 8}, device(), 22);
  expect_close(attention(q, k, v).Slice(2, 0, 1), v.Slice(2, 0, 1), 1e-5f, 1e-6f);
  // Tq = 2 < Tk = 5: query 0 is position 3 and sees keys 0..3; query 1 sees all five.
  // Changing key/value 4 must leave row 0 alone and change row 1.
  Tensor q2 = randn_leaf({1, 1, 2, 8}, device(), 23), k2 = randn_leaf({1, 1, 5, 8}, device(), 24);
  Tensor v2 = randn_leaf({1, 1, 5, 8}, device(), 25);
  Tensor before = attention(q2, k2, v2);
  Tensor bump = Tensor::Zeros({1, 1, 5, 8}).To(device());
  bump.Slice(2, 4, 5).Fill_(3.0f);
  Tensor after = attention(q2, k2 + bump, v2 + bump);
  expect_close(after.Slice(2, 0, 1), before.Slice(2, 0, 1), 1e-5f, 1e-6f);
  const std::vector<float> b1 = before.Slice(2, 1, 2).Contiguous().ToVector<float>();
  const std::vector<float> a1 = after.Slice(2, 1, 2).Contiguous().ToVector<float>();
  float change = 0.0f;
  for (size_t i = 0; i < b1.size(); ++i) change += std::fabs(a1[i] - b1[i]);
  EXPECT_GT(change, 0.1f) << "the last query must see the last key";
}

TEST_P(FusedOpsTest, AttentionGradientsAgainstFiniteDifferences) {
  const AttentionCase cases[] = {{1, 2, 4, 4, 4, true}, {1, 2, 4, 4, 4, false},
                                 {2, 1, 3, 5, 4, true}, {2, 1, 3, 5, 4, false}};
  uint64_t seed = 200;
  for (const AttentionCase& c : cases) {
    SCOPED_TRACE(describe(c));
    Tensor q = randn_leaf({c.B, c.H, c.Tq, c.D}, device(), seed++);
    Tensor k = randn_leaf({c.B, c.H, c.Tk, c.D}, device(), seed++);
    Tensor v = randn_leaf({c.B, c.H, c.Tk, c.D}, device(), seed++);
    check_gradients(
        [&](const std::vector<Tensor>& in) { return attention(in[0], in[1], in[2], c.causal); },
        {q, k, v});
  }
}

TEST_P(FusedOpsTest, AttentionOfPermutedViews) {
  // q, k, v as the model makes them: [B, T, H, D] transposed to [B, H, T, D].
  Tensor q = randn_leaf({2, 5, 2, 4}, device(), 30), k = randn_leaf({2, 5, 2, 4}, device(), 31);
  Tensor v = randn_leaf({2, 5, 2, 4}, device(), 32);
  check_gradients(
      [](const std::vector<Tensor>& in) {
        return attention(in[0].Transpose(1, 2), in[1].Transpose(1, 2), in[2].Transpose(1, 2));
      },
      {q, k, v});
}

TEST_P(FusedOpsTest, AttentionBadShapesAreErrors) {
  Tensor q = Tensor::Zeros({1, 2, 4, 8}).To(device());
  Tensor k = Tensor::Zeros({1, 2, 3, 8}).To(device());
  expect_error_mentions([&] { attention(q, k, k, /*causal=*/true); }, {"Tq = 4", "Tk = 3"});
  EXPECT_NO_THROW(attention(q, k, k, /*causal=*/false));
  expect_error_mentions([&] { attention(q.Squeeze(0), q, q); }, {"[B, H, T, D]", "[2, 4, 8]"});
  Tensor other_d = Tensor::Zeros({1, 2, 4, 6}).To(device());
  expect_error_mentions([&] { attention(q, other_d, other_d); }, {"k of shape [1, 2, 4, 8]",
                                                                   "[1, 2, 4, 6]"});
  Tensor v_short = Tensor::Zeros({1, 2, 5, 8}).To(device());
  expect_error_mentions([&] { attention(q, q, v_short); }, {"v of shape [1, 2, 4, 8]"});
}

// ---- attention dropout ---------------------------------------------------------------

// The unfused composition with dropout: softmax of the masked scores, times a mask
// built here from philox_uniform with the word index of Note [Attention dropout]
// (4 words per 2 x 2 square of queries and keys, from the offset rounded up to 4),
// then @ v.
Tensor attention_dropout_reference(const Tensor& q, const Tensor& k, const Tensor& v,
                                   bool causal, float p, uint64_t seed, uint64_t offset) {
  const int64_t B = q.size(0), H = q.size(1), tq = q.size(2), tk = k.size(2);
  Tensor scores = matmul(q, k.Transpose(-1, -2)) * (1.0f / std::sqrt(float(q.size(3))));
  if (causal) {
    std::vector<int32_t> mask(tq * tk);
    for (int64_t i = 0; i < tq; ++i)
      for (int64_t j = 0; j < tk; ++j) mask[i * tk + j] = j > tk - tq + i;
    scores = masked_fill(scores, Tensor::FromI32(mask, {tq, tk}).To(q.device()), -INFINITY);
  }
  const uint64_t first = (offset + 3) / 4 * 4;
  const int64_t half_tq = (tq + 1) / 2, half_tk = (tk + 1) / 2;
  std::vector<float> factor(B * H * tq * tk);
  for (int64_t bh = 0; bh < B * H; ++bh) {
    for (int64_t i = 0; i < tq; ++i) {
      for (int64_t j = 0; j < tk; ++j) {
        const uint64_t word =
            first + 4 * ((bh * half_tq + i / 2) * half_tk + j / 2) + 2 * (i % 2) + j % 2;
        factor[(bh * tq + i) * tk + j] =
            philox_uniform(seed, word) >= p ? 1.0f / (1.0f - p) : 0.0f;
      }
    }
  }
  const Tensor f = Tensor::From(factor, {B, H, tq, tk}).To(q.device());  // (B, H, Tq, Tk)
  return matmul(softmax(scores) * f, v);  // (B, H, Tq, D)
}

TEST_P(FusedOpsTest, AttentionDropoutMatchesExplicitMask) {
  constexpr float kP = 0.3f;
  constexpr uint64_t kSeed = 1234;
  const AttentionCase cases[] = {
      {2, 2, 5, 5, 16, true},   {2, 2, 5, 5, 16, false},  {1, 3, 3, 7, 16, true},
      {1, 2, 70, 70, 64, true}, {1, 1, 67, 131, 40, true},  // several tiles on CUDA
  };
  uint64_t seed = 400;
  for (const AttentionCase& c : cases) {
    SCOPED_TRACE(describe(c));
    Tensor q = randn_leaf({c.B, c.H, c.Tq, c.D}, device(), seed++);
    Tensor k = randn_leaf({c.B, c.H, c.Tk, c.D}, device(), seed++);
    Tensor v = randn_leaf({c.B, c.H, c.Tk, c.D}, device(), seed++);
    // A stream already in use, at an offset that is not a multiple of 4: the mask must
    // start at the next multiple.
    Generator gen(kSeed);
    const auto fused = [&] {
      gen.SetState(kSeed, 1001);
      return attention(q, k, v, c.causal, kP, &gen);
    };
    const auto reference = [&] {
      return attention_dropout_reference(q, k, v, c.causal, kP, kSeed, 1001);
    };
    Tensor out = fused();
    const uint64_t squares = c.B * c.H * ((c.Tq + 1) / 2) * ((c.Tk + 1) / 2);
    EXPECT_EQ(gen.offset(), 1004 + 4 * squares)
        << "attention reserves 4 stream words per 2 x 2 square, from a multiple of 4";
    expect_close(out, reference(), 1e-4f, 1e-5f);
    expect_same_grads(grads_of(fused, {q, k, v}), grads_of(reference, {q, k, v}), 1e-3f, 1e-4f);
  }
}

TEST_P(FusedOpsTest, AttentionDropoutGradientsAgainstFiniteDifferences) {
  const AttentionCase cases[] = {{1, 2, 4, 4, 4, true}, {2, 1, 3, 5, 4, false}};
  uint64_t seed = 500;
  for (const AttentionCase& c : cases) {
    SCOPED_TRACE(describe(c));
    Tensor q = randn_leaf({c.B, c.H, c.Tq, c.D}, device(), seed++);
    Tensor k = randn_leaf({c.B, c.H, c.Tk, c.D}, device(), seed++);
    Tensor v = randn_leaf({c.B, c.H, c.Tk, c.D}, device(), seed++);
    Generator gen(9);
    // Every evaluation restarts the stream, so the mask is one fixed function.
    check_gradients(
        [&](const std::vector<Tensor>& in) {
          gen.SetState(9, 0);
          return attention(in[0], in[1], in[2], c.causal, 0.3f, &gen);
        },
        {q, k, v});
  }
}

TEST_P(FusedOpsTest, AttentionDropoutIsReproducibleAcrossDevices) {
  Tensor q = randn_leaf({2, 2, 9, 16}, device(), 600), k = randn_leaf({2, 2, 9, 16}, device(), 601);
  Tensor v = randn_leaf({2, 2, 9, 16}, device(), 602);
  Generator gen(42);
  const auto run = [&](const Tensor& qq, const Tensor& kk, const Tensor& vv, uint64_t offset) {
    gen.SetState(42, offset);
    return attention(qq, kk, vv, true, 0.3f, &gen).ToVector<float>();
  };
  const std::vector<float> first = run(q, k, v, 0);
  EXPECT_EQ(run(q, k, v, 0), first) << "the same stream position gives the same mask";
  EXPECT_NE(run(q, k, v, 324), first) << "the next stream words give another mask";
  if (device().is_cuda()) {  // the CPU kernel draws the same mask
    const Device cpu = Device::Cpu();
    const std::vector<float> on_cpu = run(q.To(cpu), k.To(cpu), v.To(cpu), 0);
    expect_close(Tensor::From(first, q.sizes()), Tensor::From(on_cpu, q.sizes()), 1e-4f, 1e-5f);
  }
}

TEST_P(FusedOpsTest, AttentionDropoutZeroIsPlainAttention) {
  Tensor q = randn_leaf({1, 2, 6, 8}, device(), 700), k = randn_leaf({1, 2, 6, 8}, device(), 701);
  Tensor v = randn_leaf({1, 2, 6, 8}, device(), 702);
  Generator gen(5);
  const auto plain = [&] { return attention(q, k, v, true); };
  const auto zero_p = [&] { return attention(q, k, v, true, 0.0f, &gen); };
  const auto host = [](const Tensor& t) { return t.ToVector<float>(); };
  EXPECT_EQ(host(zero_p()), host(plain())) << "bit for bit";
  const std::vector<Tensor> g0 = grads_of(zero_p, {q, k, v}), g1 = grads_of(plain, {q, k, v});
  for (size_t i = 0; i < g0.size(); ++i) EXPECT_EQ(host(g0[i]), host(g1[i])) << "input " << i;
  EXPECT_EQ(gen.offset(), 0u) << "p = 0 draws nothing";
  // And plain attention is the softmax composition, as tested above.
  expect_close(plain(), attention_reference(q, k, v, true), 1e-4f, 1e-5f);
}

TEST_P(FusedOpsTest, AttentionDropoutBadProbabilityIsAnError) {
  Tensor q = Tensor::Zeros({1, 1, 2, 4}).To(device());
  expect_error_mentions([&] { attention(q, q, q, true, 1.0f); }, {"dropout probability", "[0, 1)"});
  expect_error_mentions([&] { attention(q, q, q, true, -0.5f); }, {"-0.5"});
}

// ---- linear_cross_entropy ------------------------------------------------------------

Tensor lce_reference(const Tensor& x, const Tensor& w, const Tensor& t, int ignore_index) {
  return cross_entropy(linear(x, w), t, ignore_index);
}

// The fused op with an explicit chunk size, to exercise several chunks on small data;
// with `in_forward` the gradients are made in the forward pass and only scaled later.
Tensor lce_chunked(const Tensor& x, const Tensor& w, const Tensor& t, int64_t chunk_rows,
                   int ignore_index = -100, bool in_forward = false) {
  return autograd::RunOp<OpLinearCrossEntropy>({x, w, t}, ignore_index, chunk_rows, in_forward,
                                               in_forward);
}

// Targets spread over [0, vocab); with `ignore_every` > 0 every such row (from row 2)
// is -100 instead.
std::vector<int32_t> some_targets(int64_t n, int32_t vocab, int32_t ignore_every) {
  std::vector<int32_t> t(n);
  for (int64_t i = 0; i < n; ++i) {
    const bool ignored = ignore_every > 0 && i % ignore_every == 2;
    t[i] = ignored ? -100 : static_cast<int32_t>((i * 5 + 3) % vocab);
  }
  return t;
}

TEST_P(FusedOpsTest, LinearCrossEntropyMatchesComposition) {
  const int64_t n = 37, c = 8, vocab = 11;
  Tensor x = randn_leaf({n, c}, device(), 40);
  Tensor w = randn_leaf({vocab, c}, device(), 41);
  Tensor t = targets_of(some_targets(n, vocab, 5), device());
  Tensor expected = lce_reference(x, w, t, -100);
  const std::vector<Tensor> expected_grads =
      grads_of([&] { return lce_reference(x, w, t, -100); }, {x, w});
  // One chunk (the default for this vocabulary), then chunks of 5 rows: 37 = 7 * 5 + 2,
  // so the mean must run over the whole batch, not each chunk.
  const int64_t one_chunk = OpLinearCrossEntropy::default_chunk_rows(vocab, n, 4);
  for (int64_t chunk : {one_chunk, int64_t{5}, int64_t{1}}) {
    SCOPED_TRACE("chunk rows " + std::to_string(chunk));
    Tensor loss = lce_chunked(x, w, t, chunk);
    EXPECT_EQ(loss.dim(), 0);
    expect_close(loss, expected, 1e-5f, 1e-6f);
    expect_same_grads(grads_of([&] { return lce_chunked(x, w, t, chunk); }, {x, w}),
                      expected_grads, 1e-4f, 1e-6f);
    expect_same_grads(grads_of([&] { return lce_chunked(x, w, t, chunk, -100, true) * 3.0f; },
                               {x, w}),
                      grads_of([&] { return lce_reference(x, w, t, -100) * 3.0f; }, {x, w}),
                      1e-4f, 1e-6f);
  }
  expect_close(linear_cross_entropy(x, w, t), expected, 1e-5f, 1e-6f);
  // Another ignore index.
  Tensor t7 = targets_of(some_targets(n, 7, 0), device());  // 3 is among them
  expect_close(lce_chunked(x, w, t7, 4, /*ignore_index=*/3), lce_reference(x, w, t7, 3), 1e-5f,
               1e-6f);
}

// In BF16 the weight gradient's GEMM reads the chunk's dlogits as a transposed view
// (no transposed copy) and several chunks add into an FP32 sum: the same loss and
// gradients as FP32, within BF16's rounding of x, w and the logits (u = 2^-8).
TEST_P(FusedOpsTest, LinearCrossEntropyBf16ChunksMatchFp32) {
  const int64_t n = 37, c = 8, vocab = 11;
  Tensor x = randn_leaf({n, c}, device(), 42);
  Tensor w = randn_leaf({vocab, c}, device(), 43);
  Tensor t = targets_of(some_targets(n, vocab, 5), device());
  const auto bf16_loss = [&](int64_t chunk, bool in_forward) {
    return lce_chunked(to_dtype(x, DataType::BF16), to_dtype(w, DataType::BF16), t, chunk, -100,
                       in_forward);
  };
  const std::vector<Tensor> want = grads_of([&] { return lce_reference(x, w, t, -100); }, {x, w});
  for (int64_t chunk : {int64_t{64}, int64_t{5}}) {
    for (bool in_forward : {false, true}) {
      SCOPED_TRACE("chunk rows " + std::to_string(chunk) + (in_forward ? ", in forward" : ""));
      expect_close(bf16_loss(chunk, in_forward), lce_reference(x, w, t, -100), 2e-2f, 1e-2f);
      expect_same_grads(grads_of([&] { return bf16_loss(chunk, in_forward); }, {x, w}), want,
                        5e-2f, 4e-3f);
    }
  }
}

TEST_P(FusedOpsTest, LinearCrossEntropyGradientsAgainstFiniteDifferences) {
  Tensor x = randn_leaf({7, 3}, device(), 50);
  Tensor w = randn_leaf({5, 3}, device(), 51);
  Tensor t = targets_of({0, 4, -100, 2, 2, 1, -100}, device());
  check_gradients([&](const std::vector<Tensor>& in) { return lce_chunked(in[0], in[1], t, 3); },
                  {x, w});
  check_gradients(
      [&](const std::vector<Tensor>& in) { return linear_cross_entropy(in[0], in[1], t); },
      {x, w});
}

// loss.Backward() gives the root a gradient of ones, and the op hands over the gradients
// its forward made (Note [Gradients in the forward pass]) without multiplying them by it:
// the same as the reference's, as with an explicit 1 or 2 (scaled), and a second backward
// through a kept graph recomputes them, so the leaves get the sum of both.
TEST_P(FusedOpsTest, LinearCrossEntropyBackwardOfTheLossItself) {
  const int64_t n = 37, c = 8, vocab = 11;
  Tensor x = randn_leaf({n, c}, device(), 54);
  Tensor w = randn_leaf({vocab, c}, device(), 55);
  Tensor t = targets_of(some_targets(n, vocab, 5), device());
  const auto grads = [&](const std::function<void(const Tensor&)>& backward) {
    x.ZeroGrad();
    w.ZeroGrad();
    backward(lce_chunked(x, w, t, 5, -100, /*in_forward=*/true));
    return std::vector<Tensor>{x.Grad(), w.Grad()};
  };
  x.ZeroGrad();
  w.ZeroGrad();
  lce_reference(x, w, t, -100).Backward();
  const std::vector<Tensor> want = {x.Grad(), w.Grad()};
  expect_same_grads(grads([](const Tensor& loss) { loss.Backward(); }), want, 1e-4f, 1e-6f);
  const Tensor one = Tensor::Scalar(1.0f).To(device()), two = Tensor::Scalar(2.0f).To(device());
  expect_same_grads(grads([&](const Tensor& loss) { loss.Backward(one); }), want, 1e-4f, 1e-6f);
  const std::vector<Tensor> twice = {want[0] * 2.0f, want[1] * 2.0f};
  expect_same_grads(grads([&](const Tensor& loss) { loss.Backward(two); }), twice, 1e-4f, 1e-6f);
  expect_same_grads(grads([](const Tensor& loss) {
                      loss.Backward(Tensor(), /*keep_graph=*/true);
                      loss.Backward();
                    }),
                    twice, 1e-4f, 1e-6f);
}

// In TF32 the head's weight gradient reads the chunk's dlogits as a transposed view and
// x transposed once (Note [The head's weight gradient]): the same gradients as IEEE FP32,
// within TF32's rounding of the products' operands (10 mantissa bits), for several chunks
// and with the gradients made in the forward or in the backward. A transposed operand
// read the wrong way would be off by the size of the gradients themselves.
TEST_P(FusedOpsTest, LinearCrossEntropyTf32MatchesIeee) {
  const int64_t n = 37, c = 8, vocab = 11;
  Tensor x = randn_leaf({n, c}, device(), 56);
  Tensor w = randn_leaf({vocab, c}, device(), 57);
  Tensor t = targets_of(some_targets(n, vocab, 5), device());
  const std::vector<Tensor> want = grads_of([&] { return lce_reference(x, w, t, -100); }, {x, w});
  const ScopedMatmulPrecision tf32(MatmulPrecision::kTf32);
  for (bool in_forward : {false, true}) {
    SCOPED_TRACE(in_forward ? "made in the forward" : "made in the backward");
    expect_same_grads(grads_of([&] { return lce_chunked(x, w, t, 5, -100, in_forward); }, {x, w}),
                      want, 1e-2f, 1e-3f);
  }
}

TEST_P(FusedOpsTest, LinearCrossEntropyAllIgnoredIsZero) {
  Tensor x = randn_leaf({4, 3}, device(), 52);
  Tensor w = randn_leaf({5, 3}, device(), 53);
  Tensor loss = lce_chunked(x, w, targets_of({-100, -100, -100, -100}, device()), 3);
  EXPECT_EQ(loss.Item(), 0.0f);
  loss.Backward();
  expect_close(x.Grad(), std::vector<float>(12, 0.0f), 0.0f, 0.0f);
  expect_close(w.Grad(), std::vector<float>(15, 0.0f), 0.0f, 0.0f);
}

TEST_P(FusedOpsTest, LinearCrossEntropyDefaultChunkRows) {
  // A character vocabulary: the maximum of 8192 rows; 16384 rows in two chunks of it.
  EXPECT_EQ(OpLinearCrossEntropy::default_chunk_rows(65, 16384, 4), 8192);
  // GPT-2, <= 512 MiB of logits: at most 2624 FP32 rows, so 8192 rows in 4 chunks of
  // 2048; at most 5312 BF16 rows, so 2 chunks of 4096; 6000 FP32 rows in 3 of 2048
  // (the last 1904).
  EXPECT_EQ(OpLinearCrossEntropy::default_chunk_rows(50304, 8192, 4), 2048);
  EXPECT_EQ(OpLinearCrossEntropy::default_chunk_rows(50304, 8192, 2), 4096);
  EXPECT_EQ(OpLinearCrossEntropy::default_chunk_rows(50304, 6000, 4), 2048);
  EXPECT_EQ(OpLinearCrossEntropy::default_chunk_rows(50304, 2624, 4), 2624);
  EXPECT_EQ(OpLinearCrossEntropy::default_chunk_rows(1 << 21, 8192, 4), 256);  // the floor
  EXPECT_EQ(OpLinearCrossEntropy::default_chunk_rows(65, 5, 4), 64);  // a few rows: one chunk
}

TEST_P(FusedOpsTest, LinearCrossEntropyBadTargetsAndShapesAreErrors) {
  Tensor x = Tensor::Zeros({4, 3}).To(device());
  Tensor w = Tensor::Zeros({5, 3}).To(device());
  if (device().is_cuda()) {
    // Note [Bad indices on the GPU]: the loss turns NaN instead of throwing.
    EXPECT_TRUE(std::isnan(lce_chunked(x, w, targets_of({0, 1, 2, 9}, device()), 2).Item()));
  } else {
    // The row named is the row of the whole batch, not of its chunk.
    expect_error_mentions([&] { lce_chunked(x, w, targets_of({0, 1, 2, 9}, device()), 2); },
                          {"target 9", "row 3", "V = 5"});
  }
  expect_error_mentions([&] { linear_cross_entropy(x, Tensor::Zeros({5, 4}).To(device()),
                                                   targets_of({0, 0, 0, 0}, device())); },
                        {"[4, 3]", "[5, 4]"});
  expect_error_mentions([&] { linear_cross_entropy(x, w, targets_of({0, 0, 0}, device())); },
                        {"targets of shape [4]", "[3]"});
  expect_error_mentions([&] { linear_cross_entropy(x, w, Tensor::Zeros({4}).To(device())); },
                        {"i32", "f32"});
}

ZERO_INSTANTIATE_DEVICE_TEST(FusedOpsTest);

}  // namespace
}  // namespace zero
