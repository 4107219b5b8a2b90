// Tests of dynamic loss scaling's rule (train/loss_scaler.cpp): halve and restart the
// count on a non-finite step, double after growth_interval good steps in a row, stay a
// finite positive float, do nothing when disabled; and of the unscaling pass in
// clip_grad_norm that the trainer pairs it with.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>

#include "tests/support/test_support.h"
#include "zero/optim/grad_clip.h"
#include "zero/train/loss_scaler.h"

namespace zero::train {
namespace {

using testing::expect_error_mentions;

LossScalerOptions every(int64_t interval) {
  LossScalerOptions o;
  o.growth_interval = interval;
  return o;
}

TEST(LossScalerTest, StartsAtTwoToTheSixteenAndDisabledIsOne) {
  EXPECT_EQ(LossScaler(true).scale(), 65536.0f);
  EXPECT_EQ(LossScaler(true).options().growth_interval, 2000);
  LossScaler off(false);
  EXPECT_EQ(off.scale(), 1.0f);
  EXPECT_TRUE(off.Update(true));
  EXPECT_FALSE(off.Update(false));  // the step is still skipped, the scale untouched
  EXPECT_EQ(off.scale(), 1.0f);
  EXPECT_EQ(off.good_steps(), 0);
}

TEST(LossScalerTest, NonFiniteStepHalvesAndRestartsTheCount) {
  LossScaler s(true, every(3));
  EXPECT_TRUE(s.Update(true));
  EXPECT_TRUE(s.Update(true));
  EXPECT_EQ(s.good_steps(), 2);
  EXPECT_FALSE(s.Update(false));
  EXPECT_EQ(s.scale(), 32768.0f);
  EXPECT_EQ(s.good_steps(), 0);
  EXPECT_FALSE(s.Update(false));
  EXPECT_EQ(s.scale(), 16384.0f);
}

TEST(LossScalerTest, DoublesAfterIntervalGoodStepsInARow) {
  LossScaler s(true, every(3));
  s.Update(true);
  s.Update(true);
  EXPECT_EQ(s.scale(), 65536.0f);
  s.Update(true);  // the third in a row
  EXPECT_EQ(s.scale(), 131072.0f);
  EXPECT_EQ(s.good_steps(), 0);
  // An overflow in the middle of a run of good steps restarts it.
  s.Update(true);
  s.Update(true);
  s.Update(false);
  EXPECT_EQ(s.scale(), 65536.0f);
  s.Update(true);
  s.Update(true);
  EXPECT_EQ(s.scale(), 65536.0f);
  s.Update(true);
  EXPECT_EQ(s.scale(), 131072.0f);
}

TEST(LossScalerTest, DefaultIntervalIs2000) {
  LossScaler s(true);
  for (int i = 0; i < 1999; ++i) s.Update(true);
  EXPECT_EQ(s.scale(), 65536.0f);
  s.Update(true);
  EXPECT_EQ(s.scale(), 131072.0f);
}

TEST(LossScalerTest, ScaleStaysFiniteAndPositive) {
  LossScalerOptions o = every(1);
  o.init_scale = 2e38f;
  LossScaler big(true, o);
  big.Update(true);  // 4e38 would be infinite: kept
  EXPECT_EQ(big.scale(), 2e38f);
  o.init_scale = FLT_MIN;
  LossScaler small(true, o);
  small.Update(false);
  EXPECT_EQ(small.scale(), FLT_MIN);
}

TEST(LossScalerTest, StateRoundTripsAndBadSettingsAreRefused) {
  LossScaler s(true, every(10));
  s.SetState(512.0f, 7);
  EXPECT_EQ(s.scale(), 512.0f);
  EXPECT_EQ(s.good_steps(), 7);
  s.Update(true);
  s.Update(true);
  s.Update(true);  // 7 + 3 = 10 good steps
  EXPECT_EQ(s.scale(), 1024.0f);
  expect_error_mentions([&] { s.SetState(0.0f, 0); }, {"finite, positive", "0"});
  expect_error_mentions([&] { s.SetState(INFINITY, 0); }, {"finite, positive"});
  expect_error_mentions([&] { s.SetState(2.0f, -1); }, {"good_steps >= 0"});
  expect_error_mentions([&] { LossScaler(false).SetState(2.0f, 0); }, {"disabled", "scale 1"});
  LossScalerOptions bad;
  bad.growth_factor = 1.0f;
  expect_error_mentions([&] { LossScaler(true, bad); }, {"growth_factor > 1"});
  bad = {};
  bad.backoff_factor = 1.0f;
  expect_error_mentions([&] { LossScaler(true, bad); }, {"backoff_factor in (0, 1)"});
  bad = {};
  bad.growth_interval = 0;
  expect_error_mentions([&] { LossScaler(true, bad); }, {"growth_interval >= 1"});
  bad = {};
  bad.init_scale = -1.0f;
  expect_error_mentions([&] { LossScaler(true, bad); }, {"finite, positive"});
}

// The trainer's other half: clip_grad_norm with the loss scale divides it out of the
// norm and of the gradients in the same pass.
TEST(LossScalerTest, ClipGradNormUnscalesAndReportsTheTrueNorm) {
  Tensor p = Tensor::Zeros({2}).SetRequiresGrad();
  const float s = 1024.0f;
  p.SetGrad(Tensor::From({3.0f * s, 4.0f * s}, {2}));  // true gradient (3, 4), norm 5
  EXPECT_FLOAT_EQ(optim::clip_grad_norm({p}, 100.0f, s), 5.0f);
  EXPECT_EQ(p.Grad().ToVector<float>(), (std::vector<float>{3.0f, 4.0f}));  // unscaled only
  p.SetGrad(Tensor::From({3.0f * s, 4.0f * s}, {2}));
  EXPECT_FLOAT_EQ(optim::clip_grad_norm({p}, 1.0f, s), 5.0f);  // unscaled and clipped to 1
  const std::vector<float> g = p.Grad().ToVector<float>();
  EXPECT_NEAR(g[0], 0.6f, 1e-6f);
  EXPECT_NEAR(g[1], 0.8f, 1e-6f);
  // An overflow: the norm is not finite and the gradients are left for the caller.
  p.SetGrad(Tensor::From({INFINITY, 1.0f}, {2}));
  EXPECT_FALSE(std::isfinite(optim::clip_grad_norm({p}, 1.0f, s)));
  EXPECT_EQ(p.Grad().ToVector<float>()[1], 1.0f);
  expect_error_mentions([&] { optim::clip_grad_norm({p}, 1.0f, 0.0f); }, {"grad_scale"});
}

}  // namespace
}  // namespace zero::train
