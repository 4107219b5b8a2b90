// Saving and loading checkpoint folders: trainer.json through nlohmann-json, tensors
// through io/safetensors, the folder through io::replace_directory_atomically.
#include "zero/train/checkpoint.h"

#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "zero/autograd/grad_mode.h"
#include "zero/data/char_tokenizer.h"
#include "zero/io/atomic_file.h"
#include "zero/io/json_fields.h"
#include "zero/io/safetensors.h"

namespace zero::train {

namespace fs = std::filesystem;

namespace {

constexpr const char* kFormat = "zero-gpt-checkpoint";
constexpr int kVersion = 1;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  ZERO_CHECK(in.good(), "cannot read '", path, "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// "[384, 1152]"
std::string shape_of(const Tensor& t) { return shape_to_string(t.sizes()); }

// The config values of a GPT as "n_layer = 6, n_head = 6, ...".
std::string describe(const nn::GPTConfig& c) {
  return detail::str_cat("vocab_size = ", c.vocab_size, ", block_size = ", c.block_size,
                         ", n_layer = ", c.n_layer, ", n_head = ", c.n_head,
                         ", n_embd = ", c.n_embd);
}

bool same_shape(const nn::GPTConfig& a, const nn::GPTConfig& b) {
  return a.vocab_size == b.vocab_size && a.block_size == b.block_size && a.n_layer == b.n_layer &&
         a.n_head == b.n_head && a.n_embd == b.n_embd;
}

// Lists up to a few names after `label`, e.g. "missing: a, b (and 3 more)".
void list_names(std::ostringstream& msg, const char* label, const std::vector<std::string>& names) {
  if (names.empty()) return;
  constexpr size_t kShown = 8;
  msg << "\n  " << label << ": ";
  for (size_t i = 0; i < names.size() && i < kShown; ++i) msg << (i ? ", " : "") << names[i];
  if (names.size() > kShown) msg << " (and " << names.size() - kShown << " more)";
}

// A checkpoint whose numbers are NaN or infinite would resume into a run that skips every
// step (and then saves the same garbage): refuse it, naming the first bad tensor.
template <typename Named>
void require_finite(const Named& tensors, const std::string& path) {
  for (const auto& [name, t] : tensors) {
    if (t.dtype() != DataType::F32) continue;
    const std::vector<float> values = t.template ToVector<float>();
    for (size_t i = 0; i < values.size(); ++i) {
      ZERO_CHECK(std::isfinite(values[i]), path, ": tensor ", name, " holds ", values[i],
                 " at element ", i, "; a checkpoint with non-finite numbers cannot be trained "
                 "or sampled from (resume from an earlier one, such as best/)");
    }
  }
}

// The optimizer's step from the metadata string: all of it a decimal number >= 0
// (std::stoll read "7xyz" as 7 and threw std::invalid_argument for "abc").
int64_t parse_step(const std::string& text, const std::string& path) {
  int64_t step = -1;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, step);
  ZERO_CHECK(ec == std::errc() && ptr == end && step >= 0, path,
             ": metadata \"step\": expected an integer in [0, 2^63 - 1], got \"", text, "\"");
  return step;
}

void require_file(const std::string& dir, const char* name) {
  ZERO_CHECK(fs::is_regular_file(fs::path(dir) / name), "no checkpoint in '", dir, "': expected ",
             (fs::path(dir) / name).string(),
             " (a folder written by save_checkpoint, e.g. train_gpt's out/gpt/checkpoint)");
}

}  // namespace

std::string trainer_state_to_json(const TrainerState& s) {
  const TrainConfig& c = s.config;
  nlohmann::ordered_json j;
  j["format"] = kFormat;
  j["version"] = kVersion;
  j["step"] = s.step;
  j["best_val_loss"] = std::isfinite(s.best_val_loss) ? nlohmann::ordered_json(s.best_val_loss)
                                                      : nlohmann::ordered_json(nullptr);
  j["skipped_steps"] = s.skipped_steps;
  j["rng"] = {{"dropout_seed", s.dropout_seed},
              {"dropout_offset", s.dropout_offset},
              {"sampler_seed", s.sampler_seed},
              {"sampler_position", s.sampler_position}};
  j["model"] = {{"vocab_size", c.model.vocab_size}, {"block_size", c.model.block_size},
                {"n_layer", c.model.n_layer},       {"n_head", c.model.n_head},
                {"n_embd", c.model.n_embd},         {"dropout", c.model.dropout}};
  j["train"] = {{"batch_size", c.batch_size}, {"lr", c.lr},
                {"min_lr", c.min_lr},         {"warmup", c.warmup},
                {"max_steps", c.max_steps},   {"weight_decay", c.weight_decay},
                {"beta1", c.beta1},           {"beta2", c.beta2},
                {"grad_clip", c.grad_clip},   {"seed", c.seed},
                {"dtype", dtype_flag_name(c.dtype)}};
  j["loss_scaling"] = {{"init_scale", c.loss_scaling.init_scale},
                       {"growth_factor", c.loss_scaling.growth_factor},
                       {"backoff_factor", c.loss_scaling.backoff_factor},
                       {"growth_interval", c.loss_scaling.growth_interval},
                       {"scale", s.loss_scale},
                       {"good_steps", s.loss_scale_good_steps}};
  j["data_dir"] = s.data_dir;
  j["vocab_path"] = s.vocab_path;
  j["metrics_path"] = s.metrics_path;
  return j.dump(2) + "\n";
}

TrainerState trainer_state_from_json(const std::string& text, const std::string& source) {
  // Field by field, so that a hand-edited or damaged file names what is wrong with it.
  const nlohmann::json doc = io::parse_json(text, source);
  const io::JsonFields j(doc, source);
  j.Expect("format", kFormat);
  j.Expect("version", kVersion);
  TrainerState s;
  s.step = j.Int("step", 0);
  s.best_val_loss = j.Get("best_val_loss").is_null() ? std::numeric_limits<float>::infinity()
                                                     : j.Float("best_val_loss");
  s.skipped_steps = j.Has("skipped_steps") ? j.Int("skipped_steps", 0) : 0;  // newer field
  const io::JsonFields rng = j.Object("rng");
  s.dropout_seed = rng.Uint("dropout_seed");
  s.dropout_offset = rng.Uint("dropout_offset");
  s.sampler_seed = rng.Uint("sampler_seed");
  s.sampler_position = rng.Uint("sampler_position");
  const io::JsonFields m = j.Object("model");
  TrainConfig& c = s.config;
  c.model.vocab_size = m.Int("vocab_size", 1);
  c.model.block_size = m.Int("block_size", 1);
  c.model.n_layer = m.Int("n_layer", 1);
  c.model.n_head = m.Int("n_head", 1);
  c.model.n_embd = m.Int("n_embd", 1);
  c.model.dropout = m.Float("dropout");
  const io::JsonFields t = j.Object("train");
  c.batch_size = t.Int("batch_size", 1);
  c.lr = t.Float("lr");
  c.min_lr = t.Float("min_lr");
  c.warmup = t.Int("warmup", 0);
  c.max_steps = t.Int("max_steps", 0);
  c.weight_decay = t.Float("weight_decay");
  c.beta1 = t.Float("beta1");
  c.beta2 = t.Float("beta2");
  c.grad_clip = t.Float("grad_clip");
  c.seed = t.Uint("seed");
  // A checkpoint written before mixed precision has neither field: an FP32 run.
  if (t.Has("dtype")) {
    const std::string dtype = t.String("dtype");
    ZERO_CHECK(dtype == "fp32" || dtype == "bf16" || dtype == "fp16", source,
               ": field \"train.dtype\": expected \"fp32\", \"bf16\" or \"fp16\", got \"",
               dtype, "\"");
    c.dtype = dtype == "bf16" ? DataType::BF16 : dtype == "fp16" ? DataType::F16 : DataType::F32;
  }
  if (j.Has("loss_scaling")) {
    const io::JsonFields ls = j.Object("loss_scaling");
    c.loss_scaling.init_scale = ls.Float("init_scale");
    c.loss_scaling.growth_factor = ls.Float("growth_factor");
    c.loss_scaling.backoff_factor = ls.Float("backoff_factor");
    c.loss_scaling.growth_interval = ls.Int("growth_interval", 1);
    s.loss_scale = ls.Float("scale");
    s.loss_scale_good_steps = ls.Int("good_steps", 0);
  }
  s.data_dir = j.String("data_dir");
  s.vocab_path = j.String("vocab_path");
  s.metrics_path = j.String("metrics_path");
  return s;
}

void save_checkpoint(const std::string& dir, const nn::GPT& model, const optim::AdamW& optimizer,
                     const TrainerState& state) {
  const nn::GPTConfig& c = model.config();
  ZERO_CHECK(same_shape(c, state.config.model), "save_checkpoint: the state's config (",
             describe(state.config.model), ") does not describe the model (", describe(c), ")");
  // The shape again as safetensors metadata, so a reader of model.safetensors alone
  // (tools/convert_checkpoint.py) can rebuild the model.
  const std::map<std::string, std::string> model_meta = {
      {"format", "zero-gpt"},
      {"vocab_size", std::to_string(c.vocab_size)},
      {"block_size", std::to_string(c.block_size)},
      {"n_layer", std::to_string(c.n_layer)},
      {"n_head", std::to_string(c.n_head)},
      {"n_embd", std::to_string(c.n_embd)}};
  // The folder's rename makes the save atomic; the files inside still go through the one
  // writer, io::write_file_atomically or AtomicFile, which checks every write and fsync.
  io::replace_directory_atomically(dir, [&](const std::string& tmp) {
    const fs::path out(tmp);
    io::save_safetensors((out / "model.safetensors").string(), model.NamedParameters(), model_meta);
    io::save_safetensors((out / "optimizer.safetensors").string(), optimizer.NamedState(),
                         {{"step", std::to_string(optimizer.step())}});
    if (!state.vocab_path.empty()) {
      io::write_file_atomically((out / "vocab.json").string(), read_file(state.vocab_path));
    }
    io::write_file_atomically((out / "trainer.json").string(), trainer_state_to_json(state));
  });
}

TrainerState read_trainer_state(const std::string& dir) {
  io::recover_directory(dir);  // finish or undo a save interrupted by a crash
  require_file(dir, "trainer.json");
  const std::string path = (fs::path(dir) / "trainer.json").string();
  return trainer_state_from_json(read_file(path), path);
}

void load_checkpoint(const std::string& dir, nn::GPT& model, optim::AdamW* optimizer,
                     TrainerState& state) {
  TrainerState loaded = read_trainer_state(dir);
  require_file(dir, "model.safetensors");
  if (optimizer) require_file(dir, "optimizer.safetensors");
  ZERO_CHECK(same_shape(loaded.config.model, model.config()), "checkpoint '", dir,
             "' holds a GPT with ", describe(loaded.config.model), "; the model given has ",
             describe(model.config()));

  // Match names and shapes before touching anything.
  const std::string model_path = (fs::path(dir) / "model.safetensors").string();
  std::map<std::string, Tensor> saved;
  for (auto& [name, t] : io::load_safetensors(model_path)) saved.emplace(name, t);
  require_finite(saved, model_path);
  std::vector<std::string> missing, unexpected, mismatched;
  auto params = model.NamedParameters();
  std::set<std::string> names;
  for (const auto& [name, p] : params) {
    names.insert(name);
    const auto it = saved.find(name);
    if (it == saved.end()) {
      missing.push_back(name);
    } else if (it->second.sizes() != p.sizes() || it->second.dtype() != p.dtype()) {
      mismatched.push_back(name + " " + shape_of(it->second) + " in the file, " + shape_of(p) +
                           " in the model");
    }
  }
  for (const auto& entry : saved) {
    const std::string& name = entry.first;
    if (names.count(name) == 0) unexpected.push_back(name);
  }
  if (!missing.empty() || !unexpected.empty() || !mismatched.empty()) {
    std::ostringstream msg;
    msg << model_path << " does not match the model's parameters:";
    list_names(msg, "missing from the file", missing);
    list_names(msg, "in the file but not in the model", unexpected);
    list_names(msg, "different shape", mismatched);
    ZERO_CHECK(false, msg.str());
  }

  if (optimizer) {
    std::map<std::string, std::string> meta;
    const std::string opt_path = (fs::path(dir) / "optimizer.safetensors").string();
    io::NamedTensors moments = io::load_safetensors(opt_path, &meta);
    require_finite(moments, opt_path);
    ZERO_CHECK(meta.count("step") != 0, opt_path, ": expected a \"step\" entry in the metadata");
    optimizer->LoadState(moments, parse_step(meta.at("step"), opt_path));
  }
  NoGradGuard no_grad;  // parameters require grad; copying into them is not a recorded op
  for (auto& [name, p] : params) p.CopyFrom_(saved.at(name));
  state = std::move(loaded);
}

std::string resume_data_dir(const TrainerState& state, const std::string& out_dir,
                            const std::string& ckpt_dir) {
  std::string dir = state.data_dir;
  if (!fs::is_regular_file(fs::path(dir) / "vocab.json")) dir = (fs::path(out_dir) / "data").string();
  ZERO_CHECK(fs::is_regular_file(fs::path(dir) / "vocab.json"), "resuming ", ckpt_dir,
             ": its data is neither in ", state.data_dir, " nor in ", dir);
  const data::CharTokenizer data_vocab = data::CharTokenizer::Load((fs::path(dir) / "vocab.json").string());
  const data::CharTokenizer ckpt_vocab =
      data::CharTokenizer::Load((fs::path(ckpt_dir) / "vocab.json").string());
  ZERO_CHECK(data_vocab.chars() == ckpt_vocab.chars(), "resuming ", ckpt_dir, ": the data in ",
             dir, " (vocab ", data_vocab.vocab_size(), ") is not the data it was trained on (vocab ",
             ckpt_vocab.vocab_size(), "); was the out-dir reused for another text?");
  return fs::absolute(dir).string();
}

}  // namespace zero::train
