// Exercise 08 test: the copy/compute overlap model and the median timing helper
// (async_timing.h). Both are checked on the CPU; one test times a known GPU busy-wait
// with the real EventTimer and skips without a GPU.
#include <gtest/gtest.h>

#include <vector>

#include "async_timing.h"
#include "zero/core/device.h"
#include "zero/cuda/stream.h"

namespace zero::ex08 {
namespace {

// A timer that replays scripted durations and counts how it was used.
struct ScriptedTimer {
  std::vector<float> durations;
  int starts = 0, stops = 0;
  void Start() { ++starts; }
  float Stop() { return durations.at(stops++); }
};

TEST(OverlapModelTest, OneStreamIsFullySerial) {
  EXPECT_DOUBLE_EQ(pipelined_time_ms(10.0, 6.0, 1, 1), 16.0);
  EXPECT_DOUBLE_EQ(pipelined_time_ms(10.0, 6.0, 8, 1), 16.0);
}

TEST(OverlapModelTest, OneChunkCannotOverlap) {
  EXPECT_DOUBLE_EQ(pipelined_time_ms(10.0, 6.0, 1, 2), 16.0);
}

TEST(OverlapModelTest, TwoStreamsGiveTheTwoStagePipeline) {
  // First chunk's copy and compute, then the slower stage for every other chunk:
  // (c + t) / k + (k - 1) / k * max(c, t).
  for (const int k : {2, 3, 4, 8, 16}) {
    for (const auto& [c, t] : std::vector<std::pair<double, double>>{{8, 8}, {8, 2}, {2, 8}}) {
      const double expected = (c + t) / k + (k - 1.0) / k * std::max(c, t);
      EXPECT_NEAR(pipelined_time_ms(c, t, k, 2), expected, 1e-9)
          << "k=" << k << " c=" << c << " t=" << t;
    }
  }
}

TEST(OverlapModelTest, EqualCopyAndComputeApproachHalfTheSerialTime) {
  EXPECT_DOUBLE_EQ(pipelined_time_ms(10.0, 10.0, 4, 2), 12.5);  // 2.5 + 4 * 2.5
  EXPECT_NEAR(pipelined_time_ms(10.0, 10.0, 100, 2), 10.1, 1e-9);
}

TEST(OverlapModelTest, MoreStreamsThanTwoDoNotBeatTheSlowerEngine) {
  EXPECT_DOUBLE_EQ(pipelined_time_ms(8.0, 4.0, 4, 4), pipelined_time_ms(8.0, 4.0, 4, 2));
  EXPECT_GE(pipelined_time_ms(8.0, 4.0, 4, 4), 8.0);
}

TEST(MedianTimeTest, WarmupRunsAreNotTimed) {
  ScriptedTimer timer{{5.0f, 1.0f, 3.0f}};
  int runs = 0;
  const float ms = median_time_ms(
      timer, [&] { ++runs; }, 2, 3);
  EXPECT_EQ(runs, 5);
  EXPECT_EQ(timer.starts, 3);
  EXPECT_EQ(timer.stops, 3);
  EXPECT_FLOAT_EQ(ms, 3.0f);
}

TEST(MedianTimeTest, MedianIgnoresOneSlowRun) {
  ScriptedTimer timer{{1.0f, 1.2f, 50.0f, 0.9f, 1.1f}};
  EXPECT_FLOAT_EQ(median_time_ms(
                      timer, [] {}, 0, 5),
                  1.1f);
}

TEST(MedianTimeTest, EvenCountAveragesTheMiddleTwo) {
  ScriptedTimer timer{{4.0f, 1.0f, 2.0f, 9.0f}};
  EXPECT_FLOAT_EQ(median_time_ms(
                      timer, [] {}, 0, 4),
                  3.0f);
}

TEST(MedianTimeTest, CudaMedianOfABusyWait) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device visible on this machine";
  cuda::EventTimer timer;
  const cuda::Stream stream = cuda::Stream::Default();
  const float ms = median_time_ms(
      timer, [&] { cuda::busy_wait(1000.0, stream); }, 1, 5);
  EXPECT_GE(ms, 0.8f) << "a 1 ms busy-wait cannot finish sooner";
  EXPECT_LT(ms, 1000.0f);
}

}  // namespace
}  // namespace zero::ex08
