// Token sampling (temperature, top-k, inverse CDF) and batched KV-cache decoding.
#include "zero/train/sampling.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "zero/autograd/grad_mode.h"
#include "zero/core/philox.h"
#include "zero/core/tensor_context.h"
#include "zero/train/budget.h"

namespace zero::train {

namespace {

// One id per row of host logits [rows, vocab]; u for row r is stream word first + r.
std::vector<int32_t> sample_rows(const std::vector<float>& logits, int64_t rows, int64_t vocab,
                                 float temperature, int64_t top_k, Generator& gen,
                                 const TokenSampler& sampler) {
  const uint64_t first = gen.Reserve(static_cast<uint64_t>(rows));
  std::vector<int32_t> ids(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    const float u = philox_uniform(gen.seed(), first + static_cast<uint64_t>(r));
    ids[r] = sampler(logits.data() + r * vocab, vocab, temperature, top_k, u);
  }
  return ids;
}

}  // namespace

int32_t sample_token(const float* logits, int64_t vocab, float temperature, int64_t top_k,
                     float u) {
  ZERO_CHECK(vocab > 0, "sample_token: expected a positive vocabulary size, got ", vocab);
  ZERO_CHECK(temperature >= 0, "sample_token: expected temperature >= 0, got ", temperature);
  ZERO_CHECK(u >= 0 && u < 1, "sample_token: expected u in [0, 1), got ", u);
  int64_t best = 0;
  for (int64_t i = 0; i < vocab; ++i) {
    ZERO_CHECK(!std::isnan(logits[i]) && logits[i] != INFINITY, "sample_token: logit ", i, " is ",
               logits[i], "; expected finite values or -inf");
    if (logits[i] > logits[best]) best = i;
  }
  ZERO_CHECK(std::isfinite(logits[best]), "sample_token: every logit is -inf");
  if (temperature == 0 || top_k == 1) return static_cast<int32_t>(best);

  // Keep logits >= the k-th largest.
  float threshold = -INFINITY;
  if (top_k > 0 && top_k < vocab) {
    std::vector<float> sorted(logits, logits + vocab);
    std::nth_element(sorted.begin(), sorted.begin() + (top_k - 1), sorted.end(),
                     std::greater<float>());
    threshold = sorted[static_cast<size_t>(top_k - 1)];
  }
  // Unnormalised probabilities exp((l - max) / T): the largest is 1, nothing overflows,
  // and a tiny temperature sends every other weight to 0 (the arg-max), not to NaN.
  std::vector<double> weight(static_cast<size_t>(vocab), 0.0);
  double total = 0;
  for (int64_t i = 0; i < vocab; ++i) {
    if (logits[i] >= threshold && logits[i] != -INFINITY) {
      weight[i] = std::exp((static_cast<double>(logits[i]) - logits[best]) / temperature);
      total += weight[i];
    }
  }
  const double target = static_cast<double>(u) * total;
  double cumulative = 0;
  int64_t last_kept = best;
  for (int64_t i = 0; i < vocab; ++i) {
    if (weight[i] == 0) continue;
    cumulative += weight[i];
    last_kept = i;
    if (cumulative > target) return static_cast<int32_t>(i);
  }
  return static_cast<int32_t>(last_kept);  // rounding left target at the very top
}

Tensor sample_next(const Tensor& logits, float temperature, int64_t top_k, Generator& gen,
                   const TokenSampler& sampler) {
  ZERO_CHECK(logits.defined() && logits.dim() == 2 && logits.dtype() == DataType::F32,
             "sample_next: expected F32 logits [B, V], got ",
             logits.defined() ? shape_to_string(logits.sizes()) : "an undefined tensor");
  const int64_t rows = logits.size(0), vocab = logits.size(1);
  const std::vector<float> host = logits.Contiguous().Cpu().ToVector<float>();
  const std::vector<int32_t> ids = sample_rows(host, rows, vocab, temperature, top_k, gen, sampler);
  return Tensor::FromI32(ids, {rows}).To(logits.device());  // (B)
}

std::vector<std::vector<int32_t>> generate(nn::GPT& model, const std::vector<int32_t>& prompt,
                                           int64_t n_new, float temperature, int64_t top_k,
                                           int64_t batch, Generator& gen,
                                           const TokenSampler& sampler) {
  const nn::GPTConfig& config = model.config();
  ZERO_CHECK(!prompt.empty(), "generate: expected a prompt of at least one token, got none");
  ZERO_CHECK(n_new >= 0 && batch >= 1,
             "generate: expected n_new >= 0 and batch >= 1, got n_new = ", n_new,
             ", batch = ", batch);
  for (int32_t id : prompt) {
    ZERO_CHECK(id >= 0 && id < config.vocab_size, "generate: prompt token ", id,
               " is outside the model's vocabulary [0, ", config.vocab_size, ")");
  }
  const Device device = model.device();
  check_fits(sampling_bytes_lower_bound(config, batch, n_new), device,
             detail::str_cat("generating ", batch, " sequences of ", n_new, " tokens"));
  nn::EvalGuard eval(model);
  NoGradGuard no_grad;
  DefaultTensorContext::Get(device).TrimFreePool();

  std::vector<std::vector<int32_t>> seqs(static_cast<size_t>(batch), prompt);
  nn::KVCache cache = model.MakeCache(batch);
  // Feeds positions [from, length) of every sequence and returns the host logits of the
  // last one, [B, V].
  auto feed = [&](int64_t from) {
    const int64_t length = static_cast<int64_t>(seqs[0].size()), t = length - from;
    std::vector<int32_t> ids;
    ids.reserve(static_cast<size_t>(batch * t));
    for (const auto& s : seqs) ids.insert(ids.end(), s.begin() + from, s.end());
    const Tensor x = Tensor::FromI32(ids, {batch, t}).To(device);        // (B, t)
    const Tensor logits = model.ForwardCached(x, cache);                 // (B, t, V)
    const Tensor last = logits.Slice(1, t - 1, t).Reshape({batch, -1});  // (B, V)
    return last.Contiguous().Cpu().ToVector<float>();
  };

  const int64_t block = config.block_size;
  const int64_t prompt_len = static_cast<int64_t>(prompt.size());
  std::vector<float> logits = feed(std::max<int64_t>(0, prompt_len - block));
  for (int64_t i = 0; i < n_new; ++i) {
    const std::vector<int32_t> next =
        sample_rows(logits, batch, config.vocab_size, temperature, top_k, gen, sampler);
    for (int64_t b = 0; b < batch; ++b) seqs[b].push_back(next[b]);
    if (i + 1 == n_new) break;
    const int64_t length = static_cast<int64_t>(seqs[0].size());
    if (cache.length() == block) {  // full: slide the window (see the header)
      cache.Reset();
      logits = feed(length - std::max<int64_t>(1, block / 2));
    } else {
      logits = feed(length - 1);
    }
  }
  return seqs;
}

}  // namespace zero::train
