// Tests of the 16-bit float conversions (core/half.h), bit for bit against references
// that share no code with them: F16 against the compiler's own _Float16 conversion
// (IEEE round to nearest even), BF16 against a search for the nearest of the two
// candidate values in double. Sampled over the whole float range (every 4099th bit
// pattern), plus every pattern that sits exactly on, or one ulp beside, a rounding tie,
// plus the special values; and every one of the 65536 patterns of each type must come
// back unchanged from float.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "zero/core/half.h"

namespace zero {
namespace {

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// The floats to convert: a sweep of bit patterns, the ties and their neighbours for a
// cut at `tie_bit`, and the special values.
std::vector<float> samples(int tie_bit) {
  std::vector<float> v;
  for (uint64_t u = 0; u <= 0xffffffffull; u += 4099) v.push_back(from_bits(static_cast<uint32_t>(u)));
  const uint32_t tie = 1u << tie_bit, low = (tie << 1) - 1;
  for (uint32_t high = 0; high < (1u << 16); high += 7) {
    const uint32_t base = (high << 16) & ~low;
    for (uint32_t d : {tie - 1, tie, tie + 1}) v.push_back(from_bits(base | d));
    v.push_back(from_bits((base + (tie << 1)) | tie));  // a tie above an odd kept bit
  }
  for (float f : {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65519.99f, 65520.0f, 65536.0f,
                  std::numeric_limits<float>::max(), std::numeric_limits<float>::min(),
                  std::numeric_limits<float>::denorm_min(), std::ldexp(1.0f, -24),
                  std::ldexp(1.0f, -25), std::ldexp(1.5f, -25), std::ldexp(1.0f, -14),
                  std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()}) {
    v.push_back(f);
  }
  return v;
}

// The BF16 bits nearest to finite or infinite `f`, ties to even, by comparing the two
// candidates around it in double.
uint16_t nearest_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint16_t down = static_cast<uint16_t>(u >> 16);  // towards zero
  if ((u & 0xffffu) == 0) return down;
  const uint16_t up = static_cast<uint16_t>(down + 1);  // away from zero (may be infinity)
  const double x = std::fabs(static_cast<double>(f));
  const double lo = std::fabs(static_cast<double>(bf16_bits_to_float(down)));
  // Above the largest finite BF16 the next value up would be 2^128: rounding compares
  // with that, and a value at or past the midpoint becomes infinity.
  const bool up_is_inf = (up & 0x7fffu) == 0x7f80u;
  const double hi = up_is_inf ? std::ldexp(1.0, 128)
                              : std::fabs(static_cast<double>(bf16_bits_to_float(up)));
  if (x - lo < hi - x) return down;
  if (hi - x < x - lo) return up;
  return (down & 1u) ? up : down;
}

TEST(HalfTest, Bf16RoundsToTheNearestEven) {
  int64_t checked = 0;
  for (float f : samples(15)) {
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_bf16_bits(f), nearest_bf16(f)) << "float " << f;
    ++checked;
  }
  EXPECT_GT(checked, 1000000);
  EXPECT_EQ(float_to_bf16_bits(std::numeric_limits<float>::max()), 0x7f80) << "rounds up to inf";
}

#ifdef __FLT16_MAX__
TEST(HalfTest, F16MatchesTheCompilersConversion) {
  int64_t checked = 0;
  for (float f : samples(12)) {
    if (std::isnan(f)) continue;
    const _Float16 h = static_cast<_Float16>(f);
    uint16_t want;
    std::memcpy(&want, &h, 2);
    ASSERT_EQ(float_to_f16_bits(f), want) << "float " << f;
    ++checked;
  }
  EXPECT_GT(checked, 1000000);
}
#else
TEST(HalfTest, F16MatchesTheCompilersConversion) {
  GTEST_SKIP() << "this compiler has no _Float16 to compare with";
}
#endif

TEST(HalfTest, EveryPatternSurvivesTheTripThroughFloat) {
  for (uint32_t b = 0; b < (1u << 16); ++b) {
    const uint16_t bits = static_cast<uint16_t>(b);
    const bool bf16_nan = (b & 0x7f80u) == 0x7f80u && (b & 0x7fu) != 0;
    const bool f16_nan = (b & 0x7c00u) == 0x7c00u && (b & 0x3ffu) != 0;
    if (bf16_nan) {
      EXPECT_TRUE(std::isnan(bf16_bits_to_float(bits)));
    } else {
      ASSERT_EQ(float_to_bf16_bits(bf16_bits_to_float(bits)), bits) << std::hex << b;
    }
    if (f16_nan) {
      EXPECT_TRUE(std::isnan(f16_bits_to_float(bits)));
    } else {
      ASSERT_EQ(float_to_f16_bits(f16_bits_to_float(bits)), bits) << std::hex << b;
    }
  }
}

TEST(HalfTest, NanStaysNanWithItsSign) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(static_cast<float>(bf16(nan))));
  EXPECT_TRUE(std::isnan(static_cast<float>(f16(-nan))));
  EXPECT_TRUE(std::signbit(static_cast<float>(f16(-nan))));
  EXPECT_TRUE(std::isnan(static_cast<float>(bf16(from_bits(0x7f800001u)))));  // a signalling NaN
}

TEST(HalfTest, TheRangesAreTheFormatsOwn) {
  EXPECT_EQ(static_cast<float>(f16(65504.0f)), 65504.0f);
  EXPECT_TRUE(std::isinf(static_cast<float>(f16(65520.0f))));
  EXPECT_EQ(static_cast<float>(f16(65519.0f)), 65504.0f);
  EXPECT_EQ(static_cast<float>(f16(std::ldexp(1.0f, -24))), std::ldexp(1.0f, -24));
  EXPECT_EQ(static_cast<float>(f16(std::ldexp(1.0f, -26))), 0.0f);
  EXPECT_FALSE(std::isinf(static_cast<float>(bf16(1e38f))));  // BF16 has FP32's range
  EXPECT_EQ(static_cast<float>(bf16(1.0f + 1.0f / 256)), 1.0f);  // a tie, kept bit even
  EXPECT_EQ(static_cast<float>(bf16(1.0f + 3.0f / 256)), 1.0f + 4.0f / 256);  // a tie, odd
}

}  // namespace
}  // namespace zero
