// Tests of the caching allocator (core/tensor_context.cpp): rounding, best-fit reuse,
// the "no more than twice the request" rule, the statistics through a sequence of
// calls, trimming, and the out-of-memory path (trim, retry once, then a clear error),
// driven by a fake RawAllocator that hands out addresses and can run out.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "tests/support/test_support.h"
#include "zero/core/error.h"
#include "zero/core/tensor.h"
#include "zero/core/tensor_context.h"

namespace zero {
namespace {

using testing::contains;

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

// Note [Blocks and streams]: a block is reused only by requests for the stream it was
// allocated for, so a block freed by one stream's user never reaches another stream.
TEST(TensorContextTest, BlocksAreReusedOnlyOnTheirStream) {
  FakeRaw raw(1 << 20);
  CachingPool pool(raw, 16);
  constexpr CachingPool::StreamId kOther = 0x1234;
  void* on_other = pool.Allocate(64, kOther);
  pool.Free(on_other);
  void* on_default = pool.Allocate(64);  // the default stream: a new block
  EXPECT_NE(on_default, on_other);
  EXPECT_EQ(pool.Stats().misses, 2u);
  EXPECT_EQ(pool.Allocate(64, kOther), on_other);  // its own stream: reused
  EXPECT_EQ(pool.Stats().hits, 1u);
  pool.Free(on_default);
  pool.Free(on_other);
  // Best fit stays within the stream. Cached now: default {64, 128}, other {64}.
  void* big_default = pool.Allocate(128);
  pool.Free(big_default);
  void* other_100 = pool.Allocate(100, kOther);  // only default's 128 would fit: a new block
  EXPECT_NE(other_100, big_default);
  void* default_200 = pool.Allocate(200);  // nothing of the default stream fits: a new block
  EXPECT_NE(default_200, on_other);
  EXPECT_EQ(pool.Allocate(100), big_default);  // the default stream's own 128
  const MemoryStats s = pool.Stats();
  EXPECT_EQ(s.hits, 2u);
  EXPECT_EQ(s.misses, 5u);
  EXPECT_EQ(s.cached_bytes, 64u + 64u);
  pool.Free(other_100);
  pool.Free(default_200);
  pool.Free(big_default);
}

// The real CUDA context (cudaMalloc, 512-byte rounding): misses call cudaMalloc,
// frees are cached, hits reuse, TrimFreePool gives blocks back to the driver.
TEST(TensorContextTest, CudaContextCachesAndTrims) {
  if (!cuda_available()) GTEST_SKIP() << "needs a CUDA GPU";
  TensorContext& ctx = DefaultTensorContext::Get(Device::Cuda());
  EXPECT_EQ(ctx.device(), Device::Cuda(0));
  ctx.TrimFreePool();  // start with an empty cache
  const MemoryStats s0 = ctx.Stats();
  EXPECT_EQ(s0.cached_bytes, 0u);
  void* a = ctx.NewMem(1000);  // rounded to 1024
  MemoryStats s = ctx.Stats();
  EXPECT_EQ(s.misses, s0.misses + 1);
  EXPECT_EQ(s.raw_allocs, s0.raw_allocs + 1);
  EXPECT_EQ(s.live_bytes, s0.live_bytes + 1024);
  EXPECT_EQ(s.reserved_bytes, s0.reserved_bytes + 1024);
  ctx.DeleteMem(a);
  EXPECT_EQ(ctx.Stats().cached_bytes, 1024u);
  EXPECT_EQ(ctx.NewMem(1024), a);  // a hit: the same block, no cudaMalloc
  s = ctx.Stats();
  EXPECT_EQ(s.hits, s0.hits + 1);
  EXPECT_EQ(s.raw_allocs, s0.raw_allocs + 1);
  ctx.DeleteMem(a);
  {
    Tensor t = Tensor::Zeros({256}, TensorOption().OnDevice(Device::Cuda()));  // 1024 bytes
    EXPECT_EQ(t.data(), a);  // tensors draw from the same cache
  }
  ctx.TrimFreePool();
  s = ctx.Stats();
  EXPECT_EQ(s.cached_bytes, 0u);
  EXPECT_EQ(s.reserved_bytes, s0.reserved_bytes);
  EXPECT_EQ(s.raw_frees, s0.raw_frees + 1);
  EXPECT_EQ(s.live_bytes, s0.live_bytes);
}

TEST(TensorContextTest, CudaOutOfMemoryStatesRequestAndStatistics) {
  if (!cuda_available()) GTEST_SKIP() << "needs a CUDA GPU";
  TensorContext& ctx = DefaultTensorContext::Get(Device::Cuda());
  const size_t pebibyte = size_t{1} << 50;
  const uint64_t raw_frees = ctx.Stats().raw_frees;
  ctx.DeleteMem(ctx.NewMem(4096));  // one cached block, which the failure trims
  try {
    ctx.NewMem(pebibyte);
    FAIL() << "expected an out-of-memory error for 1 PiB";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_TRUE(contains(msg, "out of memory")) << msg;
    EXPECT_TRUE(contains(msg, "cudaMalloc on cuda:0")) << msg;
    EXPECT_TRUE(contains(msg, "requested " + std::to_string(pebibyte))) << msg;
    EXPECT_TRUE(contains(msg, "live ")) << msg;
    EXPECT_TRUE(contains(msg, "reserved ")) << msg;
  }
  EXPECT_EQ(ctx.Stats().raw_frees, raw_frees + 1);  // trimmed before the retry
  EXPECT_EQ(ctx.Stats().cached_bytes, 0u);
  void* p = ctx.NewMem(512);  // the failure is not sticky: the GPU still works
  EXPECT_NE(p, nullptr);
  ctx.DeleteMem(p);
}

TEST(TensorContextTest, RoundingAHugeRequestIsAnErrorNotAWrap) {
  FakeRaw raw(1 << 20);
  CachingPool pool(raw, 512);
  // SIZE_MAX - 10 rounded up used to wrap to 0 and hand out a tiny block.
  testing::expect_error_mentions([&] { pool.RoundUp(SIZE_MAX - 10); },
                                 {std::to_string(SIZE_MAX - 10), "512"});
  EXPECT_THROW(pool.Allocate(SIZE_MAX), Error);
  EXPECT_EQ(raw.allocate_calls, 0);
  EXPECT_EQ(pool.RoundUp(SIZE_MAX - 511), SIZE_MAX - 511);  // already a multiple of 512
}

// Note [Blocks a graph uses]: a block live when a graph begins is held, not cached, once
// freed, until the last graph keeping it ends; the default stream's cached blocks go to
// the graph, whose stream's blocks are reused within it, kept from the default stream
// and from trimming, and handed to the default stream when it ends.
TEST(TensorContextTest, BlocksAGraphUsesAreKeptUntilItEnds) {
  FakeRaw raw(1 << 20);
  CachingPool pool(raw, 16);
  constexpr CachingPool::StreamId kGraph = 7, kOther = 9;
  void* weights = pool.Allocate(64);
  void* spare = pool.Allocate(64);
  pool.Free(spare);
  pool.BeginGraph(kGraph);
  void* temp = pool.Allocate(64, kGraph);
  EXPECT_EQ(temp, spare);  // the default stream's cache went to the graph
  pool.Free(temp);
  EXPECT_EQ(pool.Allocate(64, kGraph), temp);  // reused within the graph's stream
  pool.Free(weights);                          // the graph may still read it: held
  EXPECT_EQ(pool.Stats().live_bytes, 128u);
  void* other = pool.Allocate(64);  // neither block goes to the default stream
  EXPECT_NE(other, weights);
  EXPECT_NE(other, temp);
  EXPECT_THROW(pool.BeginGraph(kGraph), Error);  // a stream of its own
  EXPECT_THROW(pool.BeginGraph(CachingPool::kDefaultStream), Error);
  pool.Free(temp);
  pool.TrimFreePool();  // the graph's cached block stays
  EXPECT_EQ(raw.free_calls, 0);
  pool.EndGraph(kGraph);
  EXPECT_EQ(pool.Stats().live_bytes, 64u);  // other
  void* a = pool.Allocate(64);
  void* b = pool.Allocate(64);
  EXPECT_TRUE((a == weights && b == temp) || (a == temp && b == weights));
  EXPECT_EQ(raw.allocate_calls, 3);
  // Two graphs keep a block until both have ended.
  pool.BeginGraph(kGraph);
  pool.BeginGraph(kOther);
  pool.Free(a);
  pool.EndGraph(kGraph);
  EXPECT_EQ(pool.Stats().live_bytes, 192u);
  pool.EndGraph(kOther);
  EXPECT_EQ(pool.Stats().live_bytes, 128u);
  EXPECT_EQ(pool.Allocate(64), a);
  for (void* p : {a, b, other}) pool.Free(p);
}

}  // namespace
}  // namespace zero
