// Tests of checkpoints (zero/train/checkpoint.h): an exact round trip of parameters,
// moments and trainer state; clear errors for a missing or mismatched checkpoint; and a
// save that fails midway leaving the previous checkpoint intact.
#include "zero/train/checkpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "zero/io/safetensors.h"
#include "tests/train/step_metadata.h"

namespace zero::train {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;
using zero::testing::set_step_metadata;

nn::GPTConfig tiny(int64_t n_layer = 2) { return nn::GPTConfig{11, 8, n_layer, 2, 16, 0.1f}; }

// A fresh, empty folder under the test temp dir.
std::string temp_dir(const std::string& name) {
  const fs::path p = fs::path(::testing::TempDir()) / ("zero_checkpoint_test_" + name);
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Two real training steps, so every moment is non-zero and the step count is 2.
void train_two_steps(nn::GPT& model, optim::AdamW& opt) {
  const Tensor x = Tensor::FromI32({1, 2, 3, 4, 5, 6, 7, 8}, {1, 8});
  const Tensor y = Tensor::FromI32({2, 3, 4, 5, 6, 7, 8, 9}, {1, 8});
  for (int i = 0; i < 2; ++i) {
    model.Loss(x, y).Backward();
    opt.Step();
    opt.ZeroGrad();
  }
}

TrainerState example_state(const std::string& dir) {
  TrainerState s;
  s.step = 7;
  s.best_val_loss = 1.25f;
  s.dropout_seed = 0xFFFFFFFFFFFFFFF1ull;  // needs all 64 bits
  s.dropout_offset = 123456789012ull;
  s.sampler_seed = 1337;
  s.sampler_position = 448;
  s.config.model = tiny();
  s.config.lr = 3e-4f;
  s.config.max_steps = 99;
  s.data_dir = dir + "/data";
  s.vocab_path = dir + "/vocab_source.json";
  s.metrics_path = dir + "/metrics.jsonl";
  std::ofstream(s.vocab_path) << "{\"chars\": [\"a\"]}";
  return s;
}

void expect_equal_tensors(const std::vector<std::pair<std::string, Tensor>>& a,
                          const std::vector<std::pair<std::string, Tensor>>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first);
    EXPECT_EQ(a[i].second.ToVector<float>(), b[i].second.ToVector<float>()) << a[i].first;
  }
}

TEST(CheckpointTest, RoundTripIsExact) {
  const std::string dir = temp_dir("roundtrip");
  nn::GPT model(tiny(), 1);
  optim::AdamW opt(model.NamedParameters());
  train_two_steps(model, opt);
  const TrainerState saved = example_state(dir);
  save_checkpoint(dir + "/ckpt", model, opt, saved);
  for (const char* f :
       {"model.safetensors", "optimizer.safetensors", "trainer.json", "vocab.json"}) {
    EXPECT_TRUE(fs::exists(dir + "/ckpt/" + f)) << f;
  }
  EXPECT_EQ(read(dir + "/ckpt/vocab.json"), read(saved.vocab_path));

  nn::GPT other(tiny(), 2);  // different weights until loaded
  optim::AdamW other_opt(other.NamedParameters());
  TrainerState state;
  load_checkpoint(dir + "/ckpt", other, &other_opt, state);
  expect_equal_tensors(other.NamedParameters(), model.NamedParameters());
  expect_equal_tensors(other_opt.NamedState(), opt.NamedState());
  EXPECT_EQ(other_opt.step(), 2);
  EXPECT_EQ(trainer_state_to_json(state), trainer_state_to_json(saved));
  EXPECT_EQ(state.dropout_seed, saved.dropout_seed);
  EXPECT_EQ(state.dropout_offset, saved.dropout_offset);
  EXPECT_EQ(state.config.lr, 3e-4f);
  EXPECT_EQ(read_trainer_state(dir + "/ckpt").sampler_position, 448u);

  // Weights only: the optimizer is not needed (or touched).
  nn::GPT third(tiny(), 3);
  load_checkpoint(dir + "/ckpt", third, nullptr, state);
  expect_equal_tensors(third.NamedParameters(), model.NamedParameters());
  // nanoGPT's names, the head tied to wte (listed once).
  const auto names = io::load_safetensors(dir + "/ckpt/model.safetensors");
  EXPECT_EQ(names.front().first, "transformer.wte.weight");
  for (const auto& [name, t] : names) EXPECT_NE(name, "lm_head.weight");
}

