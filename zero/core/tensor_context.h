/// @file
/// `TensorContext`: the allocator behind every tensor buffer, one per device.
///
/// Both the CPU and the CUDA context are a `CachingPool` over a raw allocator
/// (`std::aligned_alloc` or `cudaMalloc`): freed blocks are kept and handed out
/// again, so steady-state training never calls the raw allocator. The policy is
/// plain C++ so tests drive it without a GPU. Read next: tensor_node.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "zero/core/device.h"

namespace zero {

/// Counters of one allocator. Bytes are rounded sizes.
struct MemoryStats {
  size_t live_bytes = 0;      ///< Bytes in blocks handed out and not yet returned.
  size_t peak_bytes = 0;      ///< Highest `live_bytes` since creation or `ResetPeak()`.
  size_t reserved_bytes = 0;  ///< Bytes obtained from the raw allocator (live + cached).
  size_t cached_bytes = 0;    ///< Bytes in free blocks kept for reuse.
  uint64_t hits = 0;          ///< Requests served from the cache.
  uint64_t misses = 0;        ///< Requests that needed the raw allocator.
  uint64_t raw_allocs = 0;    ///< Calls to the raw allocator (`cudaMalloc` on CUDA).
  uint64_t raw_frees = 0;     ///< Blocks given back to the raw allocator.
};

/// The raw allocator under a `CachingPool`: `malloc`-like, may fail by returning null.
class RawAllocator {
 public:
  virtual ~RawAllocator() = default;
  /// Returns `bytes` of fresh memory, or nullptr when there is none.
  virtual void* Allocate(size_t bytes) = 0;
  /// Gives back a block that `Allocate` returned.
  virtual void Free(void* ptr, size_t bytes) = 0;
  /// Describes the allocator for error messages ("cudaMalloc on cuda:0").
  virtual std::string Name() const = 0;
};

// Note [Blocks and streams]
// The host frees a GPU block as soon as its last tensor dies, usually while kernels
// that read it are still queued. Handing the block straight to the next request is
// safe only because of stream order: the next user's kernels are queued on the same
// stream, behind every kernel of the previous user, so they cannot touch the bytes
// before those kernels have finished. Zero's ops launch every kernel and copy on the
// legacy default stream (kernels/cuda/cuda_common.cuh, current_stream()), a single
// stream shared by all host threads, and every tensor's block is allocated for it
// (but while a CUDA graph captures: Note [Blocks a graph uses] below).
//
// The pool is ready for blocks of more streams: each block records the stream it
// was allocated for (its owner), keeps it while cached, and is handed out again only
// to requests for that same stream. Reuse within one stream needs no synchronisation
// at all. What the pool cannot see is a block used on a *second* stream (allocated
// for A, read by a kernel on B): freed, it would go back to A while B may still be
// reading it. Side streams exist (cuda/stream.h, chapter 08; the all-reduce stream
// of dist/data_parallel.cpp), and their users follow Note [Tensors used on another
// stream] in cuda/stream.h: such a tensor is released only once the side stream's work
// on it is done (that stream synchronised, or the default stream made to wait on an
// event). PyTorch's CUDACachingAllocator instead lets a `RecordStream(ptr, stream)`
// hook make the block itself wait for the other stream before it is reused.
// The CUDA context refuses to build with per-thread default streams
// (nvcc --default-stream per-thread), where "stream 0" would differ per host thread.
//
// Note [Blocks a graph uses]
// A CUDA graph (core/cuda_graph.h) bakes the addresses its kernels touched into every
// replay, long after the host has freed the tensors it captured. Two kinds of block are
// in it. Those allocated while capturing are for the graph's own stream, so the stream
// rule above already keeps them for the graph: no default-stream request can get them,
// and the graph reuses them within itself exactly as the captured host code did. Those
// that were live when capture began (parameters, moments, the fixed inputs) are the
// danger: freed later, one would go to a default-stream tensor that a replay then
// overwrites. So `BeginGraph` marks every block live at that moment, and such a block,
// once freed, is held (still counted live, never cached) until the last graph keeping it
// ends. PyTorch keeps a graph's blocks in a private pool for the same reason. The
// default stream's cached blocks go to the graph when it begins: its replays run on the
// legacy stream, after whatever last used them, and the capture then needs few new ones.

/// A best-fit cache of freed blocks over a `RawAllocator`.
///
/// Requests are rounded up to `rounding` bytes. A request takes the smallest free
/// block of its stream that fits, unless that block is more than twice the request
/// (then a large block is not pinned by a small tensor, and a new block is made
/// instead). On a raw failure the pool trims its cache and retries once, then throws
/// `zero::Error` stating the request and the statistics. Thread-safe. Blocks belong
/// to the stream they were allocated for: see Note [Blocks and streams].
class CachingPool {
 public:
  /// Names a stream without CUDA types: a `cudaStream_t` as an integer.
  using StreamId = uintptr_t;
  /// The legacy default stream (`cudaStream_t` 0), on which Zero runs everything.
  static constexpr StreamId kDefaultStream = 0;

