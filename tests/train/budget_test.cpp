// Tests of the memory budgets (zero/train/budget.h): the parameter count is exact, absurd
// sizes are refused at once with the estimate and the device named, and the sizes a real
// run uses pass.
#include "zero/train/budget.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "zero/core/device_memory.h"
#include "zero/core/error.h"
#include "zero/nn/gpt.h"

namespace zero::train {
namespace {

using ::testing::HasSubstr;

TEST(BudgetTest, ParameterCountMatchesTheModel) {
  for (const nn::GPTConfig& c : {nn::GPTConfig{11, 8, 2, 2, 16, 0.0f},
                                 nn::GPTConfig{119, 64, 3, 4, 48, 0.0f}}) {
    const nn::GPT model(c, 1);
    EXPECT_EQ(gpt_parameter_count(c), static_cast<double>(model.NumParameters()))
        << "n_layer " << c.n_layer << ", n_embd " << c.n_embd;
  }
}

TEST(BudgetTest, CpuMemoryIsThePhysicalRam) {
  const int64_t bytes = device_total_memory(Device::Cpu());
  EXPECT_GT(bytes, int64_t{64} << 20);  // any machine that builds Zero has 64 MiB
}

TEST(BudgetTest, AbsurdRunIsRefusedWithTheEstimate) {
  TrainConfig c = TrainConfig::SmallCpu();
  c.model.vocab_size = 119;
  c.model.n_layer = 100000000;
  try {
    check_fits(training_bytes_lower_bound(c), Device::Cpu(), "training this model");
    FAIL() << "100 million layers must not fit";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("training this model needs at least"));
    EXPECT_THAT(e.what(), HasSubstr("GiB of memory; cpu has"));
  }
}

TEST(BudgetTest, ManySamplesAreRefusedAndFewPass) {
  const nn::GPTConfig m{119, 64, 3, 4, 48, 0.0f};
  EXPECT_THROW(check_fits(sampling_bytes_lower_bound(m, 1000000000, 300), Device::Cpu(), "x"),
               Error);
  EXPECT_NO_THROW(check_fits(sampling_bytes_lower_bound(m, 4, 300), Device::Cpu(), "x"));
  // KV cache 2 x 3 x 64 x 48 floats, logits 119, ids 300: per sequence, four bytes each.
  EXPECT_EQ(sampling_bytes_lower_bound(m, 2, 300), 2.0 * (2 * 3 * 64 * 48 + 119 + 300) * 4);
}

TEST(BudgetTest, TheReferenceRunFits) {
  TrainConfig c = TrainConfig::SmallCpu();
  c.model.vocab_size = 119;
  EXPECT_NO_THROW(check_fits(training_bytes_lower_bound(c), Device::Cpu(), "x"));
}

}  // namespace
}  // namespace zero::train