TEST(CheckpointTest, StateJsonKeepsInfinityAndRejectsOtherFormats) {
  TrainerState s;  // best_val_loss = +inf before any evaluation
  const std::string json = trainer_state_to_json(s);
  EXPECT_THAT(json, HasSubstr("\"best_val_loss\": null"));
  EXPECT_TRUE(std::isinf(trainer_state_from_json(json, "t").best_val_loss));
  EXPECT_THAT([] { trainer_state_from_json("{\"format\": \"other\"}", "x.json"); },
              ::testing::ThrowsMessage<Error>(HasSubstr("x.json")));
  EXPECT_THAT([] { trainer_state_from_json("not json", "y.json"); },
              ::testing::ThrowsMessage<Error>(HasSubstr("y.json")));
}

TEST(CheckpointTest, StateJsonKeepsTheDtypeAndTheLossScale) {
  TrainerState s;
  s.config.model = tiny();
  s.config.dtype = DataType::F16;
  s.config.loss_scaling.growth_interval = 500;
  s.loss_scale = 8192.0f;
  s.loss_scale_good_steps = 17;
  s.skipped_steps = 3;
  const std::string json = trainer_state_to_json(s);
  EXPECT_THAT(json, HasSubstr("\"dtype\": \"fp16\""));
  const TrainerState back = trainer_state_from_json(json, "t.json");
  EXPECT_EQ(back.config.dtype, DataType::F16);
  EXPECT_EQ(back.config.loss_scaling.growth_interval, 500);
  EXPECT_EQ(back.config.loss_scaling.init_scale, 65536.0f);
  EXPECT_EQ(back.loss_scale, 8192.0f);
  EXPECT_EQ(back.loss_scale_good_steps, 17);
  EXPECT_EQ(back.skipped_steps, 3);
  EXPECT_EQ(trainer_state_to_json(back), json);
  // A trainer.json from before mixed precision has none of these: an FP32 run.
  nlohmann::json old = nlohmann::json::parse(json);
  old["train"].erase("dtype");
  old.erase("loss_scaling");
  old.erase("skipped_steps");
  const TrainerState fp32 = trainer_state_from_json(old.dump(), "old.json");
  EXPECT_EQ(fp32.config.dtype, DataType::F32);
  EXPECT_EQ(fp32.loss_scale, 1.0f);
  EXPECT_EQ(fp32.skipped_steps, 0);
  old["train"]["dtype"] = "fp8";
  EXPECT_THAT([&] { trainer_state_from_json(old.dump(), "bad.json"); },
              ::testing::ThrowsMessage<Error>(HasSubstr("bad.json: field \"train.dtype\"")));
}

TEST(CheckpointTest, StateJsonNamesTheFieldThatIsWrong) {
  TrainerState s;
  s.config.model = tiny();
  const std::string good = trainer_state_to_json(s);
  auto with = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return text.replace(at, from.size(), to);
  };
  auto expect_refused = [](const std::string& text, const std::vector<std::string>& parts) {
    try {
      trainer_state_from_json(text, "t.json");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("t.json"));
      for (const auto& p : parts) EXPECT_THAT(e.what(), HasSubstr(p));
    }
  };
  expect_refused(with("\"n_embd\": 16", "\"n_embd\": \"abc\""),
                 {"\"model.n_embd\"", "\"abc\""});
  expect_refused(with("\"n_embd\": 16", "\"n_embd\": 0"), {"\"model.n_embd\"", ">= 1"});
  expect_refused(with("\"step\": 0", "\"step\": -1"), {"\"step\"", "got -1"});
  expect_refused(with("\"lr\": ", "\"lr\": \"x\", \"_\": "), {"\"train.lr\"", "a number"});
  expect_refused(with("\"seed\": 1337", "\"seed\": -5"), {"\"train.seed\"", "non-negative"});
  expect_refused(with("\"data_dir\": \"\"", "\"data_dir\": 3"),
                 {"\"data_dir\"", "a string"});
  expect_refused(with("\"format\": \"zero-gpt-checkpoint\"", "\"format\": [1]"),
                 {"\"format\"", "[1]"});
  expect_refused("[]", {"JSON object"});
}

