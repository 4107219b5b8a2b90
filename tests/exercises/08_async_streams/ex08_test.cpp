// Exercise 08 test: the copy/compute overlap model and the median timing helper
// (async_timing.h). Both are checked on the CPU; one test times a known GPU busy-wait
// with the real EventTimer and skips without a GPU.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "async_timing.h"
#include "exercise_test.h"
#include "zero/core/device.h"
#include "zero/core/stream.h"

namespace zero::ex08 {
namespace {

// A timer that replays scripted durations and counts how it was used: `runs` is the
// work's run counter, so each Stop() can record how many runs the timing enclosed.
struct ScriptedTimer {
  explicit ScriptedTimer(std::vector<float> d, const int* r = nullptr)
      : durations(std::move(d)), runs(r) {}
  std::vector<float> durations;
  const int* runs = nullptr;
  int starts = 0, stops = 0;
  int runs_at_start = 0;
  std::vector<int> runs_timed;  // per Start/Stop pair
  void Start() {
    ++starts;
    runs_at_start = runs ? *runs : 0;
  }
  float Stop() {
    if (runs) runs_timed.push_back(*runs - runs_at_start);
    EXPECT_LT(stops, static_cast<int>(durations.size())) << "Stop() called more often than reps";
    return stops < static_cast<int>(durations.size()) ? durations[stops++] : 0.0f;
  }
};

TEST(OverlapModelTest, OneStreamIsFullySerial) {
  ZERO_EXERCISE("ex08.1");
  EXPECT_DOUBLE_EQ(pipelined_time_ms(10.0, 6.0, 1, 1), 16.0) << "10 ms copy, then 6 ms compute";
  EXPECT_DOUBLE_EQ(pipelined_time_ms(10.0, 6.0, 8, 1), 16.0)
      << "on one stream each chunk's copy waits for the previous chunk's compute";
}

TEST(OverlapModelTest, OneChunkCannotOverlap) {
  ZERO_EXERCISE("ex08.1");
  EXPECT_DOUBLE_EQ(pipelined_time_ms(10.0, 6.0, 1, 2), 16.0)
      << "one chunk: its compute waits for its whole copy, and the second stream has nothing";
}

TEST(OverlapModelTest, TwoStreamsGiveTheTwoStagePipeline) {
  ZERO_EXERCISE("ex08.1");
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
  ZERO_EXERCISE("ex08.1");
  EXPECT_DOUBLE_EQ(pipelined_time_ms(10.0, 10.0, 4, 2), 12.5)
      << "the first 2.5 ms copy, then four 2.5 ms computes back to back";
  EXPECT_NEAR(pipelined_time_ms(10.0, 10.0, 100, 2), 10.1, 1e-9)
      << "one 0.1 ms copy, then 100 computes of 0.1 ms back to back";
}

TEST(OverlapModelTest, MoreStreamsThanTwoDoNotBeatTheSlowerEngine) {
  ZERO_EXERCISE("ex08.1");
  EXPECT_DOUBLE_EQ(pipelined_time_ms(8.0, 4.0, 4, 4), pipelined_time_ms(8.0, 4.0, 4, 2))
      << "four streams share the one copy engine and the one compute engine, as two do";
  EXPECT_DOUBLE_EQ(pipelined_time_ms(8.0, 4.0, 4, 4), 9.0)
      << "8 ms of copies one after the other on the copy engine, then the last 1 ms compute";
}

TEST(MedianTimeTest, WarmupRunsAreNotTimed) {
  ZERO_EXERCISE("ex08.2");
  int runs = 0;
  ScriptedTimer timer{{5.0f, 1.0f, 3.0f}, &runs};
  const float ms = median_time_ms(
      timer, [&] { ++runs; }, 2, 3);
  EXPECT_EQ(runs, 5) << "2 warm-up runs and 3 timed ones";
  EXPECT_EQ(timer.starts, 3) << "one Start() per timed run, none for the warm-up";
  EXPECT_EQ(timer.stops, 3) << "one Stop() per timed run, none for the warm-up";
  EXPECT_EQ(timer.runs_timed, std::vector<int>({1, 1, 1}))
      << "each Start()/Stop() pair must enclose exactly one run of the work";
  EXPECT_FLOAT_EQ(ms, 3.0f);
}

TEST(MedianTimeTest, MedianIgnoresOneSlowRun) {
  ZERO_EXERCISE("ex08.2");
  ScriptedTimer timer{{1.0f, 1.2f, 50.0f, 0.9f, 1.1f}};
  EXPECT_FLOAT_EQ(median_time_ms(
                      timer, [] {}, 0, 5),
                  1.1f);
}

TEST(MedianTimeTest, EvenCountAveragesTheMiddleTwo) {
  ZERO_EXERCISE("ex08.2");
  ScriptedTimer timer{{4.0f, 1.0f, 2.0f, 9.0f}};
  EXPECT_FLOAT_EQ(median_time_ms(
                      timer, [] {}, 0, 4),
                  3.0f);
}

TEST(MedianTimeTest, CudaMedianOfABusyWait) {
  ZERO_EXERCISE("ex08.2");
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
