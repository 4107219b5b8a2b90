// Tests for exercise 02 (warp_reduce.h). tree_reduce() is checked on the CPU: with
// one bit per lane, a lane's value after k steps names exactly the lanes it has
// summed, so the schedule itself is tested, not just the final total; with floats,
// its result must match a recursive statement of the butterfly bit for bit. The
// Cuda tests run warp_sum() on a GPU and compare every lane with that same recursive
// butterfly (not with tree_reduce(), so ex02.2 is checked on its own); without a GPU
// they are skipped, never passed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "exercise_test.h"
#include "warp_reduce.h"
#include "warp_sum_gpu.h"
#include "zero/core/device.h"
#include "zero/core/philox.h"

namespace {

using ch02::kWarpSize;
using ch02::kWarpSteps;
using ch02::tree_reduce;

// 32 floats in [-1, 1) from a fixed Philox stream; not exactly representable sums,
// so a different order of additions shows in the last bits.
void random_lanes(float (&lanes)[kWarpSize], uint64_t seed) {
  for (int l = 0; l < kWarpSize; ++l) {
    lanes[l] = 2.0f * zero::philox_uniform(seed, static_cast<uint64_t>(l)) - 1.0f;
  }
}

// The butterfly stated recursively: lane l's value after `steps` steps.
float butterfly(const float (&x)[kWarpSize], int lane, int steps) {
  if (steps == 0) return x[lane];
  const int partner = lane ^ ch02::butterfly_offset(steps - 1);
  return butterfly(x, lane, steps - 1) + butterfly(x, partner, steps - 1);
}

// A sum of distinct one-bit lane values, written as the set of lanes it contains, so
// a failure says which lanes a lane summed: "{0, 16}".
std::string lane_set(uint64_t bits) {
  std::string out = "{";
  for (int j = 0; j < kWarpSize; ++j) {
    if (bits & (uint64_t{1} << j)) out += (out.size() > 1 ? ", " : "") + std::to_string(j);
  }
  if (bits >> kWarpSize) out += (out.size() > 1 ? ", " : "") + std::string("lanes counted twice");
  return out + "}";
}

// The reason a GPU test cannot run here, or "" when it can.
std::string why_no_gpu() {
#ifdef ZERO_EXERCISE_HAS_CUDA
  return zero::cuda_available() ? "" : "needs a GPU: no CUDA device is visible";
#else
  return "needs a GPU: this build has no CUDA backend (no CUDA toolkit, or ZERO_CUDA=OFF)";
#endif
}

#ifdef ZERO_EXERCISE_HAS_CUDA
std::vector<float> run_warp_sum(const std::vector<float>& values) {
  return ch02::warp_sums_on_gpu(values);
}
#else
std::vector<float> run_warp_sum(const std::vector<float>&) { return {}; }
#endif

TEST(WarpReduceTest, EveryLaneHoldsTheTotalAfterFiveSteps) {
  ZERO_EXERCISE("ex02.1");
  int64_t lanes[kWarpSize];
  for (int l = 0; l < kWarpSize; ++l) lanes[l] = l + 1;
  tree_reduce(lanes);
  for (int l = 0; l < kWarpSize; ++l) EXPECT_EQ(lanes[l], 32 * 33 / 2) << "lane " << l;
}

TEST(WarpReduceTest, AfterEachStepALaneHoldsItsGroup) {
  ZERO_EXERCISE("ex02.1");
  // Lane l starts with bit l set; sums of distinct bits are their union, so the
  // value after k steps is the set of lanes summed into it: those that differ from
  // l only in the bits of the offsets used so far (16, then 8, ...).
  for (int steps = 0; steps <= kWarpSteps; ++steps) {
    uint64_t lanes[kWarpSize];
    for (int l = 0; l < kWarpSize; ++l) lanes[l] = uint64_t{1} << l;
    tree_reduce(lanes, steps);
    int used = 0;  // the bits of the offsets of the first `steps` steps
    for (int s = 0; s < steps; ++s) used |= ch02::butterfly_offset(s);
    for (int l = 0; l < kWarpSize; ++l) {
      uint64_t expected = 0;
      for (int j = 0; j < kWarpSize; ++j) {
        if (((j ^ l) & ~used) == 0) expected |= uint64_t{1} << j;
      }
      EXPECT_EQ(lane_set(lanes[l]), lane_set(expected))
          << "the lanes summed into lane " << l << " after " << steps << " of the steps "
          << "with offsets 16, 8, 4, 2, 1";
    }
  }
}

TEST(WarpReduceTest, FloatOrderMatchesTheButterflyBitForBit) {
  ZERO_EXERCISE("ex02.1");
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    float x[kWarpSize], lanes[kWarpSize];
    random_lanes(x, seed);
    random_lanes(lanes, seed);
    tree_reduce(lanes);
    double exact = 0.0;
    for (float v : x) exact += v;
    for (int l = 0; l < kWarpSize; ++l) {
      EXPECT_EQ(lanes[l], butterfly(x, l, kWarpSteps)) << "lane " << l << ", seed " << seed;
      EXPECT_NEAR(lanes[l], exact, 1e-5) << "lane " << l << ", seed " << seed;
    }
  }
}

TEST(WarpReduceTest, WarpSumCudaGivesEveryLaneTheTotal) {
  ZERO_EXERCISE("ex02.2");
  const std::string no_gpu = why_no_gpu();
  if (!no_gpu.empty()) GTEST_SKIP() << no_gpu;
  // Lane l holds l + 1: small integers, so every order of additions gives exactly 528.
  std::vector<float> values(kWarpSize);
  for (int l = 0; l < kWarpSize; ++l) values[l] = static_cast<float>(l + 1);
  const std::vector<float> sums = run_warp_sum(values);
  for (int l = 0; l < kWarpSize; ++l) {
    EXPECT_EQ(sums[l], 528.0f) << "lane " << l << " must hold 1 + 2 + ... + 32, the warp's total";
  }
}

TEST(WarpReduceTest, WarpSumCudaMatchesTheButterflyOnEveryLane) {
  ZERO_EXERCISE("ex02.2");
  const std::string no_gpu = why_no_gpu();
  if (!no_gpu.empty()) GTEST_SKIP() << no_gpu;
  constexpr int kWarps = 8;
  std::vector<float> values(kWarps * kWarpSize);
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = 2.0f * zero::philox_uniform(7, i) - 1.0f;
  }
  const std::vector<float> sums = run_warp_sum(values);
  for (int w = 0; w < kWarps; ++w) {
    float x[kWarpSize];
    for (int l = 0; l < kWarpSize; ++l) x[l] = values[w * kWarpSize + l];
    for (int l = 0; l < kWarpSize; ++l) {
      // Bit for bit: the same additions in the same order (offsets 16, 8, 4, 2, 1).
      EXPECT_EQ(sums[w * kWarpSize + l], butterfly(x, l, kWarpSteps))
          << "warp " << w << ", lane " << l << ": expected the butterfly's sum, offsets 16 to 1";
    }
  }
}

}  // namespace
