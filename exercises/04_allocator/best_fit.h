// Exercise 04: the heart of a caching allocator, in plain C++.
//
// A FreeList sits on a raw allocator (cudaMalloc, or a fake in the tests) and keeps
// freed blocks instead of returning them, so the next request of a similar size
// costs a map lookup instead of a cudaMalloc. It follows the same policy as Zero's
// CachingPool (zero/core/tensor_context.h): sizes rounded up, best fit, and no block
// more than twice the request. Chapter 04 replays a GPT training step through it and
// checks that it makes the same decisions as Zero's pool.
#pragma once

#include <cstddef>
#include <map>
#include <unordered_map>

#include "zero/core/error.h"
#include "zero/core/tensor_context.h"  // zero::RawAllocator, zero::MemoryStats

namespace ch04 {

class FreeList {
 public:
  // Blocks come from `raw`; every request is rounded up to a multiple of `rounding`
  // (a power of two: 512 on the GPU).
  FreeList(zero::RawAllocator& raw, size_t rounding) : raw_(raw), rounding_(rounding) {
    ZERO_CHECK(rounding > 0 && (rounding & (rounding - 1)) == 0,
               "FreeList: expected a power-of-two rounding, got ", rounding);
  }
  ~FreeList() { Release(); }
  FreeList(const FreeList&) = delete;
  FreeList& operator=(const FreeList&) = delete;

  // `bytes` rounded up to the granularity; a zero-byte request still gets one unit.
  size_t RoundUp(size_t bytes) const {
    // TODO(ex04.1): round up to a multiple of rounding_ (0 counts as 1 byte)
    ZERO_NOT_IMPLEMENTED("ex04.1");
  }

  // A block of at least `bytes`: the smallest cached block that fits, if it is at
  // most twice the rounded request (a hit); otherwise a new block from the raw
  // allocator (a miss). If the raw allocator has nothing left, give the cache back
  // (Release) and try once more; if that fails too, throw zero::Error.
  void* Take(size_t bytes) {
    // TODO(ex04.2): best fit within 2x from free_, else raw_.Allocate; update stats_
    ZERO_NOT_IMPLEMENTED("ex04.2");
  }

  // Returns a block from Take to the cache (not to the raw allocator).
  void Give(void* ptr) {
    auto it = live_.find(ptr);
    ZERO_CHECK(it != live_.end(), "FreeList: Give of a block this list did not hand out");
    // TODO(ex04.3): move the block from live_ to free_ and update stats_
    ZERO_NOT_IMPLEMENTED("ex04.3");
  }

  // Gives every cached block back to the raw allocator (Zero's TrimFreePool).
  void Release() {
    for (const auto& [size, ptr] : free_) {
      raw_.Free(ptr, size);
      stats_.reserved_bytes -= size;
      ++stats_.raw_frees;
    }
    free_.clear();
    stats_.cached_bytes = 0;
  }

  // The counters, with the meanings of zero::MemoryStats.
  const zero::MemoryStats& stats() const { return stats_; }

 private:
  zero::RawAllocator& raw_;
  size_t rounding_;
  std::multimap<size_t, void*> free_;         // cached blocks by size: best fit = lower_bound
  std::unordered_map<void*, size_t> live_;    // blocks handed out, with their sizes
  zero::MemoryStats stats_;
};

}  // namespace ch04
