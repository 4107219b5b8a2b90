// Tests of the parameter and FLOP counts (zero/train/flops.h).
#include "zero/train/flops.h"

#include <gtest/gtest.h>

namespace zero::train {
namespace {

TEST(FlopsTest, ParameterCountMatchesTheModel) {
  for (const nn::GPTConfig& c :
       {nn::GPTConfig{11, 8, 2, 2, 16, 0.0f}, nn::GPTConfig{65, 32, 3, 4, 24, 0.1f}}) {
    const nn::GPT model(c, 1);
    EXPECT_EQ(gpt_num_params(c), model.NumParameters());
    EXPECT_EQ(gpt_num_params(c, false), model.NumParameters() - c.block_size * c.n_embd);
  }
}

TEST(FlopsTest, ReferenceConfiguration) {
  const nn::GPTConfig c;  // 6 x 384, block 256, vocab 65
  // Per block 12 C^2 + 13 C (with biases), plus wte, ln_f and wpe: 10.77M in all, 10.67M
  // without wpe (nanoGPT prints 10.65M: its default model has no biases).
  EXPECT_EQ(gpt_num_params(c), 10770816);
  EXPECT_EQ(gpt_num_params(c, false), 10672512);
  const double expected = 6.0 * 10672512 + 12.0 * 6 * 384 * 256;
  EXPECT_DOUBLE_EQ(gpt_train_flops_per_token(c, 256), expected);
  // 491k tokens/s (PyTorch eager's rate on the char model, H200) at 67 TFLOP/s:
  EXPECT_NEAR(model_flops_utilization(expected, 491e3, 67e12), expected * 491e3 / 67e12, 1e-12);
  EXPECT_THROW(model_flops_utilization(expected, 1, 0), Error);
}

// MFU divides by the rate of the arithmetic the GEMMs run in: a BF16 step that reached 60%
// of the FP32 peak (chapter 11's run at 49b3624) uses 4% of the BF16 Tensor Cores.
TEST(FlopsTest, PeakFollowsTheDtype) {
  EXPECT_DOUBLE_EQ(h200_peak_flops(DataType::F32), 67e12);
  EXPECT_DOUBLE_EQ(h200_peak_flops(DataType::BF16), 990e12);
  EXPECT_DOUBLE_EQ(h200_peak_flops(DataType::F16), 990e12);
  const double flops = 0.605 * 67e12;  // FLOP/s of that run
  EXPECT_NEAR(model_flops_utilization(flops, 1, h200_peak_flops(DataType::BF16)), 0.041, 1e-3);
}

}  // namespace
}  // namespace zero::train
