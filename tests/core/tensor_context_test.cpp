// Tests of the caching allocator (core/tensor_context.cpp): rounding, best-fit reuse,
// the "no more than twice the request" rule, the statistics through a sequence of
// calls, trimming, and the out-of-memory path (trim, retry once, then a clear error),
// driven by a fake RawAllocator that hands out addresses and can run out.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "zero/core/error.h"
#include "zero/core/tensor.h"
#include "zero/core/tensor_context.h"

namespace zero {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Hands out fake, never-dereferenced addresses from a fixed capacity and counts calls.
class FakeRaw : public RawAllocator {
 public:
  explicit FakeRaw(size_t capacity) : capacity_(capacity) {}
  void* Allocate(size_t bytes) override {
    ++allocate_calls;
    if (in_use + bytes > capacity_) {
      ++failures;
      return nullptr;
    }
    in_use += bytes;
    next_ += 1 << 20;
    return reinterpret_cast<void*>(next_);
  }
  void Free(void*, size_t bytes) override {
    ++free_calls;
    in_use -= bytes;
  }
  std::string Name() const override { return "the fake allocator"; }

  size_t in_use = 0;
  int allocate_calls = 0, free_calls = 0, failures = 0;

 private:
  size_t capacity_;
  uintptr_t next_ = 0;
};

TEST(TensorContextTest, RoundsUpToTheGranularity) {
  FakeRaw raw(1 << 20);
  CachingPool pool(raw, 16);
  EXPECT_EQ(pool.RoundUp(0), 16u);
  EXPECT_EQ(pool.RoundUp(1), 16u);
  EXPECT_EQ(pool.RoundUp(16), 16u);
  EXPECT_EQ(pool.RoundUp(17), 32u);
  void* p = pool.Allocate(20);
  EXPECT_EQ(raw.in_use, 32u);
  EXPECT_EQ(pool.Stats().live_bytes, 32u);
  pool.Free(p);
}

TEST(TensorContextTest, ReusesAFreedBlock) {
  FakeRaw raw(1 << 20);
  CachingPool pool(raw, 16);
  void* a = pool.Allocate(100);
  pool.Free(a);
  void* b = pool.Allocate(100);
  EXPECT_EQ(a, b);
  const MemoryStats s = pool.Stats();
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.raw_allocs, 1u);
  EXPECT_EQ(raw.allocate_calls, 1);
  pool.Free(b);
}

TEST(TensorContextTest, BestFitPicksTheSmallestAdequateBlock) {
  FakeRaw raw(1 << 20);
  CachingPool pool(raw, 16);
  void* big = pool.Allocate(160);
  void* mid = pool.Allocate(112);
  void* small = pool.Allocate(64);
  pool.Free(big);
  pool.Free(small);
  pool.Free(mid);
  EXPECT_EQ(pool.Allocate(96), mid);     // 112 fits best (64 is too small, 160 is larger)
  EXPECT_EQ(pool.Allocate(96), big);     // 160 <= 2 * 96
  EXPECT_EQ(pool.Allocate(48), small);
  EXPECT_EQ(pool.Stats().hits, 3u);
  EXPECT_EQ(raw.allocate_calls, 3);
}

TEST(TensorContextTest, BlockMoreThanTwiceTheRequestIsNotUsed) {
  FakeRaw raw(1 << 20);
  CachingPool pool(raw, 16);
  void* block = pool.Allocate(64);
  pool.Free(block);
  void* small = pool.Allocate(16);  // 64 > 2 * 16: a new block
  EXPECT_NE(small, block);
  EXPECT_EQ(pool.Stats().misses, 2u);
  EXPECT_EQ(pool.Stats().cached_bytes, 64u);
  void* half = pool.Allocate(32);  // 64 == 2 * 32: reused
  EXPECT_EQ(half, block);
  EXPECT_EQ(pool.Stats().live_bytes, 16u + 64u);  // a reused block counts at its full size
  pool.Free(small);
  pool.Free(half);
}

TEST(TensorContextTest, StatisticsThroughASequence) {
  FakeRaw raw(1 << 20);
  CachingPool pool(raw, 16);
  void* a = pool.Allocate(100);  // 112
  void* b = pool.Allocate(200);  // 208
  MemoryStats s = pool.Stats();
  EXPECT_EQ(s.live_bytes, 320u);
  EXPECT_EQ(s.peak_bytes, 320u);
  EXPECT_EQ(s.reserved_bytes, 320u);
  EXPECT_EQ(s.cached_bytes, 0u);
  pool.Free(a);
  s = pool.Stats();
  EXPECT_EQ(s.live_bytes, 208u);
  EXPECT_EQ(s.peak_bytes, 320u);
  EXPECT_EQ(s.reserved_bytes, 320u);
  EXPECT_EQ(s.cached_bytes, 112u);
  pool.ResetPeak();
  EXPECT_EQ(pool.Stats().peak_bytes, 208u);
  void* c = pool.Allocate(112);  // hit
  s = pool.Stats();
  EXPECT_EQ(s.live_bytes, 320u);
  EXPECT_EQ(s.peak_bytes, 320u);
  EXPECT_EQ(s.cached_bytes, 0u);
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.misses, 2u);
  pool.Free(b);
  pool.Free(c);
  pool.TrimFreePool();
  s = pool.Stats();
  EXPECT_EQ(s.live_bytes, 0u);
  EXPECT_EQ(s.cached_bytes, 0u);
  EXPECT_EQ(s.reserved_bytes, 0u);
  EXPECT_EQ(s.raw_frees, 2u);
  EXPECT_EQ(s.peak_bytes, 320u);
  EXPECT_EQ(raw.free_calls, 2);
  EXPECT_EQ(raw.in_use, 0u);
}

