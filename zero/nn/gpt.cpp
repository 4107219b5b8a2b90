// The GPT model: building the nanoGPT name tree, the forward pass, the loss through
// the fused linear + cross-entropy, and incremental decoding with a KV cache.
#include "zero/nn/gpt.h"

#include <string>

#include "zero/autograd/cast_cache.h"
#include "zero/autograd/functional.h"
#include "zero/autograd/grad_mode.h"

namespace zero::nn {

namespace {

// The dropout stream's key differs from the init stream's (both come from one seed), so
// the masks are independent of the weights; any fixed odd constant would do.
constexpr uint64_t kDropoutSeedMix = 0x9E3779B97F4A7C15ull;

// "i32 [2, 3]", for error messages.
std::string describe(const Tensor& t) {
  if (!t.defined()) return "an undefined tensor";
  return std::string(to_string(t.dtype())) + " " + shape_to_string(t.sizes());
}

void check_ids(const char* what, const Tensor& ids) {
  ZERO_CHECK(ids.defined() && ids.dtype() == DataType::I32 && ids.dim() == 2, "GPT::", what,
             ": expected I32 token ids of shape [B, T], got ", describe(ids));
}

}  // namespace

GPT::GPT(const GPTConfig& config, uint64_t seed)
    : config_(config), dropout_gen_(seed ^ kDropoutSeedMix) {
  ZERO_CHECK(config.vocab_size > 0 && config.block_size > 0 && config.n_layer > 0 &&
                 config.n_head > 0 && config.n_embd > 0,
             "GPTConfig: expected positive sizes, got vocab_size = ", config.vocab_size,
             ", block_size = ", config.block_size, ", n_layer = ", config.n_layer,
             ", n_head = ", config.n_head, ", n_embd = ", config.n_embd);
  ZERO_CHECK(config.n_embd % config.n_head == 0, "GPTConfig: n_head = ", config.n_head,
             " must divide n_embd = ", config.n_embd);
  // The MLP is 4 * n_embd wide; the layers' shapes are checked when their weights are
  // made, but this product is computed before, in plain arithmetic.
  int64_t mlp_width = 0;
  ZERO_CHECK(!__builtin_mul_overflow(config.n_embd, 4, &mlp_width), "GPTConfig: n_embd = ",
             config.n_embd, " is too large (4 * n_embd does not fit in a 64-bit signed integer)");
  Generator init(seed);
  Generator* drop = &dropout_gen_;
  // nanoGPT's tree: a `transformer` dict holding wte, wpe, drop, h (the blocks), ln_f.
  auto transformer = RegisterModule("transformer", std::make_shared<ModuleDict>());
  const int64_t c = config.n_embd;
  wte_ = transformer->Add("wte", std::make_shared<Embedding>(config.vocab_size, c, init));
  wpe_ = transformer->Add("wpe", std::make_shared<Embedding>(config.block_size, c, init));
  drop_ = transformer->Add("drop", std::make_shared<Dropout>(config.dropout, drop));
  auto h = transformer->Add("h", std::make_shared<ModuleDict>());
  for (int64_t i = 0; i < config.n_layer; ++i) {
    blocks_.push_back(h->Add(std::to_string(i), std::make_shared<Block>(config, init, drop)));
  }
  ln_f_ = transformer->Add("ln_f", std::make_shared<LayerNorm>(config.n_embd));
}

Tensor GPT::Hidden_(const Tensor& ids, int64_t start, KVCache* cache) {
  const int64_t t = ids.size(1);
  const TensorOption i32 = TensorOption().WithDtype(DataType::I32).OnDevice(ids.device());
  const Tensor positions = Tensor::Arange(start, start + t, 1, i32);  // (T)
  Tensor x = drop_->Forward(wte_->Forward(ids) + wpe_->Forward(positions));  // (B, T, C)
  for (size_t i = 0; i < blocks_.size(); ++i) {
    x = cache ? blocks_[i]->ForwardCached(x, cache->k_[i], cache->v_[i], start)  // (B, T, C)
              : blocks_[i]->Forward(x);
  }
  return ln_f_->Forward(x);  // (B, T, C)
}

Tensor GPT::Forward(const Tensor& ids) {
  check_ids("Forward", ids);
  ZERO_CHECK(ids.size(1) <= config_.block_size, "GPT::Forward: sequence length T = ",
             ids.size(1), " exceeds block_size = ", config_.block_size);
  const Tensor x = Hidden_(ids, 0, nullptr);  // (B, T, C)
  return Head_(x);                            // (B, T, V)
}

Tensor GPT::Head_(const Tensor& x) const {
  // The head tied to wte, cast to the compute dtype like every other use of a weight;
  // the logits are returned in FP32 whatever the compute dtype.
  const Tensor logits = linear(x, cached_cast(wte_->weight(), compute_dtype()));  // (B, T, V)
  return to_dtype(logits, DataType::F32);
}

Tensor GPT::Loss(const Tensor& ids, const Tensor& targets) {
  check_ids("Loss", ids);
  ZERO_CHECK(ids.size(1) <= config_.block_size, "GPT::Loss: sequence length T = ", ids.size(1),
             " exceeds block_size = ", config_.block_size);
  ZERO_CHECK(targets.defined() && targets.dtype() == DataType::I32 &&
                 targets.sizes() == ids.sizes(),
             "GPT::Loss: expected I32 targets of the ids' shape ", shape_to_string(ids.sizes()),
             ", got ", describe(targets));
  const Tensor x = Hidden_(ids, 0, nullptr);               // (B, T, C)
  const Tensor rows = x.Reshape({-1, config_.n_embd});     // (B*T, C)
  // The head's weight is cast on its own (a second cast of wte, besides the embedding's),
  // so the two gradients of the tied table meet, and add, in FP32. The loss is FP32.
  const Tensor head = cached_cast(wte_->weight(), compute_dtype());  // (V, C)
  return linear_cross_entropy(rows, head, targets.Reshape({-1}));  // ()
}

KVCache GPT::MakeCache(int64_t batch) const {
  ZERO_CHECK(batch > 0, "GPT::MakeCache: expected a positive batch size, got ", batch);
  const int64_t h = config_.n_head, d = config_.n_embd / config_.n_head;
  const TensorOption opt = TensorOption().WithDtype(compute_dtype()).OnDevice(device());
  std::vector<Tensor> k, v;
  for (int64_t i = 0; i < config_.n_layer; ++i) {
    k.push_back(Tensor::Zeros({batch, h, config_.block_size, d}, opt));  // (B, H, T_max, D)
    v.push_back(Tensor::Zeros({batch, h, config_.block_size, d}, opt));  // (B, H, T_max, D)
  }
  return KVCache(std::move(k), std::move(v));
}

Tensor GPT::ForwardCached(const Tensor& ids, KVCache& cache) {
  check_ids("ForwardCached", ids);
  ZERO_CHECK(static_cast<int64_t>(cache.k_.size()) == config_.n_layer &&
                 ids.size(0) == cache.batch(),
             "GPT::ForwardCached: expected a cache of this model for B = ", ids.size(0),
             " sequences, got one with ", cache.k_.size(), " layers for B = ", cache.batch());
  ZERO_CHECK(cache.k_.empty() || cache.k_.front().dtype() == compute_dtype(),
             "GPT::ForwardCached: the cache holds ", to_string(cache.k_.front().dtype()),
             " keys but the model computes in ", to_string(compute_dtype()),
             "; make the cache with MakeCache after SetComputeDtype");
  const int64_t start = cache.length();
  ZERO_CHECK(start + ids.size(1) <= cache.capacity(), "GPT::ForwardCached: ", start,
             " cached positions + T_new = ", ids.size(1), " new ones exceed block_size = ",
             cache.capacity());
  NoGradGuard no_grad;  // generation: nothing here is ever differentiated
  const Tensor x = Hidden_(ids, start, &cache);  // (B, T_new, C)
  cache.length_ = start + ids.size(1);
  return Head_(x);  // (B, T_new, V)
}

}  // namespace zero::nn
