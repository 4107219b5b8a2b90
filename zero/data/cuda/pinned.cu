// PinnedStaging with CUDA (see pinned.h): cudaMallocHost memory, cudaMemcpyAsync on the
// legacy default stream, and an event (timing disabled: cheaper) per buffer.
#include <cuda_runtime.h>

#include "zero/core/cuda/cuda_check.cuh"
#include "zero/data/cuda/pinned.h"

namespace zero::data::detail {

PinnedStaging::PinnedStaging(size_t bytes, int device) : bytes_(bytes), device_(device) {
  ZERO_CUDA_CHECK(cudaSetDevice(device_));
  ZERO_CUDA_CHECK(cudaMallocHost(&host_, bytes_ > 0 ? bytes_ : 1));
  cudaEvent_t event = nullptr;
  const cudaError_t status = cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
  if (status != cudaSuccess) {
    cudaFreeHost(host_);
    ZERO_CUDA_CHECK(status);
  }
  event_ = event;
}

PinnedStaging::~PinnedStaging() {
  // A copy may still be reading the buffer: wait for it before freeing. Errors are
  // ignored here (a destructor must not throw); a sticky error resurfaces elsewhere.
  cudaSetDevice(device_);
  if (recorded_) cudaEventSynchronize(static_cast<cudaEvent_t>(event_));
  cudaEventDestroy(static_cast<cudaEvent_t>(event_));
  cudaFreeHost(host_);
}

void PinnedStaging::CopyToDeviceAsync(size_t offset, void* dst, size_t bytes) {
  ZERO_ASSERT(offset + bytes <= bytes_, "copy of ", bytes, " bytes at ", offset,
              " overruns a staging buffer of ", bytes_);
  ZERO_CUDA_CHECK(cudaSetDevice(device_));
  ZERO_CUDA_CHECK(cudaMemcpyAsync(dst, static_cast<char*>(host_) + offset, bytes,
                                  cudaMemcpyHostToDevice, /*stream=*/0));
}

void PinnedStaging::RecordCopies() {
  ZERO_CUDA_CHECK(cudaSetDevice(device_));
  ZERO_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(event_), /*stream=*/0));
  recorded_ = true;
}

void PinnedStaging::WaitForCopies() {
  if (recorded_) ZERO_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(event_)));
}

}  // namespace zero::data::detail
