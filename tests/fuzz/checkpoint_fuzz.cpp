// Fuzz target: the checkpoint loader (zero/train/checkpoint.h). A valid checkpoint of a
// tiny GPT is saved once; each input then replaces one of its files, chosen by the
// input's first byte, and the rest of the input is that file's contents:
//   0  trainer.json           read_trainer_state, then load_checkpoint with an optimiser
//   1  model.safetensors      load_checkpoint, weights only
//   2  optimizer.safetensors  load_checkpoint with an optimiser (its moments and the
//                             "step" metadata entry, AdamW::LoadState)
// A trainer.json that parses must print back to text that parses to the same state.
// After each input the valid file is put back.
#include <memory>

#include "fuzz_support.h"
#include "zero/train/checkpoint.h"

namespace {

using namespace zero;
namespace fs = std::filesystem;

const char* const kFiles[] = {"trainer.json", "model.safetensors", "optimizer.safetensors"};

nn::GPTConfig tiny() { return nn::GPTConfig{5, 4, 1, 1, 4, 0.0f}; }

struct Fixture {
  nn::GPT model{tiny(), 1};
  optim::AdamW optimizer{model.NamedParameters()};
  std::string dir;
  std::string valid[3];  // the valid contents of kFiles
};

train::TrainerState example_state() {
  train::TrainerState s;
  s.step = 3;
  s.best_val_loss = 1.5f;
  s.dropout_seed = 0xFFFFFFFFFFFFFFF1ull;
  s.dropout_offset = 12345;
  s.sampler_seed = 1337;
  s.sampler_position = 96;
  s.config.model = tiny();
  s.config.max_steps = 10;
  s.data_dir = "out/gpt/data";
  s.metrics_path = "out/gpt/metrics.jsonl";
  return s;
}

void save_example(const std::string& dir, const Fixture& f) {
  train::save_checkpoint(dir, f.model, f.optimizer, example_state());
}

Fixture& fixture() {
  static Fixture* f = [] {
    auto* f = new Fixture;
    f->dir = (zero_fuzz::work_dir() / "checkpoint").string();
    save_example(f->dir, *f);
    for (int i = 0; i < 3; ++i) f->valid[i] = zero_fuzz::read_bytes(fs::path(f->dir) / kFiles[i]);
    return f;
  }();
  return *f;
}

// Puts the valid file back however fuzz_one leaves (normally or by a zero::Error).
struct Restore {
  Fixture& f;
  int which;
  ~Restore() {
    std::ofstream(fs::path(f.dir) / kFiles[which], std::ios::binary | std::ios::trunc)
        << f.valid[which];
  }
};

}  // namespace

void fuzz_one(const uint8_t* data, size_t size) {
  if (size < 1) return;
  Fixture& f = fixture();
  const int which = data[0] % 3;
  Restore restore{f, which};
  zero_fuzz::write_bytes(fs::path(f.dir) / kFiles[which], data + 1, size - 1);
  train::TrainerState state;
  if (which == 0) {
    state = train::read_trainer_state(f.dir);
    const std::string text = train::trainer_state_to_json(state);
    const std::string again =
        train::trainer_state_to_json(train::trainer_state_from_json(text, "round trip"));
    FUZZ_CHECK(again == text, "trainer.json does not survive print and parse:\n" + text);
  }
  train::load_checkpoint(f.dir, f.model, which == 1 ? nullptr : &f.optimizer, state);
}

void write_seeds(zero_fuzz::Seeds& seeds) {
  Fixture& f = fixture();
  for (int i = 0; i < 3; ++i) seeds.Add(std::string("valid_") + kFiles[i], char(i) + f.valid[i]);
  seeds.Add("trainer_floats", std::string(1, '\0') +
                                  R"({"format":"zero-gpt-checkpoint","version":1,"step":1e30,)"
                                  R"("best_val_loss":1e300,"rng":{}})");
  seeds.Add("optimizer_bad_step",
            std::string(1, '\2') + [] {
              std::string h = R"({"__metadata__":{"step":"seven"}})";
              std::string len(8, '\0');
              len[0] = static_cast<char>(h.size());
              return len + h;
            }());
}
