// Exercise 10 test: the simulated ring all-reduce (ring_allreduce.h) gives every rank the
// element-wise sum, in 2(N-1) steps, with each rank sending 2(N-1)/N of the buffer; and
// the traffic factor and bus bandwidth that chapter 10 prints. All on the CPU.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "exercise_test.h"
#include "ring_allreduce.h"
#include "zero/core/error.h"

namespace zero::ex10 {
namespace {

// Rank r's buffer: small integers, so every float sum is exact whatever the order.
std::vector<std::vector<float>> buffers(int ranks, int64_t n) {
  std::vector<std::vector<float>> b(ranks, std::vector<float>(n));
  for (int r = 0; r < ranks; ++r) {
    for (int64_t i = 0; i < n; ++i) b[r][i] = static_cast<float>((r + 1) * 100 + i % 17);
  }
  return b;
}

std::vector<float> naive_sum(const std::vector<std::vector<float>>& b) {
  std::vector<float> s(b[0].size(), 0.0f);
  for (const auto& rank : b) {
    for (size_t i = 0; i < s.size(); ++i) s[i] += rank[i];
  }
  return s;
}

// "" when `got` equals `want`, else the first differing element and which chunk holds it
// (a whole 1001-element vector would bury the one that matters).
std::string first_difference(const std::vector<float>& got, const std::vector<float>& want,
                             int ranks) {
  if (got.size() != want.size()) {
    return std::to_string(got.size()) + " elements instead of " + std::to_string(want.size());
  }
  const int64_t n = static_cast<int64_t>(want.size());
  for (int64_t i = 0; i < n; ++i) {
    if (got[i] != want[i]) {
      int c = 0;
      while (chunk_begin(n, ranks, c + 1) <= i) ++c;
      return "element " + std::to_string(i) + " (chunk " + std::to_string(c) + ") is " +
             std::to_string(got[i]) + ", expected the sum " + std::to_string(want[i]);
    }
  }
  return "";
}

TEST(RingAllReduceTest, EveryRankEndsWithTheSum) {
  ZERO_EXERCISE("ex10.1");
  for (int ranks : {2, 3, 4, 8}) {
    for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{64}, int64_t{1001}}) {
      auto b = buffers(ranks, n);
      const std::vector<float> expected = naive_sum(b);
      ring_allreduce(b);
      for (int r = 0; r < ranks; ++r) {
        const std::string diff = first_difference(b[r], expected, ranks);
        EXPECT_TRUE(diff.empty()) << ranks << " ranks, " << n << " elements, rank " << r << ": "
                                  << diff;
      }
    }
  }
}

TEST(RingAllReduceTest, TwoPhasesOfNMinusOneStepsSendingTwoNMinusOneOverN) {
  ZERO_EXERCISE("ex10.1");
  auto b = buffers(4, 1000);
  const RingStats s = ring_allreduce(b);
  EXPECT_EQ(s.steps, 6) << "4 ranks: 3 reduce-scatter steps and 3 all-gather steps";
  ASSERT_EQ(s.elements_sent.size(), 4u);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(s.elements_sent[r], 1500)
        << "rank " << r << " should send one 250-element chunk in each of the 6 steps";
  }
  // Uneven chunks (10 elements over 4 ranks): every chunk still crosses N-1 links per phase.
  auto u = buffers(4, 10);
  const RingStats su = ring_allreduce(u);
  int64_t total = 0;
  for (int64_t sent : su.elements_sent) total += sent;
  EXPECT_EQ(total, 2 * 3 * 10) << "each of the 10 elements crosses 3 links in each phase";
}

TEST(RingAllReduceTest, OneRankSendsNothingAndKeepsItsBuffer) {
  ZERO_EXERCISE("ex10.1");
  auto b = buffers(1, 5);
  const std::vector<float> before = b[0];
  const RingStats s = ring_allreduce(b);
  EXPECT_EQ(s.steps, 0);
  EXPECT_EQ(s.elements_sent, std::vector<int64_t>{0});
  EXPECT_EQ(b[0], before);
}

TEST(RingAllReduceTest, TrafficFactorAndBusBandwidth) {
  ZERO_EXERCISE("ex10.2");
  EXPECT_DOUBLE_EQ(ring_traffic_factor(1), 0.0) << "one rank sends nothing";
  EXPECT_DOUBLE_EQ(ring_traffic_factor(2), 1.0) << "2 (N - 1) / N for N = 2";
  EXPECT_DOUBLE_EQ(ring_traffic_factor(3), 4.0 / 3.0) << "2 (N - 1) / N for N = 3";
  EXPECT_DOUBLE_EQ(ring_traffic_factor(8), 1.75) << "2 (N - 1) / N for N = 8";
  // 1 GB in 10 ms over 8 GPUs: algorithm bandwidth 100 GB/s, bus bandwidth 175 GB/s.
  EXPECT_DOUBLE_EQ(bus_bandwidth(1e9, 0.01, 8), 175e9);
  exercise::expect_exercise_error([] { ring_traffic_factor(0); }, "zero ranks");
}

}  // namespace
}  // namespace zero::ex10
