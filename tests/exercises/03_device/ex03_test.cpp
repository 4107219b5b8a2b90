// Tests of exercise 03 (solutions/03_device/copy_model.h): the copy-time model
// t(n) = latency + n / bandwidth, its half-bandwidth size, and the fit of both
// numbers to measurements, which must keep the latency even when large copies are
// noisy (plain least squares does not). The fit is compared with a weighted least-
// squares solution computed here in another way (uncentred normal equations of the
// relative error), so any other weighting shows.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "copy_model.h"
#include "exercise_test.h"

namespace ch03 {
namespace {

using zero::exercise::expect_exercise_error;

constexpr double kLatency = 10e-6;   // 10 us
constexpr double kBandwidth = 25e9;  // 25 GB/s

// Sizes 1 KB, 4 KB, ... 256 MB: the chapter's sweep.
std::vector<double> sweep() {
  std::vector<double> sizes;
  for (double n = 1024; n <= 256.0 * 1024 * 1024; n *= 4) sizes.push_back(n);
  return sizes;
}

// The chapter's sweep with the model's times, each scaled by one of these factors:
// uneven noise of up to 3%, so different weightings give visibly different fits.
std::vector<CopySample> noisy_sweep() {
  const double factors[] = {1.03, 0.97, 1.01, 1.02, 0.98, 0.975, 1.025, 0.99, 1.0, 1.03, 0.97, 1.015};
  std::vector<CopySample> samples;
  size_t i = 0;
  for (double n : sweep()) {
    samples.push_back({n, (kLatency + n / kBandwidth) * factors[i++ % 12]});
  }
  return samples;
}

// The line a + b n that minimises sum(((a + b n_i - t_i) / t_i)^2), written as plain
// least squares of 1 on the features u_i = 1 / t_i, v_i = n_i / t_i and solved from
// its 2x2 normal equations with Cramer's rule. Returns {a, b}.
struct Line {
  double intercept, slope;
};
Line relative_error_fit(const std::vector<CopySample>& samples) {
  double suu = 0, suv = 0, svv = 0, su = 0, sv = 0;
  for (const CopySample& s : samples) {
    const double u = 1.0 / s.seconds, v = s.bytes / s.seconds;
    suu += u * u;
    suv += u * v;
    svv += v * v;
    su += u;
    sv += v;
  }
  const double det = suu * svv - suv * suv;
  return {(su * svv - suv * sv) / det, (suu * sv - suv * su) / det};
}

TEST(CopyModelTest, SecondsIsLatencyPlusStreamingTime) {
  ZERO_EXERCISE("ex03.1");
  const CopyModel m{kLatency, kBandwidth};
  EXPECT_DOUBLE_EQ(m.Seconds(0), 10e-6) << "a copy of 0 bytes still costs the latency";
  EXPECT_DOUBLE_EQ(m.Seconds(25e9), 1.0 + 10e-6) << "25 GB at 25 GB/s: 1 s plus the latency";
  EXPECT_DOUBLE_EQ(m.Seconds(1e6), 10e-6 + 40e-6) << "1 MB at 25 GB/s: 40 us plus the latency";
  // A 4 KB copy is almost all latency: it reaches under 2% of the bandwidth.
  EXPECT_LT(m.EffectiveBytesPerS(4096), 0.02 * kBandwidth);
  EXPECT_GT(m.EffectiveBytesPerS(1e9), 0.99 * kBandwidth);
}

TEST(CopyModelTest, HalfBandwidthSize) {
  ZERO_EXERCISE("ex03.2");
  const CopyModel m{kLatency, kBandwidth};
  const double half = m.HalfBandwidthBytes();
  EXPECT_DOUBLE_EQ(half, 250e3) << "10 us of latency at 25 GB/s: 250 kB stream in 10 us";
  // The copy of that size reaches half the bandwidth (computed here, not with Seconds()).
  EXPECT_NEAR(half / (kLatency + half / kBandwidth), kBandwidth / 2, 1.0);
}

TEST(CopyModelTest, FitRecoversAnExactModel) {
  ZERO_EXERCISE("ex03.3");
  std::vector<CopySample> samples;
  for (double n : sweep()) samples.push_back({n, kLatency + n / kBandwidth});
  const CopyModel m = fit_copy_model(samples);
  EXPECT_NEAR(m.latency_s, kLatency, 1e-3 * kLatency) << "times without noise: the latency";
  EXPECT_NEAR(m.bytes_per_s, kBandwidth, 1e-6 * kBandwidth) << "times without noise: the bandwidth";
}

// Up to 3% noise on every time. On the 256 MB copy that is 320 us, 32 times the
// latency: a fit of absolute errors would lose the latency entirely; a fit of relative
// errors keeps both numbers.
TEST(CopyModelTest, FitOfNoisyMeasurementsKeepsTheLatency) {
  ZERO_EXERCISE("ex03.3");
  const CopyModel m = fit_copy_model(noisy_sweep());
  EXPECT_NEAR(m.latency_s, kLatency, 0.15 * kLatency)
      << "3% noise on the large copies must not swamp the latency: weight by 1 / t^2";
  EXPECT_NEAR(m.bytes_per_s, kBandwidth, 0.05 * kBandwidth);
  // The prediction the chapter makes: a 64 KB batch of token ids.
  const double predicted = m.latency_s + 65536 / m.bytes_per_s;
  EXPECT_NEAR(predicted, kLatency + 65536 / kBandwidth, 0.1 * predicted);
}

TEST(CopyModelTest, FitMinimisesTheRelativeError) {
  ZERO_EXERCISE("ex03.3");
  const std::vector<CopySample> samples = noisy_sweep();
  const Line best = relative_error_fit(samples);
  ASSERT_GT(best.intercept, 0);  // no clamping involved in this comparison
  const CopyModel m = fit_copy_model(samples);
  EXPECT_NEAR(m.latency_s, best.intercept, 1e-6 * best.intercept)
      << "the latency of the least-squares line with weights 1 / t^2 (relative errors)";
  EXPECT_NEAR(m.bytes_per_s, 1.0 / best.slope, 1e-6 / best.slope)
      << "the bandwidth (1 / slope) of the least-squares line with weights 1 / t^2";
}

TEST(CopyModelTest, FitOfTwoSamplesGoesThroughBoth) {
  ZERO_EXERCISE("ex03.3");
  const CopyModel m = fit_copy_model({{1e3, 1e-5}, {1e6, 2e-5}});
  EXPECT_NEAR(m.bytes_per_s, 999e3 / 1e-5, 1.0) << "999 kB more take 10 us longer";
  EXPECT_NEAR(m.latency_s, 1e-5 - 1e3 * 1e-5 / 999e3, 1e-12);
}

TEST(CopyModelTest, FitNeverGivesANegativeLatency) {
  ZERO_EXERCISE("ex03.3");
  // The line through these two points crosses n = 0 at about -0.5 us.
  const CopyModel m = fit_copy_model({{1e3, 0.5e-6}, {1e6, 1e-3}});
  EXPECT_EQ(m.latency_s, 0.0) << "an intercept below zero must become a latency of 0";
  EXPECT_NEAR(m.bytes_per_s, 999e3 / (1e-3 - 0.5e-6), 1e-6 * m.bytes_per_s)
      << "the slope is still the line's";
}

TEST(CopyModelTest, FitRejectsMeasurementsWithoutASlope) {
  ZERO_EXERCISE("ex03.3");
  expect_exercise_error([] { fit_copy_model({{1e3, 1e-5}, {1e3, 2e-5}}); },
                        "one size measured twice (all sizes equal: no slope to fit)");
  expect_exercise_error([] { fit_copy_model({{1e3, 2e-5}, {1e6, 1e-5}}); },
                        "a larger copy that takes less time (bandwidth would be negative)");
  EXPECT_THROW(fit_copy_model({{1e3, 1e-5}}), zero::Error) << "one measurement fits no line";
}

TEST(CopyModelTest, FitRejectsTimesThatAreNotPositive) {
  ZERO_EXERCISE("ex03.3");
  expect_exercise_error([] { fit_copy_model({{1e3, 0.0}, {1e6, 2e-5}}); }, "a time of 0 s");
  // The line through these still rises, so only the check of the times can reject them.
  expect_exercise_error([] { fit_copy_model({{1e3, -1e-5}, {1e6, 2e-5}}); }, "a negative time");
}

}  // namespace
}  // namespace ch03
