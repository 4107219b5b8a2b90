// Tests of the presets and the --device and --dtype parsers (zero/train/config.h).
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

TEST(ConfigTest, ResolveDtype) {
  EXPECT_EQ(resolve_dtype("auto", Device::Cpu()), DataType::F32);
  EXPECT_EQ(resolve_dtype("fp32", Device::Cpu()), DataType::F32);
  EXPECT_EQ(resolve_dtype("bf16", Device::Cpu()), DataType::BF16);  // the CPU takes all three
  EXPECT_EQ(resolve_dtype("fp16", Device::Cpu()), DataType::F16);
  EXPECT_THAT([] { resolve_dtype("f16", Device::Cpu()); },
              ::testing::ThrowsMessage<Error>(HasSubstr("auto, fp32, bf16 or fp16, got 'f16'")));
  EXPECT_STREQ(dtype_flag_name(DataType::BF16), "bf16");
  EXPECT_STREQ(dtype_flag_name(DataType::F16), "fp16");
  EXPECT_STREQ(dtype_flag_name(DataType::F32), "fp32");
  EXPECT_THAT([] { check_compute_dtype(DataType::I32, Device::Cpu()); },
              ::testing::ThrowsMessage<Error>(HasSubstr("i32")));
  if (cuda_available()) {
    const bool ampere = cuda_compute_capability(0) >= 80;
    EXPECT_EQ(resolve_dtype("auto", Device::Cuda(0)), ampere ? DataType::BF16 : DataType::F32);
    if (!ampere) {
      EXPECT_THAT([] { resolve_dtype("bf16", Device::Cuda(0)); },
                  ::testing::ThrowsMessage<Error>(HasSubstr("8.0 or newer")));
    }
  }
}

}  // namespace
}  // namespace zero::train
