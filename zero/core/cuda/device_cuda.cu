// The CUDA side of core: device queries and the caching CUDA allocator, which is
// the shared CachingPool (tensor_context.h) over cudaMalloc with 512-byte rounding.
#include <memory>
#include <mutex>
#include <vector>

#include "zero/core/cuda/cuda_check.cuh"
#include "zero/core/cuda_graph.h"
#include "zero/core/device.h"
#include "zero/core/device_memory.h"
#include "zero/core/tensor_context.h"

// Note [Blocks and streams] (core/tensor_context.h): cached blocks are reused in the
// order of one stream. With per-thread default streams, "stream 0" is a different
// stream in each host thread and that order is lost, so refuse to build that way.
#if defined(CUDA_API_PER_THREAD_DEFAULT_STREAM)
#error "Zero's caching allocator requires the legacy default stream; do not build with --default-stream per-thread"
#endif

namespace zero {

bool cuda_built() { return true; }

int cuda_device_count() {
  static const int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      cudaGetLastError();  // no driver or no GPU: clear the sticky error, report none
      n = 0;
    }
    return n;
  }();
  return count;
}

int cuda_compute_capability(int index) {
  int major = 0, minor = 0;
  ZERO_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, index));
  ZERO_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, index));
  return major * 10 + minor;
}

namespace detail {
int64_t cuda_total_memory(int index) {
  cudaDeviceProp prop;
  ZERO_CUDA_CHECK(cudaGetDeviceProperties(&prop, index));
  return static_cast<int64_t>(prop.totalGlobalMem);
}
}  // namespace detail

namespace {

class CudaMallocAllocator : public RawAllocator {
 public:
  explicit CudaMallocAllocator(int index) : index_(index) {}
  void* Allocate(size_t bytes) override {
    ZERO_CUDA_CHECK(cudaSetDevice(index_));
    void* ptr = nullptr;
    // While this thread captures a CUDA graph, cudaMalloc counts as unsafe (it may wait
    // for the device), but the graph's first blocks come from it: relax the check for
    // this one call, as PyTorch's allocator does.
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    ZERO_CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
    const cudaError_t status = cudaMalloc(&ptr, bytes);
    ZERO_CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
    if (status != cudaSuccess) {
      cudaGetLastError();  // out of memory is not sticky; let the pool trim and retry
      return nullptr;
    }
    return ptr;
  }
  void Free(void* ptr, size_t) override {
    ZERO_CUDA_CHECK(cudaSetDevice(index_));
    ZERO_CUDA_CHECK(cudaFree(ptr));
  }
  std::string Name() const override { return "cudaMalloc on cuda:" + std::to_string(index_); }

 private:
  int index_;
};

// Caching allocator of one GPU: requests rounded to 512 bytes (every cudaMalloc
// result is at least 256-byte aligned; rounding keeps cached sizes few and reusable).
// Every block is for the stream this thread launches on: the legacy default stream,
// where Zero launches all its work, or a capturing graph's (Note [Blocks a graph uses]).
class CUDATensorContext : public TensorContext {
 public:
  explicit CUDATensorContext(int index) : index_(index), raw_(index), pool_(raw_, 512) {}
  Device device() const override { return Device::Cuda(index_); }
  void* NewMem(size_t bytes) override {
    return pool_.Allocate(bytes, reinterpret_cast<CachingPool::StreamId>(cuda::launch_stream()));
  }
  CachingPool& pool() { return pool_; }
  void DeleteMem(void* ptr) override { pool_.Free(ptr); }
  void TrimFreePool() override { pool_.TrimFreePool(); }
  MemoryStats Stats() const override { return pool_.Stats(); }
  void ResetPeak() override { pool_.ResetPeak(); }

 private:
  int index_;
  CudaMallocAllocator raw_;
  CachingPool pool_;
};

}  // namespace

namespace detail {

TensorContext& cuda_tensor_context(int index) {
  const int count = cuda_device_count();
  ZERO_CHECK(index < count, "cuda:", index, " is not available: this machine has ", count,
             " CUDA device(s)");
  static std::mutex mutex;
  static std::vector<CUDATensorContext*> contexts;  // never destroyed, like the CPU's
  std::lock_guard<std::mutex> lock(mutex);
  if (contexts.empty()) contexts.resize(count, nullptr);
  if (contexts[index] == nullptr) contexts[index] = new CUDATensorContext(index);
  return *contexts[index];
}

CachingPool& cuda_pool(int index) {
  return static_cast<CUDATensorContext&>(cuda_tensor_context(index)).pool();
}

}  // namespace detail
}  // namespace zero
