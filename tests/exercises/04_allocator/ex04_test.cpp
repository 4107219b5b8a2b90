// Tests of exercise 04 (solutions/04_allocator/best_fit.h): rounding, reuse, best
// fit, the "at most twice the request" rule, the statistics, the out-of-memory
// retry, and agreement with Zero's own CachingPool on a long random sequence. A fake
// raw allocator hands out addresses and counts calls, so no GPU is needed.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "best_fit.h"
#include "exercise_test.h"

namespace ch04 {
namespace {

using zero::exercise::expect_exercise_error;

// Never-dereferenced addresses from a fixed capacity; counts calls.
class FakeRaw : public zero::RawAllocator {
 public:
  explicit FakeRaw(size_t capacity = size_t{1} << 40) : capacity_(capacity) {}
  void* Allocate(size_t bytes) override {
    ++allocate_calls;
    if (in_use + bytes > capacity_) return nullptr;
    in_use += bytes;
    next_ += size_t{1} << 32;
    return reinterpret_cast<void*>(next_);
  }
  void Free(void*, size_t bytes) override {
    ++free_calls;
    in_use -= bytes;
  }
  std::string Name() const override { return "fake"; }

  size_t in_use = 0;
  int allocate_calls = 0, free_calls = 0;

 private:
  size_t capacity_;
  uintptr_t next_ = 0;
};

TEST(FreeListTest, RoundsUpToTheGranularity) {
  ZERO_EXERCISE("ex04.1");
  FakeRaw raw;
  FreeList list(raw, 512);
  EXPECT_EQ(list.RoundUp(0), 512u) << "a zero-byte request still gets one unit";
  EXPECT_EQ(list.RoundUp(1), 512u);
  EXPECT_EQ(list.RoundUp(511), 512u);
  EXPECT_EQ(list.RoundUp(512), 512u) << "a multiple of the granularity stays as it is";
  EXPECT_EQ(list.RoundUp(513), 1024u);
  EXPECT_EQ(list.RoundUp(3000), 3072u);
  // A 5 GiB tensor is an ordinary GPU allocation: size_t all the way.
  const size_t five_gib = size_t{5} << 30;
  EXPECT_EQ(list.RoundUp(five_gib + 1), five_gib + 512) << "requests past 4 GiB must not wrap";
  FreeList fine(raw, 16);
  EXPECT_EQ(fine.RoundUp(0), 16u);
  EXPECT_EQ(fine.RoundUp(17), 32u);
}

TEST(FreeListTest, TakeAllocatesTheRoundedSize) {
  ZERO_EXERCISE("ex04.2");
  FakeRaw raw;
  FreeList list(raw, 512);
  EXPECT_NE(list.Take(1000), nullptr);
  EXPECT_EQ(raw.in_use, 1024u) << "the raw allocator must be asked for the rounded size";
  EXPECT_EQ(list.stats().live_bytes, 1024u);
  EXPECT_EQ(list.stats().reserved_bytes, 1024u);
  EXPECT_EQ(list.stats().misses, 1u);
  EXPECT_EQ(list.stats().hits, 0u);
  EXPECT_EQ(list.stats().raw_allocs, 1u);
}

TEST(FreeListTest, ReusesAFreedBlock) {
  ZERO_EXERCISE("ex04.2 ex04.3");
  FakeRaw raw;
  FreeList list(raw, 512);
  void* a = list.Take(4000);
  list.Give(a);
  EXPECT_EQ(list.stats().cached_bytes, 4096u) << "a given-back block is cached";
  EXPECT_EQ(list.stats().live_bytes, 0u);
  EXPECT_EQ(list.Take(4096), a) << "4000 and 4096 round to the same 4096: an exact fit";
  EXPECT_EQ(list.stats().cached_bytes, 0u) << "a hit takes its block out of the cache";
  EXPECT_EQ(list.stats().live_bytes, 4096u);
  EXPECT_EQ(list.stats().hits, 1u);
  EXPECT_EQ(list.stats().misses, 1u);
  EXPECT_EQ(list.stats().raw_allocs, 1u);
  EXPECT_EQ(raw.allocate_calls, 1);
}

TEST(FreeListTest, BestFitPicksTheSmallestBlockThatFits) {
  ZERO_EXERCISE("ex04.2 ex04.3");
  FakeRaw raw;
  FreeList list(raw, 512);
  void* big = list.Take(8192);
  void* mid = list.Take(6144);
  void* small = list.Take(2048);
  list.Give(big);
  list.Give(small);
  list.Give(mid);
  EXPECT_EQ(list.Take(5000), mid);    // 2048 is too small; 6144 fits better than 8192
  EXPECT_EQ(list.Take(5000), big);    // 8192 <= 2 * 5120
  EXPECT_EQ(list.Take(1500), small);  // 2048 <= 2 * 1536
  EXPECT_EQ(list.stats().hits, 3u);
  EXPECT_EQ(raw.allocate_calls, 3);
}

TEST(FreeListTest, RefusesABlockMoreThanTwiceTheRequest) {
  ZERO_EXERCISE("ex04.2 ex04.3");
  FakeRaw raw;
  FreeList list(raw, 512);
  void* block = list.Take(4096);
  list.Give(block);
  void* small = list.Take(1024);  // 4096 > 2 * 1024: a small tensor must not pin 4 KB
  EXPECT_NE(small, block);
  EXPECT_EQ(list.stats().misses, 2u);
  EXPECT_EQ(list.stats().cached_bytes, 4096u);
  EXPECT_EQ(list.Take(2048), block) << "a block of exactly twice the request is allowed";
  EXPECT_EQ(list.stats().live_bytes, 1024u + 4096u) << "the whole 4096-byte block is in use";
}

TEST(FreeListTest, TheTwiceRuleComparesWithTheRoundedRequest) {
  ZERO_EXERCISE("ex04.2 ex04.3");
  FakeRaw raw;
  FreeList list(raw, 512);
  void* block = list.Take(4096);
  list.Give(block);
  // 1600 bytes round to 2048, and 4096 <= 2 * 2048 (though 4096 > 2 * 1600).
  EXPECT_EQ(list.Take(1600), block) << "compare the block with twice the rounded request";
  EXPECT_EQ(list.stats().hits, 1u);
}

TEST(FreeListTest, StatisticsThroughASequenceAndRelease) {
  ZERO_EXERCISE("ex04.2 ex04.3");
  FakeRaw raw;
  FreeList list(raw, 512);
  void* a = list.Take(1000);  // 1024
  void* b = list.Take(3000);  // 3072
  EXPECT_EQ(list.stats().live_bytes, 4096u);
  EXPECT_EQ(list.stats().peak_bytes, 4096u);
  EXPECT_EQ(list.stats().reserved_bytes, 4096u);
  list.Give(a);
  EXPECT_EQ(list.stats().live_bytes, 3072u);
  EXPECT_EQ(list.stats().cached_bytes, 1024u);
  EXPECT_EQ(list.stats().reserved_bytes, 4096u);
  EXPECT_EQ(list.stats().peak_bytes, 4096u) << "the peak stays when blocks are given back";
  void* c = list.Take(500);  // reuses a's 1024 bytes: 4096 live again, not more
  EXPECT_EQ(c, a);
  EXPECT_EQ(list.stats().live_bytes, 4096u);
  list.Give(c);
  EXPECT_EQ(list.stats().peak_bytes, 4096u) << "the peak is the largest live total so far";
  list.Give(b);
  list.Release();
  EXPECT_EQ(list.stats().cached_bytes, 0u);
  EXPECT_EQ(list.stats().reserved_bytes, 0u);
  EXPECT_EQ(list.stats().raw_frees, 2u);
  EXPECT_EQ(raw.in_use, 0u);
  EXPECT_EQ(raw.free_calls, 2);
  expect_exercise_error([&] { list.Give(a); }, "a block given back twice (it is no longer live)");
}

TEST(FreeListTest, OutOfMemoryReleasesTheCacheAndRetriesOnce) {
  ZERO_EXERCISE("ex04.2 ex04.3");
  FakeRaw raw(4096);
  FreeList list(raw, 512);
  list.Give(list.Take(2048));
  list.Give(list.Take(512));  // 2048 > 2 * 512: a second block; 2560 cached
  void* p = list.Take(3072);  // 1536 left: fails, releases the cache, succeeds
  EXPECT_NE(p, nullptr) << "when the raw allocator is full, Release() the cache and try again";
  EXPECT_EQ(raw.allocate_calls, 4) << "two blocks, then one failed call and one retry";
  EXPECT_EQ(list.stats().raw_frees, 2u) << "both cached blocks go back to the raw allocator";
  EXPECT_EQ(list.stats().reserved_bytes, 3072u);
  expect_exercise_error([&] { list.Take(2048); },
                        "a request the raw allocator cannot serve even after Release()");
  EXPECT_EQ(list.stats().live_bytes, 3072u);
}

// The learner's FreeList and Zero's CachingPool follow one policy, so on the same
// sequence of requests they must count the same hits, misses and bytes.
TEST(FreeListTest, AgreesWithZerosCachingPool) {
  ZERO_EXERCISE("ex04.1 ex04.2 ex04.3");
  FakeRaw raw_a, raw_b;
  FreeList list(raw_a, 512);
  zero::CachingPool pool(raw_b, 512);
  std::mt19937 rng(4);
  std::vector<void*> mine, zeros;
  for (int step = 0; step < 2000; ++step) {
    if (!mine.empty() && rng() % 2 == 0) {
      const size_t i = rng() % mine.size();
      list.Give(mine[i]);
      pool.Free(zeros[i]);
      mine.erase(mine.begin() + i);
      zeros.erase(zeros.begin() + i);
    } else {
      const size_t bytes = (size_t{1} << (rng() % 16)) + rng() % 3000;
      mine.push_back(list.Take(bytes));
      zeros.push_back(pool.Allocate(bytes));
    }
  }
  const zero::MemoryStats a = list.stats(), b = pool.Stats();
  // a: your FreeList, b: Zero's CachingPool, after the same 2000 random requests.
  EXPECT_EQ(a.hits, b.hits) << "hits";
  EXPECT_EQ(a.misses, b.misses) << "misses";
  EXPECT_EQ(a.live_bytes, b.live_bytes) << "live bytes";
  EXPECT_EQ(a.peak_bytes, b.peak_bytes) << "peak bytes";
  EXPECT_EQ(a.reserved_bytes, b.reserved_bytes) << "reserved bytes";
  EXPECT_EQ(a.cached_bytes, b.cached_bytes) << "cached bytes";
  EXPECT_GT(a.hits, 300u);  // the sequence really exercises reuse
  for (void* p : zeros) pool.Free(p);
}

}  // namespace
}  // namespace ch04
