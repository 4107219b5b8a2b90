// The two presets of train_gpt (see config.h).
#include "zero/train/config.h"

namespace zero::train {

TrainConfig TrainConfig::Reference() {
  TrainConfig c;  // the defaults of the struct are nanoGPT's shakespeare_char values
  c.model = nn::GPTConfig{};
  return c;
}

TrainConfig TrainConfig::SmallCpu() {
  TrainConfig c;
  c.model.block_size = 64;
  c.model.n_layer = 4;
  c.model.n_head = 4;
  c.model.n_embd = 128;
  c.model.dropout = 0.1f;
  c.batch_size = 16;
  c.lr = 2e-3f;  // a small model tolerates a larger step, and has few steps to take
  c.min_lr = 2e-4f;
  c.warmup = 50;
  c.max_steps = 600;
  return c;
}

}  // namespace zero::train
