// Tests of exercise 03 (solutions/03_device/copy_model.h): the copy-time model
// t(n) = latency + n / bandwidth, its half-bandwidth size, and the fit of both
// numbers to measurements, which must keep the latency even when large copies are
// noisy (plain least squares does not).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "copy_model.h"

namespace ch03 {
namespace {

constexpr double kLatency = 10e-6;   // 10 us
constexpr double kBandwidth = 25e9;  // 25 GB/s

// Sizes 1 KB, 4 KB, ... 256 MB: the chapter's sweep.
std::vector<double> sweep() {
  std::vector<double> sizes;
  for (double n = 1024; n <= 256.0 * 1024 * 1024; n *= 4) sizes.push_back(n);
  return sizes;
}

TEST(CopyModelTest, SecondsIsLatencyPlusStreamingTime) {
  const CopyModel m{kLatency, kBandwidth};
  EXPECT_DOUBLE_EQ(m.Seconds(0), 10e-6);
  EXPECT_DOUBLE_EQ(m.Seconds(25e9), 1.0 + 10e-6);
  EXPECT_DOUBLE_EQ(m.Seconds(1e6), 10e-6 + 40e-6);
  // A 4 KB copy is almost all latency: it reaches under 2% of the bandwidth.
  EXPECT_LT(m.EffectiveBytesPerS(4096), 0.02 * kBandwidth);
  EXPECT_GT(m.EffectiveBytesPerS(1e9), 0.99 * kBandwidth);
}

TEST(CopyModelTest, HalfBandwidthSize) {
  const CopyModel m{kLatency, kBandwidth};
  EXPECT_DOUBLE_EQ(m.HalfBandwidthBytes(), 250e3);  // 10 us * 25 GB/s
  EXPECT_NEAR(m.EffectiveBytesPerS(m.HalfBandwidthBytes()), kBandwidth / 2, 1.0);
}

TEST(CopyModelTest, FitRecoversAnExactModel) {
  std::vector<CopySample> samples;
  for (double n : sweep()) samples.push_back({n, kLatency + n / kBandwidth});
  const CopyModel m = fit_copy_model(samples);
  EXPECT_NEAR(m.latency_s, kLatency, 1e-3 * kLatency);
  EXPECT_NEAR(m.bytes_per_s, kBandwidth, 1e-6 * kBandwidth);
}

// +-3% noise on every time. On the 256 MB copy that is 320 us, 32 times the latency:
// a fit of absolute errors would lose the latency entirely; a fit of relative
// errors keeps both numbers.
TEST(CopyModelTest, FitOfNoisyMeasurementsKeepsTheLatency) {
  std::vector<CopySample> samples;
  int i = 0;
  for (double n : sweep()) {
    const double noise = (i++ % 2 == 0) ? 1.03 : 0.97;
    samples.push_back({n, (kLatency + n / kBandwidth) * noise});
  }
  const CopyModel m = fit_copy_model(samples);
  EXPECT_NEAR(m.latency_s, kLatency, 0.15 * kLatency);
  EXPECT_NEAR(m.bytes_per_s, kBandwidth, 0.05 * kBandwidth);
  // The prediction the chapter makes: a 64 KB batch of token ids.
  EXPECT_NEAR(m.Seconds(65536), kLatency + 65536 / kBandwidth, 0.1 * m.Seconds(65536));
}

TEST(CopyModelTest, FitNeedsTwoDifferentSizes) {
  const CopyModel good = fit_copy_model({{1e3, 1e-5}, {1e6, 2e-5}});
  EXPECT_NEAR(good.bytes_per_s, 999e3 / 1e-5, 1.0);
  EXPECT_THROW(fit_copy_model({{1e3, 1e-5}}), zero::Error);
  try {
    fit_copy_model({{1e3, 1e-5}, {1e3, 2e-5}});
    FAIL() << "expected an error for one size measured twice";
  } catch (const zero::Error& e) {
    EXPECT_NE(std::string(e.what()).find("two different sizes"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ch03
