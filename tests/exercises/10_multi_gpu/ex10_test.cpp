// Exercise 10 test: the simulated ring all-reduce (ring_allreduce.h) gives every rank the
// element-wise sum, in 2(N-1) steps, with each rank sending 2(N-1)/N of the buffer; and
// the traffic factor and bus bandwidth that chapter 10 prints. All on the CPU.
#include <gtest/gtest.h>

#include <vector>

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

TEST(RingAllReduceTest, EveryRankEndsWithTheSum) {
  for (int ranks : {2, 3, 4, 8}) {
    for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{64}, int64_t{1001}}) {
      auto b = buffers(ranks, n);
      const std::vector<float> expected = naive_sum(b);
      ring_allreduce(b);
      for (int r = 0; r < ranks; ++r) {
        EXPECT_EQ(b[r], expected) << ranks << " ranks, " << n << " elements, rank " << r;
      }
    }
  }
}

TEST(RingAllReduceTest, TwoPhasesOfNMinusOneStepsSendingTwoNMinusOneOverN) {
  auto b = buffers(4, 1000);
  const RingStats s = ring_allreduce(b);
  EXPECT_EQ(s.steps, 6);  // 2 (N - 1)
  ASSERT_EQ(s.elements_sent.size(), 4u);
  for (int64_t sent : s.elements_sent) EXPECT_EQ(sent, 1500);  // 2 * 3/4 * 1000
  // Uneven chunks (10 elements over 4 ranks): every chunk still crosses N-1 links per phase.
  auto u = buffers(4, 10);
  const RingStats su = ring_allreduce(u);
  int64_t total = 0;
  for (int64_t sent : su.elements_sent) total += sent;
  EXPECT_EQ(total, 2 * 3 * 10);
}

TEST(RingAllReduceTest, OneRankSendsNothingAndKeepsItsBuffer) {
  auto b = buffers(1, 5);
  const std::vector<float> before = b[0];
  const RingStats s = ring_allreduce(b);
  EXPECT_EQ(s.steps, 0);
  EXPECT_EQ(s.elements_sent, std::vector<int64_t>{0});
  EXPECT_EQ(b[0], before);
}

TEST(RingAllReduceTest, TrafficFactorAndBusBandwidth) {
  EXPECT_DOUBLE_EQ(ring_traffic_factor(1), 0.0);
  EXPECT_DOUBLE_EQ(ring_traffic_factor(2), 1.0);
  EXPECT_DOUBLE_EQ(ring_traffic_factor(8), 1.75);
  // 1 GB in 10 ms over 8 GPUs: algorithm bandwidth 100 GB/s, bus bandwidth 175 GB/s.
  EXPECT_DOUBLE_EQ(bus_bandwidth(1e9, 0.01, 8), 175e9);
  EXPECT_THROW(ring_traffic_factor(0), Error);
}

}  // namespace
}  // namespace zero::ex10
