// Exercise 09 test: round_to_bf16 (ex09.1) against zero::float_to_bf16_bits
// (zero/core/half.h, itself checked against a nearest-value search) over every high half
// with the low halves that decide a rounding, and over random patterns; update_loss_scale
// (ex09.2) step by step and against a plain model of the rule over long random runs.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "exercise_test.h"
#include "mixed_precision.h"
#include "zero/core/half.h"

namespace zero::ex09 {
namespace {

bool is_nan(uint32_t f32) { return (f32 & 0x7fffffffu) > 0x7f800000u; }
bool is_nan16(uint16_t b) { return (b & 0x7fffu) > 0x7f80u; }

std::string hex(uint32_t v, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%0*x", digits, v);
  return buf;
}

// round_to_bf16(bits) against half.h; a NaN must stay a NaN of the same sign.
::testing::AssertionResult rounds_like_half_h(uint32_t bits) {
  const uint16_t got = round_to_bf16(bits);
  const uint16_t want = float_to_bf16_bits(bits_to_float(bits));
  if (is_nan(bits)) {
    if (is_nan16(got) && (got & 0x8000u) == ((bits >> 16) & 0x8000u)) {
      return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure()
           << "round_to_bf16(" << hex(bits, 8) << "), a NaN, gave " << hex(got, 4)
           << ", which is not a NaN of the same sign (expected e.g. " << hex(want, 4) << ")";
  }
  if (got == want) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "round_to_bf16(" << hex(bits, 8) << ") (" << bits_to_float(bits) << ") gave "
         << hex(got, 4) << " (" << bf16_bits_to_float(got) << "), expected " << hex(want, 4) << " ("
         << bf16_bits_to_float(want) << ")";
}

// Every one of the 65536 high halves with the given low half; stops at the first failure.
void check_low_half(uint32_t low) {
  for (uint32_t high = 0; high < 0x10000u; ++high) {
    const ::testing::AssertionResult r = rounds_like_half_h((high << 16) | low);
    if (!r) {
      ADD_FAILURE() << r.message();
      return;
    }
  }
}

TEST(Ex09Test, ValuesThatFitAreKept) {
  ZERO_EXERCISE("ex09.1");
  check_low_half(0);
}

TEST(Ex09Test, RoundsToTheNearest) {
  ZERO_EXERCISE("ex09.1");
  for (const uint32_t low : {0x0001u, 0x4000u, 0x7fffu, 0x8001u, 0xc000u, 0xffffu})
    check_low_half(low);
}

TEST(Ex09Test, TiesGoToTheEvenNeighbour) {
  ZERO_EXERCISE("ex09.1");
  EXPECT_EQ(round_to_bf16(0x3f808000u), 0x3f80u) << "1 + 2^-8, half way to 1 + 2^-7: rounds to 1";
  EXPECT_EQ(round_to_bf16(0x3f818000u), 0x3f82u) << "half way between 0x3f81 and 0x3f82: up";
  check_low_half(0x8000u);
}

TEST(Ex09Test, InfinitiesStayAndHugeValuesOverflow) {
  ZERO_EXERCISE("ex09.1");
  EXPECT_EQ(round_to_bf16(0x7f800000u), 0x7f80u) << "+infinity";
  EXPECT_EQ(round_to_bf16(0xff800000u), 0xff80u) << "-infinity";
  EXPECT_EQ(round_to_bf16(0x7f7fffffu), 0x7f80u) << "FLT_MAX rounds up to infinity";
  EXPECT_EQ(round_to_bf16(0x7f7f8000u), 0x7f80u) << "the tie above BF16's largest value";
  EXPECT_EQ(round_to_bf16(0x7f7f7fffu), 0x7f7fu) << "just below that tie: the largest value";
  EXPECT_EQ(round_to_bf16(0xff7fffffu), 0xff80u) << "-FLT_MAX rounds to -infinity";
}

TEST(Ex09Test, NaNStaysNaN) {
  ZERO_EXERCISE("ex09.1");
  // Payloads only in the low half (which a plain cut would turn into infinity), only in
  // the high half, everywhere; both signs.
  for (const uint32_t nan : {0x7f800001u, 0x7f807fffu, 0x7f808000u, 0x7f80ffffu, 0x7fc00000u,
                             0x7fffffffu, 0x7fbfffffu, 0x7f810000u}) {
    EXPECT_TRUE(rounds_like_half_h(nan));
    EXPECT_TRUE(rounds_like_half_h(nan | 0x80000000u));
  }
}

TEST(Ex09Test, MatchesHalfHOnRandomPatterns) {
  ZERO_EXERCISE("ex09.1");
  uint64_t state = 17;
  for (int i = 0; i < (1 << 21); ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const ::testing::AssertionResult r = rounds_like_half_h(static_cast<uint32_t>(state >> 32));
    if (!r) {
      ADD_FAILURE() << r.message();
      return;
    }
  }
}

TEST(Ex09Test, AnOverflowSkipsTheStepAndHalvesTheScale) {
  ZERO_EXERCISE("ex09.2");
  LossScale s;
  s.good_steps = 5;
  EXPECT_FALSE(update_loss_scale(s, true)) << "a step with inf/NaN gradients must be skipped";
  EXPECT_EQ(s.scale, 32768.0f) << "the scale halves on an overflow";
  EXPECT_EQ(s.good_steps, 0) << "an overflow ends the run of good steps";
}

TEST(Ex09Test, GoodStepsAreTakenAndCounted) {
  ZERO_EXERCISE("ex09.2");
  LossScale s;
  for (int i = 1; i <= 10; ++i) {
    EXPECT_TRUE(update_loss_scale(s, false)) << "a step with finite gradients is taken";
    EXPECT_EQ(s.good_steps, i);
    EXPECT_EQ(s.scale, 65536.0f) << "no growth before growth_interval (2000) good steps";
  }
}

TEST(Ex09Test, TheScaleDoublesAfterGrowthIntervalGoodSteps) {
  ZERO_EXERCISE("ex09.2");
  LossScale s;
  s.growth_interval = 3;
  s.scale = 1024.0f;
  const float want[] = {1024, 1024, 2048, 2048, 2048, 4096, 4096};
  const int count[] = {1, 2, 0, 1, 2, 0, 1};
  for (int i = 0; i < 7; ++i) {
    EXPECT_TRUE(update_loss_scale(s, false));
    EXPECT_EQ(s.scale, want[i]) << "after good step " << i + 1 << " with growth_interval 3";
    EXPECT_EQ(s.good_steps, count[i]) << "after good step " << i + 1 << " (the count restarts "
                                      << "when the scale grows)";
  }
}

TEST(Ex09Test, AnOverflowRestartsTheCountTowardsGrowth) {
  ZERO_EXERCISE("ex09.2");
  LossScale s;
  s.growth_interval = 3;
  s.scale = 1024.0f;
  update_loss_scale(s, false);
  update_loss_scale(s, false);
  EXPECT_FALSE(update_loss_scale(s, true));
  EXPECT_EQ(s.scale, 512.0f);
  update_loss_scale(s, false);
  update_loss_scale(s, false);
  EXPECT_EQ(s.scale, 512.0f) << "two good steps after an overflow are not yet three";
  update_loss_scale(s, false);
  EXPECT_EQ(s.scale, 1024.0f) << "three good steps after the overflow: doubled";
}

TEST(Ex09Test, TheScaleStaysWithinItsBounds) {
  ZERO_EXERCISE("ex09.2");
  LossScale s;
  s.scale = 2.0f;
  update_loss_scale(s, true);
  EXPECT_EQ(s.scale, 1.0f);
  EXPECT_FALSE(update_loss_scale(s, true));
  EXPECT_EQ(s.scale, 1.0f) << "never below min_scale (1)";
  s.scale = s.max_scale;
  s.growth_interval = 1;
  EXPECT_TRUE(update_loss_scale(s, false));
  EXPECT_EQ(s.scale, 16777216.0f) << "never above max_scale (2^24)";
  EXPECT_EQ(s.good_steps, 0);
}

// The rule written out plainly, replayed against the exercise over random runs.
TEST(Ex09Test, MatchesTheRuleOverLongRandomRuns) {
  ZERO_EXERCISE("ex09.2");
  uint64_t state = 3;
  for (const int interval : {1, 2, 7, 50}) {
    LossScale s;
    s.growth_interval = interval;
    s.min_scale = 4.0f;
    s.max_scale = 65536.0f * 4;
    float scale = s.scale;
    int good = 0;
    for (int step = 0; step < 20000; ++step) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      const bool inf = (state >> 33) % 100 < (step % 4000 < 2000 ? 2u : 30u);
      bool take = true;
      if (inf) {
        scale = scale / 2 < s.min_scale ? s.min_scale : scale / 2;
        good = 0;
        take = false;
      } else if (++good == interval) {
        scale = scale * 2 > s.max_scale ? s.max_scale : scale * 2;
        good = 0;
      }
      ASSERT_EQ(update_loss_scale(s, inf), take) << "interval " << interval << ", step " << step;
      ASSERT_EQ(s.scale, scale) << "interval " << interval << ", step " << step;
      ASSERT_EQ(s.good_steps, good) << "interval " << interval << ", step " << step;
    }
  }
}

}  // namespace
}  // namespace zero::ex09
