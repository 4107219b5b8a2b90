// Memory lower bounds and the check against the device's total (budget.h).
#include "zero/train/budget.h"

#include <cstdio>

#include "zero/core/device_memory.h"
#include "zero/core/error.h"

namespace zero::train {

double gpt_parameter_count(const nn::GPTConfig& m) {
  const double C = static_cast<double>(m.n_embd), L = static_cast<double>(m.n_layer);
  const double per_block = 12 * C * C + 13 * C;  // qkv, projection, MLP (4C), two LayerNorms
  return (static_cast<double>(m.vocab_size) + static_cast<double>(m.block_size)) * C +
         L * per_block + 2 * C;
}

double training_bytes_lower_bound(const TrainConfig& c) {
  const double positions = static_cast<double>(c.batch_size) * static_cast<double>(c.model.block_size);
  const double activations =
      positions * static_cast<double>(c.model.n_embd) * static_cast<double>(c.model.n_layer) * 4 * 4;
  return 16 * gpt_parameter_count(c.model) + activations;
}

double sampling_bytes_lower_bound(const nn::GPTConfig& m, int64_t count, int64_t new_tokens) {
  const double kv = 2 * static_cast<double>(m.n_layer) * static_cast<double>(m.block_size) *
                    static_cast<double>(m.n_embd);
  const double per_sequence = kv + static_cast<double>(m.vocab_size) + static_cast<double>(new_tokens);
  return static_cast<double>(count) * per_sequence * 4;
}

void check_fits(double bytes, Device device, const std::string& what) {
  const double total = static_cast<double>(device_total_memory(device));
  if (bytes <= total) return;
  char need[64], have[64];
  std::snprintf(need, sizeof need, "%.3g GiB", bytes / 1073741824.0);
  std::snprintf(have, sizeof have, "%.3g GiB", total / 1073741824.0);
  ZERO_CHECK(false, what, " needs at least ", need, " of memory; ", device.ToString(), " has ",
             have, " in all");
}

}  // namespace zero::train
