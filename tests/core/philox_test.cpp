// Tests of the Philox generator (core/philox.h): the Random123 known-answer vectors
// for Philox4x32-10, the statistics of the uniform and normal transforms, and the
// random factories (Tensor::Rand, Tensor::Randn) that draw from a Generator.
#include <cmath>
#include <cstdint>
#include <vector>

#include "tests/support/test_support.h"
#include "zero/core/philox.h"

namespace zero {
namespace {

using testing::expect_close;

void expect_block(const PhiloxBlock& got, const PhiloxBlock& expected) {
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(got.x[k], expected.x[k]) << "word " << k << ": got 0x" << std::hex << got.x[k]
                                       << ", expected 0x" << expected.x[k];
  }
}

// Known answers from Random123's kat_vectors (Salmon et al., SC'11), philox4x32 with 10 rounds.
TEST(PhiloxTest, KnownAnswerZeroCounterAndKey) {
  expect_block(philox4x32_10(PhiloxBlock{{0, 0, 0, 0}}, 0, 0),
               PhiloxBlock{{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}});
}

TEST(PhiloxTest, KnownAnswerAllOnes) {
  const uint32_t f = 0xffffffffu;
  expect_block(philox4x32_10(PhiloxBlock{{f, f, f, f}}, f, f),
               PhiloxBlock{{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}});
}

TEST(PhiloxTest, KnownAnswerPiDigits) {
  expect_block(philox4x32_10(PhiloxBlock{{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}},
                             0xa4093822u, 0x299f31d0u),
               PhiloxBlock{{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}});
}

TEST(PhiloxTest, SixtyFourBitFormSplitsCounterAndKeyIntoLowAndHighWords) {
  const uint64_t counter = 0x0123456789abcdefull, key = 0xfedcba9876543210ull;
  expect_block(philox4x32(counter, key),
               philox4x32_10(PhiloxBlock{{0x89abcdefu, 0x01234567u, 0, 0}}, 0x76543210u,
                             0xfedcba98u));
}

TEST(PhiloxTest, WordsWalkThroughBlocksInOrder) {
  const PhiloxBlock b0 = philox4x32(0, 7), b1 = philox4x32(1, 7);
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(philox_word(7, k), b0.x[k]);
    EXPECT_EQ(philox_word(7, 4 + k), b1.x[k]);
  }
}

TEST(PhiloxTest, UniformIsInUnitIntervalWithMeanAndVarianceOfU01) {
  constexpr int kCount = 100000;
  double sum = 0.0, sum_sq = 0.0;
  for (int i = 0; i < kCount; ++i) {
    const float u = philox_uniform(42, i);
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    sum += u;
    sum_sq += static_cast<double>(u) * u;
  }
  const double mean = sum / kCount, var = sum_sq / kCount - mean * mean;
  // Standard error of the mean is sqrt(1/12 / 1e5) ~ 0.0009; allow about 5 of them.
  EXPECT_NEAR(mean, 0.5, 0.005);
  EXPECT_NEAR(var, 1.0 / 12.0, 0.002);
}

TEST(PhiloxTest, NormalHasZeroMeanAndUnitVariance) {
  constexpr int kCount = 100000;
  double sum = 0.0, sum_sq = 0.0;
  for (int i = 0; i < kCount; ++i) {
    const float z = philox_normal(3, i);
    ASSERT_TRUE(std::isfinite(z)) << "sample " << i;
    sum += z;
    sum_sq += static_cast<double>(z) * z;
  }
  const double mean = sum / kCount, var = sum_sq / kCount - mean * mean;
  // Standard errors: mean 0.003, variance 0.0045.
  EXPECT_NEAR(mean, 0.0, 0.015);
  EXPECT_NEAR(var, 1.0, 0.025);
}

TEST(PhiloxTest, DifferentSeedsGiveDifferentStreams) {
  int same = 0;
  for (int i = 0; i < 64; ++i) same += philox_word(1, i) == philox_word(2, i);
  EXPECT_LE(same, 1);
}

// ---------------------------------------------------------------- factories

class PhiloxTensorTest : public testing::DeviceTest {};

TEST_P(PhiloxTensorTest, RandMatchesThePhiloxFormulaAndAdvancesTheGenerator) {
  Generator gen(11);
  gen.Reserve(5);  // start mid-block
  Tensor t = Tensor::Rand({3, 7}, TensorOption().OnDevice(device()), &gen);
  EXPECT_EQ(gen.offset(), 5u + 21u);
  std::vector<float> expected(21);
  for (int i = 0; i < 21; ++i) expected[i] = philox_uniform(11, 5 + i);
  expect_close(t, expected, 0.0f, 0.0f);
}

TEST_P(PhiloxTensorTest, RandnIsReproducibleForOneSeedAndAdvancesTheGenerator) {
  const TensorOption opt = TensorOption().OnDevice(device());
  Generator g1(2024), g2(2024);
  Tensor a = Tensor::Randn({4, 5}, opt, &g1);
  Tensor b = Tensor::Randn({4, 5}, opt, &g2);
  expect_close(a, b, 0.0f, 0.0f);
  EXPECT_EQ(g1.offset(), 40u);  // two words per normal

  // The next draw continues the stream: it differs from the first, and equals the
  // formula at the following normals.
  Tensor c = Tensor::Randn({4, 5}, opt, &g1);
  const std::vector<float> va = a.ToVector<float>(), vc = c.ToVector<float>();
  int same = 0;
  for (size_t i = 0; i < va.size(); ++i) same += va[i] == vc[i];
  EXPECT_EQ(same, 0);
  std::vector<float> expected(20);
  for (int i = 0; i < 20; ++i) expected[i] = philox_normal(2024, 20 + i);
  expect_close(c, expected, 1e-6f, 1e-6f);
}

TEST_P(PhiloxTensorTest, RandnFromDifferentSeedsDiffers) {
  const TensorOption opt = TensorOption().OnDevice(device());
  Generator g1(1), g2(2);
  const std::vector<float> a = Tensor::Randn({64}, opt, &g1).ToVector<float>();
  const std::vector<float> b = Tensor::Randn({64}, opt, &g2).ToVector<float>();
  int same = 0;
  for (size_t i = 0; i < a.size(); ++i) same += a[i] == b[i];
  EXPECT_LE(same, 1);
}

ZERO_INSTANTIATE_DEVICE_TEST(PhiloxTensorTest);

}  // namespace
}  // namespace zero
