// Tests of optim::lr_at (zero/optim/lr_schedule.cpp): exact values of the linear warmup,
// the cosine decay and the floor for the reference run (1e-3 -> 1e-4, warmup 100,
// 5000 steps), a schedule without warmup, and the argument checks.
#include <gtest/gtest.h>

#include <cmath>

#include "zero/core/error.h"
#include "zero/optim/lr_schedule.h"

namespace zero {
namespace {

using optim::lr_at;

TEST(LrScheduleTest, WarmupRisesLinearlyToLrMax) {
  EXPECT_FLOAT_EQ(lr_at(0, 100, 5000, 1e-3f, 1e-4f), 1e-5f);   // (0 + 1) / 100
  EXPECT_FLOAT_EQ(lr_at(49, 100, 5000, 1e-3f, 1e-4f), 5e-4f);  // 50 / 100
  EXPECT_FLOAT_EQ(lr_at(99, 100, 5000, 1e-3f, 1e-4f), 1e-3f);  // the last warmup step
}

TEST(LrScheduleTest, CosineDecaysFromLrMaxToLrMin) {
  EXPECT_FLOAT_EQ(lr_at(100, 100, 5000, 1e-3f, 1e-4f), 1e-3f);     // cos(0) = 1
  EXPECT_FLOAT_EQ(lr_at(2550, 100, 5000, 1e-3f, 1e-4f), 5.5e-4f);  // halfway: the mean
  // A quarter of the way: 1e-4 + 9e-4 * (1 + cos(pi / 4)) / 2.
  EXPECT_FLOAT_EQ(lr_at(1325, 100, 5000, 1e-3f, 1e-4f),
                  static_cast<float>(1e-4 + 9e-4 * (1 + std::sqrt(0.5)) / 2));
  const float last = lr_at(4999, 100, 5000, 1e-3f, 1e-4f);
  EXPECT_GT(last, 1e-4f);
  EXPECT_LT(last, 1.0001e-4f);
}

TEST(LrScheduleTest, FloorAfterMaxSteps) {
  EXPECT_FLOAT_EQ(lr_at(5000, 100, 5000, 1e-3f, 1e-4f), 1e-4f);
  EXPECT_FLOAT_EQ(lr_at(123456, 100, 5000, 1e-3f, 1e-4f), 1e-4f);
}

TEST(LrScheduleTest, WithoutWarmupStartsAtLrMax) {
  EXPECT_FLOAT_EQ(lr_at(0, 0, 10, 2.0f, 0.0f), 2.0f);
  EXPECT_FLOAT_EQ(lr_at(5, 0, 10, 2.0f, 0.0f), 1.0f);
  EXPECT_FLOAT_EQ(lr_at(10, 0, 10, 2.0f, 0.0f), 0.0f);
}

TEST(LrScheduleTest, RejectsInconsistentArguments) {
  EXPECT_THROW(lr_at(0, 200, 100, 1e-3f, 1e-4f), Error);   // warmup > max_steps
  EXPECT_THROW(lr_at(-1, 10, 100, 1e-3f, 1e-4f), Error);   // negative step
  EXPECT_THROW(lr_at(0, 10, 100, 1e-4f, 1e-3f), Error);    // lr_min > lr_max
}

}  // namespace
}  // namespace zero