  /// A pool drawing from `raw`, rounding every request up to a multiple of `rounding`.
  CachingPool(RawAllocator& raw, size_t rounding);
  ~CachingPool();
  CachingPool(const CachingPool&) = delete;
  CachingPool& operator=(const CachingPool&) = delete;

  /// Returns a block of at least `bytes` (a zero-byte request gets a `rounding`-sized
  /// block) to be used on `stream`; only blocks freed by that stream's users are reused.
  void* Allocate(size_t bytes, StreamId stream = kDefaultStream);
  /// Returns a block to the cache of the stream it was allocated for.
  void Free(void* ptr);
  /// Gives every cached (free) block back to the raw allocator.
  void TrimFreePool();
  /// A snapshot of the counters.
  MemoryStats Stats() const;
  /// Sets `peak_bytes` to the current `live_bytes`.
  void ResetPeak();
  /// `bytes` rounded up to the pool's granularity.
  size_t RoundUp(size_t bytes) const;
  /// Starts a graph captured on `graph_stream`: keeps every block live now out of reuse
  /// until `EndGraph` (freed, such a block is held, still counted live), and gives the
  /// default stream's cached blocks to the graph. See Note [Blocks a graph uses].
  void BeginGraph(StreamId graph_stream);
  /// Ends the graph of `graph_stream`: caches the blocks held for it alone, and hands its
  /// stream's blocks to the default stream. Call only when no launch of the graph can
  /// still be running.
  void EndGraph(StreamId graph_stream);

 private:
  void TrimLocked();
  void CacheLocked(void* ptr, size_t size, StreamId stream);
  void MoveCachedLocked(StreamId from, StreamId to);

  RawAllocator& raw_;
  size_t rounding_;
  mutable std::mutex mutex_;
  struct Block {
    size_t size;
    StreamId stream;
  };
  // (stream, size) -> block: best fit is one lower_bound within the stream's range.
  std::multimap<std::pair<StreamId, size_t>, void*> free_;
  std::unordered_map<void*, Block> live_;
  MemoryStats stats_;
  std::map<StreamId, std::vector<void*>> graphs_;  // graph stream -> the blocks it keeps
  std::unordered_map<void*, int> kept_;            // block -> graphs keeping it
  std::unordered_set<void*> held_;                 // kept blocks freed since
};

/// The allocator of one device. Tensors get their buffers through it.
class TensorContext {
 public:
  virtual ~TensorContext() = default;
  /// The device whose memory this context hands out.
  virtual Device device() const = 0;
  /// Returns a block of at least `bytes` on `device()`.
  virtual void* NewMem(size_t bytes) = 0;
  /// Returns a block obtained from `NewMem` to the cache.
  virtual void DeleteMem(void* ptr) = 0;
  /// Gives every cached block back to the system (or the CUDA driver).
  virtual void TrimFreePool() = 0;
  /// A snapshot of the allocator's counters.
  virtual MemoryStats Stats() const = 0;
  /// Starts a new peak measurement from the current live bytes.
  virtual void ResetPeak() = 0;
};

/// Host memory: 64-byte aligned blocks, sizes rounded to 16 bytes, best-fit reuse.
class CPUTensorContext : public TensorContext {
 public:
  CPUTensorContext();
  ~CPUTensorContext() override;
  /// Always the CPU.
  Device device() const override { return Device::Cpu(); }
  /// Returns a 64-byte aligned block of at least `bytes`.
  void* NewMem(size_t bytes) override;
  /// Returns a block to the cache.
  void DeleteMem(void* ptr) override;
  /// Frees every cached block.
  void TrimFreePool() override;
  /// A snapshot of the counters.
  MemoryStats Stats() const override;
  /// Starts a new peak measurement.
  void ResetPeak() override;

  /// Granularity of host allocations, in bytes.
  static constexpr size_t kRounding = 16;

 private:
  class HostAllocator;
  HostAllocator* raw_;
  CachingPool* pool_;
};

/// The process-wide context of each device.
class DefaultTensorContext {
 public:
  /// The context of `device`; throws if CUDA is requested in a build without it
  /// or the GPU index does not exist.
  static TensorContext& Get(Device device);
};

}  // namespace zero
