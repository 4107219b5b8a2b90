// Streams, events, the event timer, pinned memory and copy_async (public API in
// stream.h). Thin RAII wrappers over the CUDA runtime: every call is checked, and the
// GPU that an object belongs to is made current only for the duration of each call.
#include <cuda_runtime.h>

#include <utility>

#include "zero/core/cuda/cuda_check.cuh"
#include "zero/core/cuda/device_guard.cuh"
#include "zero/core/stream.h"

namespace zero::cuda {
namespace {

void check_device(int device) {
  const int count = cuda_device_count();
  ZERO_CHECK(device >= 0 && device < count, "expected a CUDA device index in [0, ", count,
             "), got ", device);
}

cudaStream_t as_stream(void* handle) { return static_cast<cudaStream_t>(handle); }
cudaEvent_t as_event(void* handle) { return static_cast<cudaEvent_t>(handle); }

// Spins one thread on the GPU's nanosecond timer. %globaltimer counts wall-clock time
// independently of the SM clock, so the duration does not depend on boost clocks.
__global__ void busy_wait_kernel(unsigned long long nanoseconds) {
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    __nanosleep(1000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < nanoseconds);
}

}  // namespace

// ---------------------------------------------------------------- Stream

Stream Stream::Create(int device) {
  check_device(device);
  DeviceGuard guard(device);
  cudaStream_t stream = nullptr;
  ZERO_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  return Stream(stream, device, true);
}

Stream Stream::Default(int device) {
  check_device(device);
  return Stream(nullptr, device, false);
}

Stream::~Stream() {
  if (owned_ && handle_ != nullptr) {
    // cudaStreamDestroy returns at once; queued work still completes. Not checked:
    // destructors must not throw, and at process exit the driver may be gone.
    cudaStreamDestroy(as_stream(handle_));
  }
}

Stream::Stream(Stream&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)),
      device_(other.device_),
      owned_(std::exchange(other.owned_, false)) {}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    Stream old(std::move(*this));  // destroys our current stream on return
    handle_ = std::exchange(other.handle_, nullptr);
    device_ = other.device_;
    owned_ = std::exchange(other.owned_, false);
  }
  return *this;
}

void Stream::Synchronize() const {
  DeviceGuard guard(device_);
  ZERO_CUDA_CHECK(cudaStreamSynchronize(as_stream(handle_)));
}

void Stream::Wait(const Event& event) const {
  DeviceGuard guard(device_);
  ZERO_CUDA_CHECK(cudaStreamWaitEvent(as_stream(handle_), as_event(event.handle()), 0));
}

bool Stream::Query() const {
  DeviceGuard guard(device_);
  const cudaError_t status = cudaStreamQuery(as_stream(handle_));
  if (status == cudaErrorNotReady) return false;
  ZERO_CUDA_CHECK(status);
  return true;
}

// ---------------------------------------------------------------- Event

Event Event::Create(int device) {
  check_device(device);
  DeviceGuard guard(device);
  cudaEvent_t event = nullptr;
  ZERO_CUDA_CHECK(cudaEventCreate(&event));
  return Event(event, device);
}

Event::~Event() {
  if (handle_ != nullptr) cudaEventDestroy(as_event(handle_));
}

Event::Event(Event&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)), device_(other.device_) {}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    Event old(std::move(*this));
    handle_ = std::exchange(other.handle_, nullptr);
    device_ = other.device_;
  }
  return *this;
}

void Event::Record(const Stream& stream) {
  ZERO_CHECK(stream.device() == device_, "expected a stream on cuda:", device_,
             " to record this event on, got a stream on cuda:", stream.device());
  DeviceGuard guard(device_);
  ZERO_CUDA_CHECK(cudaEventRecord(as_event(handle_), as_stream(stream.handle())));
}

void Event::Synchronize() const {
  DeviceGuard guard(device_);
  ZERO_CUDA_CHECK(cudaEventSynchronize(as_event(handle_)));
}

bool Event::Query() const {
  DeviceGuard guard(device_);
  const cudaError_t status = cudaEventQuery(as_event(handle_));
  if (status == cudaErrorNotReady) return false;
  ZERO_CUDA_CHECK(status);
  return true;
}

float Event::ElapsedMs(const Event& start, const Event& end) {
  DeviceGuard guard(end.device_);
  float ms = 0.0f;
  ZERO_CUDA_CHECK(cudaEventElapsedTime(&ms, as_event(start.handle_), as_event(end.handle_)));
  return ms;
}

// ---------------------------------------------------------------- EventTimer

EventTimer::EventTimer(int device)
    : start_(Event::Create(device)), end_(Event::Create(device)), device_(device) {}

void EventTimer::Start(const Stream& stream) {
  start_.Record(stream);
  stream_ = stream.handle();
  started_ = true;
}

void EventTimer::Start() { Start(Stream::Default(device_)); }

float EventTimer::Stop() {
  ZERO_CHECK(started_, "expected EventTimer::Start() before Stop(), got Stop() alone");
  started_ = false;
  DeviceGuard guard(device_);
  ZERO_CUDA_CHECK(cudaEventRecord(as_event(end_.handle()), as_stream(stream_)));
  end_.Synchronize();
  return Event::ElapsedMs(start_, end_);
}

// ---------------------------------------------------------------- PinnedBuffer

PinnedBuffer::PinnedBuffer(size_t bytes) : bytes_(bytes) {
  ZERO_CHECK(cuda_device_count() > 0, "expected a CUDA device for pinned memory, got none");
  if (bytes > 0) ZERO_CUDA_CHECK(cudaMallocHost(&data_, bytes));
}

PinnedBuffer::~PinnedBuffer() {
  if (data_ != nullptr) cudaFreeHost(data_);
}

PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  if (this != &other) {
    PinnedBuffer old(std::move(*this));
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

// ---------------------------------------------------------------- copies and work

void copy_async(const PinnedBuffer& src, const Tensor& dst, const Stream& stream) {
  ZERO_CHECK(dst.device().is_cuda(), "copy_async: expected a CUDA destination tensor, got one on ",
             dst.device().ToString());
  ZERO_CHECK(dst.device().index() == stream.device(), "copy_async: expected the stream on ",
             dst.device().ToString(),
             " (the destination's GPU), got a stream on cuda:", stream.device());
  ZERO_CHECK(dst.is_contiguous(),
             "copy_async: expected a contiguous destination tensor, got sizes ",
             shape_to_string(dst.sizes()), " with strides ", shape_to_string(dst.strides()));
  const size_t bytes = static_cast<size_t>(dst.numel()) * dtype_size(dst.dtype());
  ZERO_CHECK(src.size_bytes() >= bytes, "copy_async: expected a pinned buffer of at least ", bytes,
             " bytes for a tensor of sizes ", shape_to_string(dst.sizes()), ", got ",
             src.size_bytes(), " bytes");
  if (bytes == 0) return;
  DeviceGuard guard(stream.device());
  ZERO_CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), bytes, cudaMemcpyHostToDevice,
                                  as_stream(stream.handle())));
}

void busy_wait(double microseconds, const Stream& stream) {
  ZERO_CHECK(microseconds >= 0, "busy_wait: expected a non-negative duration, got ", microseconds,
             " us");
  DeviceGuard guard(stream.device());
  busy_wait_kernel<<<1, 1, 0, as_stream(stream.handle())>>>(
      static_cast<unsigned long long>(microseconds * 1000.0));
  ZERO_CUDA_LAUNCH_CHECK();
}

}  // namespace zero::cuda
