// Tests for exercise 01 (launch_math.h): blocks_for() must give every element a
// thread with no block to spare, and global_index() must tile the array so that a
// launch, simulated here block by block and thread by thread with the kernel's
// `i < n` guard, writes each element exactly once. No GPU needed.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "exercise_test.h"
#include "launch_math.h"

namespace {

using ch01::blocks_for;
using ch01::global_index;

const int64_t kSizes[] = {0, 1, 2, 31, 32, 33, 255, 256, 257, 1000, 4097, 65536, 65537};
const int64_t kBlockSizes[] = {32, 128, 256, 1024};

TEST(LaunchMathTest, BlocksForKnownValues) {
  ZERO_EXERCISE("ex01.1");
  EXPECT_EQ(blocks_for(0, 256), 0) << "no elements need no blocks";
  EXPECT_EQ(blocks_for(1, 256), 1) << "one element still needs a block";
  EXPECT_EQ(blocks_for(255, 256), 1) << "a partial block must be rounded up";
  EXPECT_EQ(blocks_for(256, 256), 1) << "an exact multiple needs no spare block";
  EXPECT_EQ(blocks_for(257, 256), 2) << "one element past a full block needs a second";
  EXPECT_EQ(blocks_for(1000, 256), 4);
  EXPECT_EQ(blocks_for(int64_t{1} << 28, 256), int64_t{1} << 20);
  // Past 2^32 elements, and one element more than a multiple: 32-bit arithmetic
  // wraps, and float division rounds the last element away.
  EXPECT_EQ(blocks_for((int64_t{1} << 40) + 1, 256), (int64_t{1} << 32) + 1)
      << "n = 2^40 + 1 needs 2^32 + 1 blocks: keep every step in 64-bit integers";
}

TEST(LaunchMathTest, BlocksForIsTheSmallestGridThatCoversN) {
  ZERO_EXERCISE("ex01.1");
  for (int64_t threads : kBlockSizes) {
    for (int64_t n : kSizes) {
      const int64_t blocks = blocks_for(n, threads);
      EXPECT_GE(blocks * threads, n) << "n = " << n << ", threads = " << threads;
      EXPECT_LT((blocks - 1) * threads, n)  // one block fewer would not do
          << "n = " << n << ", threads = " << threads;
    }
  }
}

TEST(LaunchMathTest, GlobalIndexTilesBlocksInOrder) {
  ZERO_EXERCISE("ex01.2");
  EXPECT_EQ(global_index(0, 256, 0), 0);
  EXPECT_EQ(global_index(0, 256, 255), 255);
  EXPECT_EQ(global_index(1, 256, 0), 256);
  EXPECT_EQ(global_index(3, 256, 231), 999);
  EXPECT_EQ(global_index(2, 32, 5), 69);
  // blockIdx.x * blockDim.x past 2^32: must not wrap around.
  EXPECT_EQ(global_index(9000000, 1024, 5), int64_t{9216000005})
      << "block 9000000 of 1024 threads starts past 2^32: multiply in 64 bits";
}

TEST(LaunchMathTest, SimulatedLaunchWritesEachElementExactlyOnce) {
  ZERO_EXERCISE("ex01.1 ex01.2");
  for (int64_t threads : kBlockSizes) {
    for (int64_t n : kSizes) {
      std::vector<int> writes(static_cast<size_t>(n), 0);
      const int64_t blocks = blocks_for(n, threads);
      int64_t guarded = 0;
      for (int64_t block = 0; block < blocks; ++block) {
        for (int64_t t = 0; t < threads; ++t) {
          const int64_t i = global_index(block, threads, t);
          ASSERT_GE(i, 0);
          if (i < n) {
            ++writes[static_cast<size_t>(i)];
          } else {
            ++guarded;
          }
        }
      }
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(writes[static_cast<size_t>(i)], 1)
            << "element " << i << " of n = " << n << ", threads = " << threads;
      }
      // Only the tail of the last block is idle.
      EXPECT_EQ(guarded, blocks * threads - n) << "n = " << n << ", threads = " << threads;
      EXPECT_LT(guarded, threads) << "n = " << n << ", threads = " << threads;
    }
  }
}

}  // namespace