TEST(CheckpointTest, OptimizerStepMetadataMustBeADecimalNumber) {
  nn::GPT model(tiny(), 1);
  optim::AdamW opt(model.NamedParameters());
  train_two_steps(model, opt);
  const std::string base = temp_dir("step"), dir = base + "/ckpt";
  save_checkpoint(dir, model, opt, example_state(base));
  const std::string opt_path = dir + "/optimizer.safetensors";
  // std::stoll threw std::invalid_argument (or out_of_range), and read "7xyz" as 7.
  for (const std::string bad : {"abc", "7xyz", "12345678901234567890123", "-3", "", " 7"}) {
    set_step_metadata(opt_path, bad);
    nn::GPT other(tiny(), 2);
    optim::AdamW other_opt(other.NamedParameters());
    TrainerState loaded;
    EXPECT_THAT([&] { load_checkpoint(dir, other, &other_opt, loaded); },
                ::testing::ThrowsMessage<Error>(AllOf(HasSubstr(opt_path), HasSubstr("\"step\""),
                                                      HasSubstr("\"" + bad + "\""))))
        << bad;
  }
  set_step_metadata(opt_path, "2");
  nn::GPT other(tiny(), 2);
  optim::AdamW other_opt(other.NamedParameters());
  TrainerState loaded;
  load_checkpoint(dir, other, &other_opt, loaded);
  EXPECT_EQ(other_opt.step(), 2);
}

TEST(CheckpointTest, MissingCheckpointSaysWhatIsExpected) {
  nn::GPT model(tiny(), 1);
  TrainerState state;
  const std::string dir = temp_dir("missing") + "/nothing";
  EXPECT_THAT([&] { load_checkpoint(dir, model, nullptr, state); },
              ::testing::ThrowsMessage<Error>(AllOf(HasSubstr(dir), HasSubstr("trainer.json"))));
}

TEST(CheckpointTest, MismatchedModelsAreDescribed) {
  const std::string dir = temp_dir("mismatch");
  nn::GPT model(tiny(2), 1);
  optim::AdamW opt(model.NamedParameters());
  TrainerState s = example_state(dir);
  save_checkpoint(dir + "/ckpt", model, opt, s);
  nn::GPT deeper(tiny(3), 1);
  TrainerState state;
  EXPECT_THAT(
      [&] { load_checkpoint(dir + "/ckpt", deeper, nullptr, state); },
      ::testing::ThrowsMessage<Error>(AllOf(HasSubstr("n_layer = 2"), HasSubstr("n_layer = 3"))));

  // Same config, but the file has one tensor renamed and one of another shape.
  io::NamedTensors tensors = model.NamedParameters();
  tensors[0].first = "transformer.wte.weights";
  tensors[3].second = Tensor::Zeros({5});
  io::save_safetensors(dir + "/ckpt/model.safetensors", tensors);
  nn::GPT target(tiny(2), 9);
  const std::vector<float> before = target.Parameters()[1].ToVector<float>();
  EXPECT_THAT([&] { load_checkpoint(dir + "/ckpt", target, nullptr, state); },
              ::testing::ThrowsMessage<Error>(
                  AllOf(HasSubstr("missing from the file: transformer.wte.weight"),
                        HasSubstr("in the file but not in the model: transformer.wte.weights"),
                        HasSubstr(tensors[3].first + " [5] in the file, [16] in the model"))));
  EXPECT_EQ(target.Parameters()[1].ToVector<float>(), before) << "a failed load changes nothing";
}

TEST(CheckpointTest, FailedSaveKeepsThePreviousCheckpoint) {
  const std::string dir = temp_dir("atomic");
  nn::GPT model(tiny(), 1);
  optim::AdamW opt(model.NamedParameters());
  TrainerState s = example_state(dir);
  save_checkpoint(dir + "/ckpt", model, opt, s);
  const std::string model_bytes = read(dir + "/ckpt/model.safetensors");

  train_two_steps(model, opt);                 // different weights, then a save that fails midway:
  s.vocab_path = dir + "/no-such-vocab.json";  // model files written, the vocab copy throws
  s.step = 100;
  EXPECT_THROW(save_checkpoint(dir + "/ckpt", model, opt, s), Error);

  EXPECT_EQ(read(dir + "/ckpt/model.safetensors"), model_bytes);
  EXPECT_EQ(read_trainer_state(dir + "/ckpt").step, 7);
  for (const auto& entry : fs::directory_iterator(dir)) {
    EXPECT_THAT(entry.path().filename().string(), ::testing::Not(HasSubstr("ckpt.")))
        << "a temporary folder was left behind";
  }
}

}  // namespace
}  // namespace zero::train
