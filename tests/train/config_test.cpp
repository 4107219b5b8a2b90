// Tests of the presets and the --device parser (zero/train/config.h).
#include "zero/train/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "zero/train/flops.h"

namespace zero::train {
namespace {

using ::testing::HasSubstr;

TEST(ConfigTest, Presets) {
  const TrainConfig ref = TrainConfig::Reference();
  EXPECT_EQ(ref.model.n_layer, 6);
  EXPECT_EQ(ref.model.n_embd, 384);
  EXPECT_EQ(ref.model.block_size, 256);
  EXPECT_EQ(ref.batch_size, 64);
  EXPECT_FLOAT_EQ(ref.model.dropout, 0.2f);
  EXPECT_EQ(ref.max_steps, 5000);
  const TrainConfig cpu = TrainConfig::SmallCpu();
  EXPECT_EQ(cpu.model.n_embd % cpu.model.n_head, 0);
  EXPECT_LT(gpt_num_params(cpu.model), gpt_num_params(ref.model) / 50);
  EXPECT_LE(cpu.warmup, cpu.max_steps);
}

TEST(ConfigTest, ResolveDevice) {
  EXPECT_TRUE(resolve_device("cpu").is_cpu());
  EXPECT_EQ(resolve_device("auto").is_cuda(), cuda_available());
  EXPECT_THAT([] { resolve_device("gpu"); },
              ::testing::ThrowsMessage<Error>(HasSubstr("auto, cpu, cuda or cuda:N, got 'gpu'")));
  EXPECT_THROW(resolve_device("cuda:x"), Error);
  if (!cuda_available()) {
    EXPECT_THAT([] { resolve_device("cuda"); },
                ::testing::ThrowsMessage<Error>(HasSubstr("no CUDA device")));
  }
}

}  // namespace
}  // namespace zero::train
