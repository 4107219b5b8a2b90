/// @file
/// Private to zero/data: pinned host memory and asynchronous copies from it to the GPU.
///
/// Used by BatchSampler's prefetch (see Note [Prefetching batches] in batch_sampler.cpp).
/// Defined in zero/data/cuda/pinned.cu with CUDA and in zero/no_cuda/pinned.cpp without
/// it (where the constructor throws "built without CUDA"). No CUDA header is included:
/// the event is held as an opaque pointer.
#pragma once

#include <cstddef>

namespace zero::data::detail {

/// A pinned host buffer plus an event that completes when the copies last issued from it
/// have run, so the host knows when it may overwrite the buffer.
class PinnedStaging {
 public:
  /// `bytes` of pinned memory (`cudaMallocHost`) for copies to GPU `device`.
  PinnedStaging(size_t bytes, int device);
  /// Waits for copies still reading the buffer, then frees it.
  ~PinnedStaging();
  PinnedStaging(const PinnedStaging&) = delete;             ///< Owns the buffer.
  PinnedStaging& operator=(const PinnedStaging&) = delete;  ///< Owns the buffer.

  /// The host buffer.
  void* data() const { return host_; }
  /// Its size in bytes.
  size_t size() const { return bytes_; }
  /// Enqueues a copy of `bytes` from `data() + offset` to device memory `dst` on the
  /// legacy default stream (where Zero's kernels run) and returns at once.
  void CopyToDeviceAsync(size_t offset, void* dst, size_t bytes);
  /// Records the event after the copies enqueued so far.
  void RecordCopies();
  /// Blocks until the copies before the last RecordCopies() have run (at once if none).
  void WaitForCopies();

 private:
  void* host_ = nullptr;
  size_t bytes_ = 0;
  int device_ = 0;
  void* event_ = nullptr;  // cudaEvent_t
  bool recorded_ = false;
};

}  // namespace zero::data::detail
