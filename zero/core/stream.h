/// @file
/// CUDA streams, events, an event timer and pinned host memory, behind opaque handles.
///
/// Zero's own kernels all run on the legacy default stream (kernels/cuda/cuda_common.cuh,
/// `current_stream()`; a capturing CUDA graph's stream while one captures, cuda_graph.h),
/// so ordinary code never needs this header. It exists for the
/// asynchronous-execution chapter (08_async_streams), for timing GPU work correctly, and
/// for host→device prefetch from pinned memory. No CUDA header is included: the handles
/// are `void*` here and `cudaStream_t` / `cudaEvent_t` inside stream.cu. In a build
/// without CUDA every constructor throws "built without CUDA".
///
/// Note [Tensors used on another stream]
/// The caching allocator reuses a freed block at once, and the next user is the default
/// stream. If work on a side stream still reads or writes a tensor when that tensor is
/// released, a default-stream kernel may receive the same block and overwrite it while
/// the side stream is using it. So before a tensor used on a side stream is released,
/// either `Synchronize()` that stream, or record an `Event` on it and make the default
/// stream wait: `Stream::Default().Wait(event)`. See also Note [Blocks and streams]
/// in core/tensor_context.h.
#pragma once

#include <cstddef>

#include "zero/core/tensor.h"

namespace zero::cuda {

class Event;

/// A CUDA stream: a queue of GPU work that runs in order. Move-only; owns its stream.
///
/// Work on two different streams may run concurrently. A stream made by `Create` is
/// non-blocking: it does not wait for, and is not waited for by, the legacy default
/// stream, so ordering against Zero's kernels must be made explicit with an `Event`.
class Stream {
 public:
  /// A new non-blocking stream on GPU `device`.
  static Stream Create(int device = 0);
  /// The legacy default stream (handle 0), where all of Zero's kernels run. Not owned.
  static Stream Default(int device = 0);

  ~Stream();
  /// Takes over `other`'s handle; `other` is left empty.
  Stream(Stream&& other) noexcept;
  /// Releases this handle, then takes over `other`'s.
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  /// Blocks the host until all work queued on this stream so far has finished.
  void Synchronize() const;
  /// Makes all work queued on this stream from now on wait until `event` has completed
  /// (`cudaStreamWaitEvent`); the host does not wait.
  void Wait(const Event& event) const;
  /// True when all work queued on this stream has finished (does not block).
  bool Query() const;
  /// True for the legacy default stream.
  bool is_default() const { return handle_ == nullptr; }
  /// The GPU index this stream belongs to.
  int device() const { return device_; }
  /// The `cudaStream_t`, as an opaque pointer (null for the default stream).
  void* handle() const { return handle_; }

 private:
  Stream(void* handle, int device, bool owned) : handle_(handle), device_(device), owned_(owned) {}
  void* handle_ = nullptr;
  int device_ = 0;
  bool owned_ = false;
};

/// A CUDA event: a marker recorded into a stream, completed when the GPU reaches it.
/// Move-only; timing is enabled, so two events measure the GPU time between them.
class Event {
 public:
  /// A new event on GPU `device`.
  static Event Create(int device = 0);

  ~Event();
  /// Takes over `other`'s handle; `other` is left empty.
  Event(Event&& other) noexcept;
  /// Releases this handle, then takes over `other`'s.
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  /// Enqueues the event on `stream`; it completes when all earlier work there has run.
  void Record(const Stream& stream);
  /// Blocks the host until the event has completed.
  void Synchronize() const;
  /// True when the event has completed (does not block).
  bool Query() const;
  /// Milliseconds of GPU time between two completed events (`start` recorded first).
  /// @throws zero::CudaError if either has not been recorded or has not completed.
  static float ElapsedMs(const Event& start, const Event& end);
  /// The `cudaEvent_t`, as an opaque pointer.
  void* handle() const { return handle_; }

 private:
  Event(void* handle, int device) : handle_(handle), device_(device) {}
  void* handle_ = nullptr;
  int device_ = 0;
};

/// Times GPU work on one stream with a pair of events: `Start(s)`, enqueue work, `Stop()`.
/// Unlike a host clock it measures when the GPU ran the work, not when it was enqueued.
class EventTimer {
 public:
  /// A timer whose events live on GPU `device`.
  explicit EventTimer(int device = 0);
  /// Records the start event on `stream` (the legacy default stream if omitted).
  void Start(const Stream& stream);
  /// `Start` on the legacy default stream of this timer's GPU.
  void Start();
  /// Records the end event on the stream given to `Start`, waits for it, and returns the
  /// milliseconds between the two. @throws zero::Error if `Start` was not called first.
  float Stop();

 private:
  Event start_, end_;
  int device_ = 0;
  void* stream_ = nullptr;
  bool started_ = false;
};

/// Page-locked ("pinned") host memory from `cudaMallocHost`. Move-only; freed on destruction.
///
/// The GPU's copy engines read pinned memory directly, so a copy from it can run
/// asynchronously and overlap with kernels; a copy from ordinary (pageable) memory
/// is staged through a driver buffer and blocks the host.
class PinnedBuffer {
 public:
  /// `bytes` bytes of pinned host memory (uninitialised).
  explicit PinnedBuffer(size_t bytes);
  ~PinnedBuffer();
  /// Takes over `other`'s handle; `other` is left empty.
  PinnedBuffer(PinnedBuffer&& other) noexcept;
  /// Releases this handle, then takes over `other`'s.
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  /// The start of the buffer.
  void* data() const { return data_; }
  /// The start of the buffer, typed.
  template <typename T>
  T* data_ptr() const {
    return static_cast<T*>(data_);
  }
  /// Size in bytes.
  size_t size_bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

/// Enqueues a copy of the first `dst.numel()` elements of `src` into the contiguous CUDA
/// tensor `dst` on `stream`, and returns at once. The copy is complete only after the
/// stream (or an event recorded after it) has been synchronised; `src` must not be
/// changed or freed before then. A non-default `stream` is not ordered with Zero's
/// kernels: see Note [Tensors used on another stream] at the top of this file.
/// @throws zero::Error if `dst` is not a contiguous CUDA tensor on the stream's GPU, or
/// `src` holds fewer bytes than `dst`.
void copy_async(const PinnedBuffer& src, const Tensor& dst, const Stream& stream);

/// Enqueues a kernel on `stream` that keeps one GPU thread busy for about `microseconds`
/// and returns at once: known, long GPU work for tests and for the async chapter (like
/// PyTorch's `torch.cuda._sleep`).
void busy_wait(double microseconds, const Stream& stream);

}  // namespace zero::cuda
