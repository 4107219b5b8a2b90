// Parameter and FLOP counts of a GPT from its configuration (see flops.h for the model).
#include "zero/train/flops.h"

#include "zero/core/error.h"

namespace zero::train {

int64_t gpt_num_params(const nn::GPTConfig& c, bool include_position_embeddings) {
  const int64_t C = c.n_embd;
  const int64_t per_block = 2 * C                                // ln_1 weight and bias
                            + 3 * C * C + 3 * C                  // attn.c_attn
                            + C * C + C                          // attn.c_proj
                            + 2 * C                              // ln_2
                            + 4 * C * C + 4 * C                  // mlp.c_fc
                            + 4 * C * C + C;                     // mlp.c_proj
  int64_t n = c.vocab_size * C + c.n_layer * per_block + 2 * C;  // wte (tied head), blocks, ln_f
  if (include_position_embeddings) n += c.block_size * C;        // wpe
  return n;
}

double gpt_train_flops_per_token(const nn::GPTConfig& c, int64_t seq_len) {
  ZERO_CHECK(seq_len > 0, "gpt_train_flops_per_token: expected a positive sequence length, got ",
             seq_len);
  const double n = static_cast<double>(gpt_num_params(c, false));
  return 6.0 * n + 12.0 * static_cast<double>(c.n_layer) * static_cast<double>(c.n_embd) *
                       static_cast<double>(seq_len);
}

double model_flops_utilization(double flops_per_token, double tokens_per_second,
                               double peak_flops) {
  ZERO_CHECK(peak_flops > 0, "model_flops_utilization: expected a positive peak FLOP/s, got ",
             peak_flops);
  return flops_per_token * tokens_per_second / peak_flops;
}

double h200_peak_flops(DataType dtype) {
  return dtype == DataType::BF16 || dtype == DataType::F16 ? kH200PeakBf16Flops
                                                           : kH200PeakFp32Flops;
}

}  // namespace zero::train
