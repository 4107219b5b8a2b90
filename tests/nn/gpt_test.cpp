// Tests of the GPT (zero/nn/gpt.cpp, zero/nn/block.cpp): nanoGPT's parameter names and
// shapes, the parameter count of the reference configuration, initialisation, the
// forward pass against a composition of functional ops written here from the named
// parameters, the loss at initialisation, gradients through the tied head, dropout
// modes, the KV cache against full forwards, errors, a small model that memorises a
// text, and (on a GPU) one full training step on CUDA against the CPU.
#include <gmock/gmock.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "tests/support/test_support.h"
#include "zero/autograd/grad_mode.h"
#include "zero/nn/gpt.h"
#include "zero/optim/adamw.h"
#include "zero/optim/grad_clip.h"
#include "zero/optim/lr_schedule.h"

namespace zero {
namespace {

using testing::check_gradients;
using testing::expect_close;
using testing::expect_error_mentions;

nn::GPTConfig tiny_config(float dropout = 0.0f) {
  nn::GPTConfig c;
  c.vocab_size = 11;
  c.block_size = 16;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 16;
  c.dropout = dropout;
  return c;
}

// Random I32 ids in [0, vocab) of `sizes`, on `device`.
Tensor random_ids(const Shape& sizes, int64_t vocab, uint64_t seed, Device device) {
  Generator gen(seed);
  const std::vector<float> u = Tensor::Rand(sizes, {}, &gen).ToVector<float>();
  std::vector<int32_t> ids;
  for (float x : u) ids.push_back(static_cast<int32_t>(x * static_cast<float>(vocab)));
  return Tensor::FromI32(ids, sizes, TensorOption().OnDevice(device));
}

std::map<std::string, Tensor> by_name(const nn::Module& m) {
  std::map<std::string, Tensor> out;
  for (const auto& [name, p] : m.NamedParameters()) out[name] = p;
  return out;
}


// The GPT forward written out with functional ops from the named parameters, with its
// own attention (an additive -1e9 mask), as the reference for GPT::Forward.
Tensor reference_logits(const nn::GPT& model, const Tensor& ids) {
  std::map<std::string, Tensor> p = by_name(model);
  const nn::GPTConfig& cfg = model.config();
  const int64_t b = ids.size(0), t = ids.size(1), c = cfg.n_embd, h = cfg.n_head, d = c / h;
  auto lin = [&](const Tensor& x, const std::string& name) {
    return matmul(x, p[name + ".weight"].Transpose(0, 1)) + p[name + ".bias"];
  };
  auto ln = [&](const Tensor& x, const std::string& name) {
    return layer_norm(x, p[name + ".weight"], p[name + ".bias"]);
  };
  std::vector<float> mask(static_cast<size_t>(t * t), 0.0f);
  for (int64_t i = 0; i < t; ++i) {
    for (int64_t j = i + 1; j < t; ++j) mask[i * t + j] = -1e9f;
  }
  const Tensor additive = Tensor::From(mask, {t, t}).To(ids.device());
  const Tensor positions = Tensor::Arange(0, t, 1, TensorOption().WithDtype(DataType::I32))
                               .To(ids.device());
  Tensor x = embedding(p["transformer.wte.weight"], ids) +
             embedding(p["transformer.wpe.weight"], positions);  // (B, T, C)
  for (int64_t layer = 0; layer < cfg.n_layer; ++layer) {
    const std::string pre = "transformer.h." + std::to_string(layer) + ".";
    const Tensor qkv = lin(ln(x, pre + "ln_1"), pre + "attn.c_attn");  // (B, T, 3C)
    auto head = [&](int64_t i) {
      return qkv.Slice(2, i * c, (i + 1) * c).Reshape({b, t, h, d}).Transpose(1, 2);
    };
    const Tensor scores = matmul(head(0), head(1).Transpose(2, 3)) / std::sqrt(float(d));
    const Tensor y = matmul(softmax(scores + additive), head(2));  // (B, H, T, D)
    x = x + lin(y.Transpose(1, 2).Reshape({b, t, c}), pre + "attn.c_proj");
    x = x + lin(gelu(lin(ln(x, pre + "ln_2"), pre + "mlp.c_fc")), pre + "mlp.c_proj");
  }
  x = ln(x, "transformer.ln_f");
  return matmul(x, p["transformer.wte.weight"].Transpose(0, 1));  // (B, T, V)
}

TEST(GPTTest, ParameterNamesAndShapesAreNanoGPTs) {
  nn::GPTConfig cfg = tiny_config();
  cfg.n_layer = 1;
  nn::GPT model(cfg, 0);
  const int64_t c = 16;
  const std::vector<std::pair<std::string, Shape>> expected = {
      {"transformer.wte.weight", {11, c}},
      {"transformer.wpe.weight", {16, c}},
      {"transformer.h.0.ln_1.weight", {c}},
      {"transformer.h.0.ln_1.bias", {c}},
      {"transformer.h.0.attn.c_attn.weight", {3 * c, c}},
      {"transformer.h.0.attn.c_attn.bias", {3 * c}},
      {"transformer.h.0.attn.c_proj.weight", {c, c}},
      {"transformer.h.0.attn.c_proj.bias", {c}},
      {"transformer.h.0.ln_2.weight", {c}},
      {"transformer.h.0.ln_2.bias", {c}},
      {"transformer.h.0.mlp.c_fc.weight", {4 * c, c}},
      {"transformer.h.0.mlp.c_fc.bias", {4 * c}},
      {"transformer.h.0.mlp.c_proj.weight", {c, 4 * c}},
      {"transformer.h.0.mlp.c_proj.bias", {c}},
      {"transformer.ln_f.weight", {c}},
      {"transformer.ln_f.bias", {c}},
  };
  const auto named = model.NamedParameters();
  ASSERT_EQ(named.size(), expected.size());
  for (size_t i = 0; i < named.size(); ++i) {
    EXPECT_EQ(named[i].first, expected[i].first);
    EXPECT_EQ(named[i].second.sizes(), expected[i].second) << named[i].first;
  }
}

TEST(GPTTest, ParameterCountOfTheReferenceConfig) {
  // N = V C + T C + L (12 C^2 + 13 C) + 2 C: the two embeddings, per block
  // c_attn 3C^2 + 3C, c_proj C^2 + C, c_fc 4C^2 + 4C, mlp.c_proj 4C^2 + C and two
  // LayerNorms 4C, and ln_f 2C; the tied head adds nothing. For V 65, T 256, L 6,
  // C 384: 24,960 + 98,304 + 6 x 1,774,464 + 768 = 10,770,816. (nanoGPT prints
  // "10.65M" for shakespeare_char because it trains with bias=False and leaves wpe out
  // of its count: 65 C + 6 (12 C^2 + 2 C) + C = 10,646,784.)
  nn::GPT model(nn::GPTConfig{}, 0);
  const int64_t v = 65, t = 256, l = 6, c = 384;
  EXPECT_EQ(model.NumParameters(), v * c + t * c + l * (12 * c * c + 13 * c) + 2 * c);
  EXPECT_EQ(model.NumParameters(), 10770816);
}

TEST(GPTTest, InitialisationFollowsGPT2) {
  nn::GPTConfig cfg = tiny_config();
  cfg.n_embd = 64;
  cfg.n_layer = 4;
  nn::GPT model(cfg, 1);
  auto std_of = [](const Tensor& t) {
    const std::vector<float> v = t.ToVector<float>();
    double sq = 0.0;
    for (float x : v) sq += static_cast<double>(x) * x / static_cast<double>(v.size());
    return std::sqrt(sq);
  };
  for (const auto& [name, p] : model.NamedParameters()) {
    const bool is_weight = name.size() > 7 && name.substr(name.size() - 7) == ".weight";
    if (name.find("ln_") != std::string::npos) {
      expect_close(p, std::vector<float>(p.numel(), is_weight ? 1.0f : 0.0f), 0.0f, 0.0f);
    } else if (!is_weight) {
      expect_close(p, std::vector<float>(p.numel(), 0.0f), 0.0f, 0.0f);
    } else if (name.find("c_proj") != std::string::npos) {
      EXPECT_NEAR(std_of(p), 0.02 / std::sqrt(2.0 * 4), 0.0005) << name;
    } else {
      EXPECT_NEAR(std_of(p), 0.02, 0.0015) << name;
    }
  }
  // One seed, one model.
  nn::GPT again(cfg, 1), other(cfg, 2);
  expect_close(again.NamedParameters()[4].second, model.NamedParameters()[4].second, 0.0f, 0.0f);
  EXPECT_NE(other.NamedParameters()[4].second.ToVector<float>(),
            model.NamedParameters()[4].second.ToVector<float>());
}

class GPTDeviceTest : public testing::DeviceTest {};

TEST_P(GPTDeviceTest, ForwardMatchesFunctionalComposition) {
  nn::GPT model(tiny_config(), 3);
  model.To(device());
  const Tensor ids = random_ids({2, 7}, 11, 4, device());
  const Tensor logits = model.Forward(ids);
  EXPECT_EQ(logits.sizes(), (Shape{2, 7, 11}));
  expect_close(logits, reference_logits(model, ids), 1e-4f, 1e-5f);
}

TEST_P(GPTDeviceTest, LossAtInitIsNearLogVocabAndMatchesCrossEntropyOfLogits) {
  nn::GPTConfig cfg = tiny_config();
  cfg.vocab_size = 65;
  nn::GPT model(cfg, 5);
  model.To(device());
  const Tensor ids = random_ids({4, 16}, 65, 6, device());
  const Tensor targets = random_ids({4, 16}, 65, 7, device());
  const Tensor loss = model.Loss(ids, targets);
  EXPECT_EQ(loss.dim(), 0);
  EXPECT_NEAR(loss.Item(), std::log(65.0), 0.1);
  const Tensor direct = cross_entropy(model.Forward(ids).Reshape({-1, 65}), targets.Reshape({-1}));
  EXPECT_NEAR(loss.Item(), direct.Item(), 1e-5);
}

TEST_P(GPTDeviceTest, DropoutActsOnlyInTraining) {
  nn::GPT model(tiny_config(0.5f), 8);
  model.To(device());
  const Tensor ids = random_ids({1, 8}, 11, 9, device());
  const uint64_t before = model.dropout_generator().offset();
  const std::vector<float> a = model.Forward(ids).ToVector<float>();
  const std::vector<float> b = model.Forward(ids).ToVector<float>();
  EXPECT_NE(a, b);
  EXPECT_GT(model.dropout_generator().offset(), before);
  nn::EvalGuard eval(model);
  const uint64_t in_eval = model.dropout_generator().offset();
  EXPECT_EQ(model.Forward(ids).ToVector<float>(), model.Forward(ids).ToVector<float>());
  EXPECT_EQ(model.dropout_generator().offset(), in_eval);
}

TEST_P(GPTDeviceTest, AttentionProbabilitiesAreDroppedFromTheModelsStream) {
  nn::GPT model(tiny_config(0.5f), 8);  // B 1, T 8, C 16, H 2, 2 layers
  model.To(device());
  const Tensor ids = random_ids({1, 8}, 11, 9, device());
  const uint64_t before = model.dropout_generator().offset();
  model.Forward(ids);
  // Stream words: the embedding dropout (B*T*C) and per layer the attention
  // probabilities (B*H*T*T), the attention output and the MLP output (B*T*C each).
  const uint64_t btc = 1 * 8 * 16, bhtt = 1 * 2 * 8 * 8;
  EXPECT_EQ(model.dropout_generator().offset() - before, btc + 2 * (bhtt + 2 * btc));
  // Generation never drops attention probabilities, even in training mode (where the
  // other dropouts still draw): 3 new positions take only 3 (B*T_new*C) ranges.
  nn::KVCache cache = model.MakeCache(1);
  const uint64_t before_cached = model.dropout_generator().offset();
  model.ForwardCached(ids.Slice(1, 0, 3), cache);
  const uint64_t bt3c = 1 * 3 * 16;
  EXPECT_EQ(model.dropout_generator().offset() - before_cached, bt3c + 2 * (2 * bt3c));
}

TEST_P(GPTDeviceTest, KVCacheGivesTheLogitsOfFullForwards) {
  nn::GPT model(tiny_config(), 10);
  model.To(device());
  const int64_t t = 12;
  const Tensor ids = random_ids({2, t}, 11, 11, device());
  nn::KVCache cache = model.MakeCache(2);
  EXPECT_EQ(cache.capacity(), 16);
  // A prompt of 3 tokens in one call, then one token at a time.
  const Tensor prompt_logits = model.ForwardCached(ids.Slice(1, 0, 3), cache);  // (2, 3, V)
  EXPECT_FALSE(prompt_logits.requires_grad());
  expect_close(prompt_logits, model.Forward(ids.Slice(1, 0, 3)), 1e-4f, 1e-4f);
  for (int64_t i = 3; i < t; ++i) {
    const Tensor step = model.ForwardCached(ids.Slice(1, i, i + 1), cache);  // (2, 1, V)
    ASSERT_EQ(step.sizes(), (Shape{2, 1, 11}));
    const Tensor full = model.Forward(ids.Slice(1, 0, i + 1));              // (2, i+1, V)
    expect_close(step, full.Slice(1, i, i + 1), 1e-4f, 1e-4f);
    EXPECT_EQ(cache.length(), i + 1);
  }
  cache.Reset();
  EXPECT_EQ(cache.length(), 0);
  expect_close(model.ForwardCached(ids.Slice(1, 0, 2), cache), model.Forward(ids.Slice(1, 0, 2)),
               1e-4f, 1e-4f);
}

TEST_P(GPTDeviceTest, GradientsReachTheTiedEmbeddingFromBothEnds) {
  nn::GPTConfig cfg = tiny_config();
  cfg.vocab_size = 5;
  cfg.n_embd = 8;
  cfg.n_layer = 1;
  nn::GPT model(cfg, 12);
  model.To(device());
  const Tensor ids = Tensor::FromI32({0, 3, 3, 1}, {1, 4}, TensorOption().OnDevice(device()));
  const Tensor targets = Tensor::FromI32({3, 3, 1, 4}, {1, 4}, TensorOption().OnDevice(device()));
  std::map<std::string, Tensor> p = by_name(model);
  // Row 2 of wte is never an input id: its gradient comes only through the head.
  check_gradients([&](const std::vector<Tensor>&) { return model.Loss(ids, targets); },
                  {p["transformer.wte.weight"], p["transformer.wpe.weight"],
                   p["transformer.h.0.attn.c_attn.bias"]},
                  1e-3f, 1e-2f, 1e-3f);
}

TEST_P(GPTDeviceTest, BadInputsAreRejected) {
  nn::GPT model(tiny_config(), 13);
  model.To(device());
  const Tensor long_ids = random_ids({1, 17}, 11, 1, device());
  expect_error_mentions([&] { model.Forward(long_ids); }, {"T = 17", "block_size = 16"});
  expect_error_mentions([&] { model.Loss(long_ids, long_ids); }, {"T = 17", "block_size = 16"});
  const Tensor ids = random_ids({2, 4}, 11, 1, device());
  const Tensor floats = Tensor::Zeros({2, 4}, TensorOption().OnDevice(device()));
  expect_error_mentions([&] { model.Forward(floats); }, {"I32", "f32 [2, 4]"});
  expect_error_mentions([&] { model.Loss(ids, ids.Slice(1, 0, 3)); }, {"[2, 4]", "[2, 3]"});
  nn::KVCache cache = model.MakeCache(2);
  model.ForwardCached(random_ids({2, 10}, 11, 2, device()), cache);
  expect_error_mentions([&] { model.ForwardCached(random_ids({2, 7}, 11, 3, device()), cache); },
                        {"10 cached", "T_new = 7", "block_size = 16"});
  expect_error_mentions([&] { model.ForwardCached(random_ids({3, 1}, 11, 3, device()), cache); },
                        {"B = 3", "B = 2"});
  expect_error_mentions([] { nn::GPT(nn::GPTConfig{65, 256, 6, 5, 384, 0.2f}, 0); },
                        {"n_head = 5", "n_embd = 384"});
  // 4 * 2^62 wrapped to 0, which made the MLP weights [2^62, 0]: no error, no memory.
  expect_error_mentions([] { nn::GPT(nn::GPTConfig{65, 16, 1, 1, int64_t{1} << 62, 0.0f}, 0); },
                        {"n_embd = 4611686018427387904", "4 * n_embd"});
}

ZERO_INSTANTIATE_DEVICE_TEST(GPTDeviceTest);

// A 2-layer, 32-wide GPT memorises a few hundred characters on the CPU: the whole
// stack (embeddings, attention, MLP, tied head, loss, backward, AdamW, clipping)
// has to work for the loss to fall this far.
TEST(GPTTest, SmallModelMemorisesAText) {
  // One thread: at this size (8 x 16 tokens, 32 wide) a parallel region costs more than
  // the work it splits, and far more on a busy machine, where a waiting thread spins.
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  struct RestoreThreads {
    int n;
    ~RestoreThreads() { omp_set_num_threads(n); }
  } restore{threads};
  const std::string text =
      "It is a truth universally acknowledged, that a single man in possession of a good "
      "fortune, must be in want of a wife. However little known the feelings or views of "
      "such a man may be, this truth is well fixed in the minds of the families.";
  std::map<char, int32_t> vocab;
  for (char ch : text) vocab.emplace(ch, 0);
  int32_t next = 0;
  for (auto& entry : vocab) entry.second = next++;
  std::vector<int32_t> tokens;
  for (char ch : text) tokens.push_back(vocab[ch]);

  nn::GPTConfig cfg;
  cfg.vocab_size = static_cast<int64_t>(vocab.size());
  cfg.block_size = 16;
  cfg.n_layer = 2;
  cfg.n_head = 2;
  cfg.n_embd = 32;
  cfg.dropout = 0.0f;
  nn::GPT model(cfg, 42);
  optim::AdamWOptions options;
  options.lr = 1e-2f;          // high for a tiny model; the schedule below warms up and decays
  options.weight_decay = 0.0f;  // memorising is the goal here, not generalising
  optim::AdamW opt(model.NamedParameters(), options);

  // Every window of block_size + 1 tokens, as inputs and next-token targets.
  const int64_t t = cfg.block_size;
  const int64_t windows = static_cast<int64_t>(tokens.size()) - t;
  auto batch_of = [&](const std::vector<int64_t>& starts) {
    std::vector<int32_t> x, y;
    for (int64_t s : starts) {
      for (int64_t i = 0; i < t; ++i) {
        x.push_back(tokens[s + i]);
        y.push_back(tokens[s + i + 1]);
      }
    }
    const int64_t b = static_cast<int64_t>(starts.size());
    return std::make_pair(Tensor::FromI32(x, {b, t}), Tensor::FromI32(y, {b, t}));
  };

  const int64_t batch = 8;
  const int kSteps = 400;
  Generator gen(7);
  const auto start = std::chrono::steady_clock::now();
  for (int step = 0; step < kSteps; ++step) {
    std::vector<int64_t> starts;
    for (float u : Tensor::Rand({batch}, {}, &gen).ToVector<float>()) {
      starts.push_back(static_cast<int64_t>(u * static_cast<float>(windows)));
    }
    const auto [x, y] = batch_of(starts);
    const Tensor l = model.Loss(x, y);
    opt.ZeroGrad();
    l.Backward();
    optim::clip_grad_norm(model.Parameters(), 1.0f);
    opt.SetLr(optim::lr_at(step, 20, kSteps, options.lr, options.lr / 10));
    opt.Step();
  }
  std::vector<int64_t> all(static_cast<size_t>(windows));
  for (int64_t i = 0; i < windows; ++i) all[i] = i;
  const auto [x, y] = batch_of(all);
  NoGradGuard no_grad;
  const float final_loss = model.Loss(x, y).Item();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%d steps in %.2f s, loss over every window %.3f\n", kSteps, seconds, final_loss);
  EXPECT_LT(final_loss, 0.5f);
}

// ---------------------------------------------------------------- mixed precision

// ||a - b|| / ||b|| over all elements (F32 tensors on any device).
double relative_l2(const Tensor& a, const Tensor& b) {
  const std::vector<float> va = a.ToVector<float>(), vb = b.ToVector<float>();
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < va.size(); ++i) {
    num += (double{va[i]} - vb[i]) * (double{va[i]} - vb[i]);
    den += double{vb[i]} * vb[i];
  }
  return std::sqrt(num / std::max(den, 1e-300));
}

// Note [Tolerances of a 16-bit step]
// A format with p significant bits rounds with a relative error of at most u = 2^-p:
// BF16 (p = 8) u = 2^-8 = 3.9e-3, F16 (p = 11) u = 2^-11 = 4.9e-4. The kernels of a 16-bit
// step accumulate in FP32 and round each result once, so every activation, weight copy
// and activation gradient carries an error of order u, and errors of independent
// roundings add in quadrature rather than in a line. The bounds here are u for the loss
// (a mean over 128 rows, which averages the row errors down) and 8 u for each
// parameter's gradient in the relative L2 norm; this tiny GPT (2 blocks) shows about
// 0.01 u and 1.4-2.4 u. A wrong kernel, a dtype mix-up or a gradient that skipped its
// cast gives errors of order 1, and a step that silently ran in FP32 gives 0, which the
// test also refuses.
void expect_16bit_step_matches_fp32(DataType dtype, float loss_scale) {
  const double u = dtype == DataType::BF16 ? 1.0 / 256 : 1.0 / 2048;
  nn::GPTConfig cfg = tiny_config(0.1f);
  cfg.vocab_size = 61;
  cfg.block_size = 32;
  cfg.n_embd = 32;
  nn::GPT ref(cfg, 31), low(cfg, 31);  // the same weights and dropout stream
  low.SetComputeDtype(dtype);
  const Tensor ids = random_ids({4, 32}, cfg.vocab_size, 32, Device::Cpu());
  const Tensor targets = random_ids({4, 32}, cfg.vocab_size, 33, Device::Cpu());

  const Tensor ref_loss = ref.Loss(ids, targets);
  const Tensor low_loss = low.Loss(ids, targets);
  ASSERT_EQ(low_loss.dtype(), DataType::F32);
  ref_loss.Backward();
  (low_loss * loss_scale).Backward();
  const double loss_err = std::fabs(low_loss.Item() - ref_loss.Item()) / ref_loss.Item();
  std::printf("%s: loss %.6f against %.6f, relative error %.2f u\n", to_string(dtype),
              low_loss.Item(), ref_loss.Item(), loss_err / u);
  EXPECT_LE(loss_err, u) << to_string(dtype) << " loss";

  const auto ref_params = ref.NamedParameters(), low_params = low.NamedParameters();
  double worst = 0.0;
  for (size_t i = 0; i < ref_params.size(); ++i) {
    const std::string& name = ref_params[i].first;
    const Tensor& p = low_params[i].second;
    ASSERT_EQ(p.dtype(), DataType::F32) << name << ": master weights stay FP32";
    ASSERT_TRUE(p.Grad().defined()) << name;
    ASSERT_EQ(p.Grad().dtype(), DataType::F32) << name;
    const double err = relative_l2(p.Grad() * (1.0f / loss_scale), ref_params[i].second.Grad());
    worst = std::max(worst, err);
    EXPECT_LE(err, 8 * u) << to_string(dtype) << " gradient of " << name;
  }
  std::printf("%s: worst gradient error %.2f u (L2, relative)\n", to_string(dtype), worst / u);
  EXPECT_GT(worst, 0.1 * u) << "the gradients are FP32's to within 0.1 u: the model did not "
                            << "compute in " << to_string(dtype);
}

// The BF16 backward starts from 3, not 1, so that the gradients linear_cross_entropy
// makes in its forward are seen to be scaled by the upstream gradient.
TEST(GPTTest, Bf16TrainingStepMatchesFp32WithinBf16Rounding) {
  expect_16bit_step_matches_fp32(DataType::BF16, 3.0f);
}

TEST(GPTTest, Fp16TrainingStepWithAScaledLossMatchesFp32WithinFp16Rounding) {
  expect_16bit_step_matches_fp32(DataType::F16, 1024.0f);
}

// Relative closeness of two tensors on any devices: max |a - b| <= rel * max |b|.
void expect_relatively_close(const Tensor& a, const Tensor& b, float rel, const std::string& what) {
  const std::vector<float> va = a.ToVector<float>(), vb = b.ToVector<float>();
  ASSERT_EQ(va.size(), vb.size()) << what;
  float diff = 0.0f, scale = 0.0f;
  for (size_t i = 0; i < va.size(); ++i) {
    diff = std::max(diff, std::fabs(va[i] - vb[i]));
    scale = std::max(scale, std::fabs(vb[i]));
  }
  EXPECT_LE(diff, rel * scale + 1e-7f)
      << what << ": max difference " << diff << ", scale " << scale;
}

// One training step (loss, backward, clip, AdamW) of the same GPT on the GPU and on
// the CPU: same loss, gradients, norm and updated parameters. Dropout is on: the masks
// come from Philox counters, so they are the same on both devices.
TEST(GPTCudaTest, TrainingStepMatchesCpu) {
  if (!cuda_available()) GTEST_SKIP() << "needs a CUDA GPU";
  nn::GPTConfig cfg = tiny_config(0.1f);
  cfg.n_embd = 32;
  nn::GPT cpu(cfg, 21), gpu(cfg, 21);
  gpu.To(Device::Cuda(0));
  optim::AdamW cpu_opt(cpu.NamedParameters(), {}), gpu_opt(gpu.NamedParameters(), {});
  const Tensor ids = random_ids({4, 16}, 11, 22, Device::Cpu());
  const Tensor targets = random_ids({4, 16}, 11, 23, Device::Cpu());

  const Tensor cpu_loss = cpu.Loss(ids, targets);
  const Tensor gpu_loss = gpu.Loss(ids.Cuda(), targets.Cuda());
  EXPECT_NEAR(gpu_loss.Item(), cpu_loss.Item(), 1e-4 * std::fabs(cpu_loss.Item()));
  cpu_loss.Backward();
  gpu_loss.Backward();
  const auto cpu_params = cpu.NamedParameters(), gpu_params = gpu.NamedParameters();
  for (size_t i = 0; i < cpu_params.size(); ++i) {
    expect_relatively_close(gpu_params[i].second.Grad(), cpu_params[i].second.Grad(), 1e-4f,
                            "gradient of " + cpu_params[i].first);
  }
  const float cpu_norm = optim::clip_grad_norm(cpu.Parameters(), 0.1f);
  const float gpu_norm = optim::clip_grad_norm(gpu.Parameters(), 0.1f);
  EXPECT_NEAR(gpu_norm, cpu_norm, 1e-4f * cpu_norm);
  cpu_opt.Step();
  gpu_opt.Step();
  // Adam's first step moves each element by lr * g / |g| (+ decay): where a gradient
  // is only rounding noise (the key part of c_attn.bias, whose exact gradient is 0 as
  // softmax ignores a constant added to a row), the two devices may move it by +lr and
  // -lr. Elements with a real gradient must agree to 1e-4 of the parameter's scale.
  const float lr = optim::AdamWOptions().lr;
  for (size_t i = 0; i < cpu_params.size(); ++i) {
    const std::vector<float> g = cpu_params[i].second.Grad().ToVector<float>();
    const std::vector<float> a = gpu_params[i].second.ToVector<float>();
    const std::vector<float> b = cpu_params[i].second.ToVector<float>();
    float g_max = 0.0f, p_max = 0.0f;
    for (size_t j = 0; j < g.size(); ++j) {
      g_max = std::max(g_max, std::fabs(g[j]));
      p_max = std::max(p_max, std::fabs(b[j]));
    }
    int reported = 0;
    for (size_t j = 0; j < g.size(); ++j) {
      const bool noise = std::fabs(g[j]) < 1e-3f * g_max;
      const float tol = noise ? 2.2f * lr : 1e-4f * p_max + 1e-7f;
      if (std::fabs(a[j] - b[j]) > tol && reported++ < 4) {
        ADD_FAILURE() << "updated " << cpu_params[i].first << "[" << j << "]: cuda " << a[j]
                      << ", cpu " << b[j] << " (tolerance " << tol << ")";
      }
    }
  }
}

}  // namespace
}  // namespace zero