TEST(TensorContextTest, TrimKeepsLiveBlocks) {
  FakeRaw raw(1 << 20);
  CachingPool pool(raw, 16);
  void* live = pool.Allocate(64);
  pool.Free(pool.Allocate(32));
  pool.TrimFreePool();
  EXPECT_EQ(raw.in_use, 64u);
  EXPECT_EQ(pool.Stats().reserved_bytes, 64u);
  EXPECT_EQ(pool.Stats().raw_frees, 1u);
  pool.Free(live);
  EXPECT_THROW(pool.Free(reinterpret_cast<void*>(0x10)), Error);  // not from this pool
  pool.Free(nullptr);
}

TEST(TensorContextTest, OutOfMemoryTrimsAndRetriesOnce) {
  FakeRaw raw(256);
  CachingPool pool(raw, 16);
  pool.Free(pool.Allocate(128));
  pool.Free(pool.Allocate(48));  // 128 > 2 * 48: a second block; 176 bytes cached
  ASSERT_EQ(pool.Stats().cached_bytes, 176u);
  // 160 bytes: no cached block fits, the raw allocator has 80 left -> trim, retry.
  void* p = pool.Allocate(160);
  EXPECT_NE(p, nullptr);
  EXPECT_EQ(raw.failures, 1);
  EXPECT_EQ(raw.allocate_calls, 4);  // two blocks, the failed try, the retry
  const MemoryStats s = pool.Stats();
  EXPECT_EQ(s.raw_frees, 2u);
  EXPECT_EQ(s.cached_bytes, 0u);
  EXPECT_EQ(s.reserved_bytes, 160u);
  EXPECT_EQ(s.live_bytes, 160u);
  pool.Free(p);
}

TEST(TensorContextTest, OutOfMemoryErrorStatesRequestAndStatistics) {
  FakeRaw raw(256);
  CachingPool pool(raw, 16);
  void* live = pool.Allocate(200);  // 208 live
  pool.Free(pool.Allocate(32));     // 32 cached
  try {
    pool.Allocate(100);
    FAIL() << "expected an out-of-memory error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_TRUE(contains(msg, "out of memory")) << msg;
    EXPECT_TRUE(contains(msg, "the fake allocator")) << msg;
    EXPECT_TRUE(contains(msg, "112 bytes")) << msg;      // rounded request
    EXPECT_TRUE(contains(msg, "requested 100")) << msg;  // as asked
    EXPECT_TRUE(contains(msg, "live 208")) << msg;
    EXPECT_TRUE(contains(msg, "reserved 208")) << msg;   // the cached block was trimmed
  }
  EXPECT_EQ(raw.failures, 2);  // the first try and the one retry
  EXPECT_EQ(pool.Stats().raw_frees, 1u);
  EXPECT_EQ(pool.Stats().live_bytes, 208u);  // a failed request changes no live bytes
  pool.Free(live);
}

TEST(TensorContextTest, CpuContextServesTensors) {
  CPUTensorContext ctx;
  EXPECT_EQ(ctx.device(), Device::Cpu());
  void* a = ctx.NewMem(10);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);  // 64-byte aligned
  EXPECT_EQ(ctx.Stats().live_bytes, CPUTensorContext::kRounding);
  static_cast<char*>(a)[15] = 1;  // the rounded size is usable
  ctx.DeleteMem(a);
  EXPECT_EQ(ctx.NewMem(16), a);
  EXPECT_EQ(ctx.Stats().hits, 1u);
  ctx.DeleteMem(a);
  ctx.TrimFreePool();
  EXPECT_EQ(ctx.Stats().reserved_bytes, 0u);
  EXPECT_EQ(ctx.Stats().raw_frees, 1u);
  ctx.ResetPeak();
  EXPECT_EQ(ctx.Stats().peak_bytes, 0u);
}

TEST(TensorContextTest, DefaultCpuContextBacksTensorBuffers) {
  TensorContext& ctx = DefaultTensorContext::Get(Device::Cpu());
  EXPECT_EQ(&ctx, &DefaultTensorContext::Get(Device::Cpu()));
  const size_t before = ctx.Stats().live_bytes;
  {
    Tensor t = Tensor::Empty({5, 7});  // 140 bytes -> 144
    EXPECT_EQ(ctx.Stats().live_bytes, before + 144);
  }
  EXPECT_EQ(ctx.Stats().live_bytes, before);
}

}  // namespace
}  // namespace zero
