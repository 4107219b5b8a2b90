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

namespace ch04 {
namespace {

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
  FakeRaw raw;
  FreeList list(raw, 512);
  EXPECT_EQ(list.RoundUp(0), 512u);
  EXPECT_EQ(list.RoundUp(1), 512u);
  EXPECT_EQ(list.RoundUp(512), 512u);
  EXPECT_EQ(list.RoundUp(513), 1024u);
  list.Take(1000);
  EXPECT_EQ(raw.in_use, 1024u);
  EXPECT_EQ(list.stats().live_bytes, 1024u);
}

TEST(FreeListTest, ReusesAFreedBlock) {
  FakeRaw raw;
  FreeList list(raw, 512);
  void* a = list.Take(4000);
  list.Give(a);
  EXPECT_EQ(list.Take(4096), a);  // 4000 and 4096 round to the same 4096
  EXPECT_EQ(list.stats().hits, 1u);
  EXPECT_EQ(list.stats().misses, 1u);
  EXPECT_EQ(list.stats().raw_allocs, 1u);
  EXPECT_EQ(raw.allocate_calls, 1);
}

TEST(FreeListTest, BestFitPicksTheSmallestBlockThatFits) {
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
  FakeRaw raw;
  FreeList list(raw, 512);
  void* block = list.Take(4096);
  list.Give(block);
  void* small = list.Take(1024);  // 4096 > 2 * 1024: a small tensor must not pin 4 KB
  EXPECT_NE(small, block);
  EXPECT_EQ(list.stats().misses, 2u);
  EXPECT_EQ(list.stats().cached_bytes, 4096u);
  EXPECT_EQ(list.Take(2048), block);  // exactly twice: allowed
  EXPECT_EQ(list.stats().live_bytes, 1024u + 4096u);  // the whole block is in use
}

TEST(FreeListTest, StatisticsThroughASequenceAndRelease) {
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
  EXPECT_EQ(list.stats().peak_bytes, 4096u);
  list.Give(b);
  list.Release();
  EXPECT_EQ(list.stats().cached_bytes, 0u);
  EXPECT_EQ(list.stats().reserved_bytes, 0u);
  EXPECT_EQ(list.stats().raw_frees, 2u);
  EXPECT_EQ(raw.in_use, 0u);
  EXPECT_EQ(raw.free_calls, 2);
  EXPECT_THROW(list.Give(a), zero::Error);  // already given back
}

TEST(FreeListTest, OutOfMemoryReleasesTheCacheAndRetriesOnce) {
  FakeRaw raw(4096);
  FreeList list(raw, 512);
  list.Give(list.Take(2048));
  list.Give(list.Take(512));  // 2048 > 2 * 512: a second block; 2560 cached
  void* p = list.Take(3072);  // 1536 left: fails, releases the cache, succeeds
  EXPECT_NE(p, nullptr);
  EXPECT_EQ(raw.allocate_calls, 4);
  EXPECT_EQ(list.stats().raw_frees, 2u);
  EXPECT_EQ(list.stats().reserved_bytes, 3072u);
  EXPECT_THROW(list.Take(2048), zero::Error);  // nothing cached to release: a clear error
  EXPECT_EQ(list.stats().live_bytes, 3072u);
}

// The learner's FreeList and Zero's CachingPool follow one policy, so on the same
// sequence of requests they must count the same hits, misses and bytes.
TEST(FreeListTest, AgreesWithZerosCachingPool) {
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
  EXPECT_EQ(a.hits, b.hits);
  EXPECT_EQ(a.misses, b.misses);
  EXPECT_EQ(a.live_bytes, b.live_bytes);
  EXPECT_EQ(a.peak_bytes, b.peak_bytes);
  EXPECT_EQ(a.reserved_bytes, b.reserved_bytes);
  EXPECT_EQ(a.cached_bytes, b.cached_bytes);
  EXPECT_GT(a.hits, 300u);  // the sequence really exercises reuse
  for (void* p : zeros) pool.Free(p);
}

}  // namespace
}  // namespace ch04
