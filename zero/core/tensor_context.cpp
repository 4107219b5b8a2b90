// CachingPool (the policy shared by the CPU and CUDA contexts), the CPU context,
// and DefaultTensorContext. The CUDA context lives in core/cuda/device_cuda.cu behind
// detail::cuda_tensor_context(); a CPU-only build's core/no_cuda/device.cpp defines it to throw.
#include "zero/core/tensor_context.h"

#include <cstdlib>
#include <memory>
#include <vector>

#include "zero/core/error.h"
#include "zero/core/time_accounts.h"

namespace zero {

namespace detail {
TensorContext& cuda_tensor_context(int index);  // core/cuda/device_cuda.cu or core/no_cuda/device.cpp
}

// ---------------------------------------------------------------- CachingPool

CachingPool::CachingPool(RawAllocator& raw, size_t rounding) : raw_(raw), rounding_(rounding) {
  ZERO_ASSERT(rounding > 0 && (rounding & (rounding - 1)) == 0, "rounding must be a power of 2");
}

CachingPool::~CachingPool() {
  std::lock_guard<std::mutex> lock(mutex_);
  TrimLocked();
  // Blocks still live belong to tensors that outlive the pool (static destruction
  // order); leaking them at exit is harmless and safer than freeing under them.
}

size_t CachingPool::RoundUp(size_t bytes) const {
  if (bytes == 0) bytes = 1;
  size_t padded = 0;
  ZERO_CHECK(!__builtin_add_overflow(bytes, rounding_ - 1, &padded), "cannot allocate ", bytes,
             " bytes: rounding the request up to a multiple of ", rounding_, " overflows size_t");
  return padded / rounding_ * rounding_;
}

void* CachingPool::Allocate(size_t request, StreamId stream) {
  const size_t bytes = RoundUp(request);
  std::lock_guard<std::mutex> lock(mutex_);
  // The smallest cached block of this stream that is at least `bytes` long.
  auto it = free_.lower_bound({stream, bytes});
  void* ptr = nullptr;
  size_t size = bytes;
  if (it != free_.end() && it->first.first == stream && it->first.second <= 2 * bytes) {
    ptr = it->second;
    size = it->first.second;
    free_.erase(it);
    stats_.cached_bytes -= size;
    ++stats_.hits;
  } else {
    ++stats_.misses;
    ptr = raw_.Allocate(bytes);
    if (ptr == nullptr) {  // out of memory: give the cache back and try once more
      TrimLocked();
      ptr = raw_.Allocate(bytes);
    }
    ZERO_CHECK(ptr != nullptr, "out of memory: ", raw_.Name(), " could not provide ", bytes,
               " bytes (requested ", request, "); allocator: live ", stats_.live_bytes,
               " B, peak ", stats_.peak_bytes, " B, reserved ", stats_.reserved_bytes,
               " B, cached ", stats_.cached_bytes, " B after trimming");
    ++stats_.raw_allocs;
    stats_.reserved_bytes += bytes;
  }
  live_.emplace(ptr, Block{size, stream});
  stats_.live_bytes += size;
  if (stats_.live_bytes > stats_.peak_bytes) stats_.peak_bytes = stats_.live_bytes;
  return ptr;
}

void CachingPool::Free(void* ptr) {
  if (ptr == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(ptr);
  ZERO_ASSERT(it != live_.end(), "freeing a block this pool does not own");
  const Block block = it->second;
  if (kept_.count(ptr) != 0) {  // a graph's replay may still use it: hold it, live
    held_.insert(ptr);
    return;
  }
  live_.erase(it);
  stats_.live_bytes -= block.size;
  CacheLocked(ptr, block.size, block.stream);
}

void CachingPool::CacheLocked(void* ptr, size_t size, StreamId stream) {
  stats_.cached_bytes += size;
  free_.emplace(std::make_pair(stream, size), ptr);
}

void CachingPool::MoveCachedLocked(StreamId from, StreamId to) {
  std::vector<std::pair<size_t, void*>> moved;
  for (auto it = free_.lower_bound({from, 0}); it != free_.end() && it->first.first == from;) {
    moved.emplace_back(it->first.second, it->second);
    it = free_.erase(it);
  }
  for (const auto& [size, ptr] : moved) free_.emplace(std::make_pair(to, size), ptr);
}

void CachingPool::BeginGraph(StreamId graph_stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  ZERO_CHECK(graph_stream != kDefaultStream && graphs_.count(graph_stream) == 0,
             "CachingPool::BeginGraph: a graph needs a stream of its own");
  std::vector<void*>& kept = graphs_[graph_stream];
  for (const auto& [ptr, block] : live_) {
    if (held_.count(ptr) != 0) continue;  // freed already: no new user can reach it
    kept.push_back(ptr);
    ++kept_[ptr];
  }
  MoveCachedLocked(kDefaultStream, graph_stream);
}

void CachingPool::EndGraph(StreamId graph_stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto graph = graphs_.find(graph_stream);
  if (graph == graphs_.end()) return;
  for (void* ptr : graph->second) {
    if (--kept_[ptr] > 0) continue;
    kept_.erase(ptr);
    if (held_.erase(ptr) == 0) continue;  // still in use by its tensor
    const auto it = live_.find(ptr);
    stats_.live_bytes -= it->second.size;
    CacheLocked(ptr, it->second.size, it->second.stream);
    live_.erase(it);
  }
  graphs_.erase(graph);
  // The graph's stream is going away; its blocks serve the default stream from now on.
  for (auto& [ptr, block] : live_) {
    if (block.stream == graph_stream) block.stream = kDefaultStream;
  }
  MoveCachedLocked(graph_stream, kDefaultStream);
}

void CachingPool::TrimFreePool() {
  std::lock_guard<std::mutex> lock(mutex_);
  TrimLocked();
}

void CachingPool::TrimLocked() {
  // A graph's cached blocks are in its replays: they stay (Note [Blocks a graph uses]).
  for (auto it = free_.begin(); it != free_.end();) {
    const auto [stream, size] = it->first;
    if (graphs_.count(stream) != 0) {
      ++it;
      continue;
    }
    raw_.Free(it->second, size);
    stats_.reserved_bytes -= size;
    stats_.cached_bytes -= size;
    ++stats_.raw_frees;
    it = free_.erase(it);
  }
}

MemoryStats CachingPool::Stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void CachingPool::ResetPeak() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.peak_bytes = stats_.live_bytes;
}

// ---------------------------------------------------------------- CPU context

class CPUTensorContext::HostAllocator : public RawAllocator {
 public:
  // 64-byte alignment: a cache line, and enough for any SIMD load.
  void* Allocate(size_t bytes) override { return std::aligned_alloc(64, (bytes + 63) / 64 * 64); }
  void Free(void* ptr, size_t) override { std::free(ptr); }
  std::string Name() const override { return "the host allocator"; }
};

CPUTensorContext::CPUTensorContext()
    : raw_(new HostAllocator()), pool_(new CachingPool(*raw_, kRounding)) {}

CPUTensorContext::~CPUTensorContext() {
  delete pool_;
  delete raw_;
}

// Both charge their time to the allocator's account of the CPU profile (time_accounts.h).
void* CPUTensorContext::NewMem(size_t bytes) {
  const time_accounts::Charge charge(time_accounts::kAllocator);
  return pool_->Allocate(bytes);
}
void CPUTensorContext::DeleteMem(void* ptr) {
  const time_accounts::Charge charge(time_accounts::kAllocator);
  pool_->Free(ptr);
}
void CPUTensorContext::TrimFreePool() { pool_->TrimFreePool(); }
MemoryStats CPUTensorContext::Stats() const { return pool_->Stats(); }
void CPUTensorContext::ResetPeak() { pool_->ResetPeak(); }

// ---------------------------------------------------------------- defaults

TensorContext& DefaultTensorContext::Get(Device device) {
  if (device.is_cpu()) {
    // Never destroyed: tensors in static storage may free into it during exit.
    static CPUTensorContext* cpu = new CPUTensorContext();
    return *cpu;
  }
  return detail::cuda_tensor_context(device.index());
}

}  // namespace zero
