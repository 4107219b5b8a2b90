// CudaGraph (public API in core/cuda_graph.h): stream capture, the allocator's part in
// it, and the Philox shift replays set.
//
// Note [The step as one CUDA graph]
// Zero launches every kernel on the legacy default stream, which cannot be captured.
// While capturing, a thread-local switch makes `launch_stream()` (and so every kernel,
// copy and cuBLAS call, through kernels/cuda/cuda_common.cuh) use a stream of the graph's
// own, created blocking: any call the captured code makes on the legacy stream (a
// synchronous copy to the host, say) then conflicts with the capture and fails it,
// rather than running once, outside the graph, unnoticed. The capture is thread-local:
// other threads may use CUDA meanwhile, this one may not wait for the GPU.
//
// Replays go to the legacy default stream, so they are ordered after the copies into the
// graph's fixed inputs and before whatever reads its outputs, with no event in between.
// What the host computed during capture is frozen into the kernels' arguments; so the
// values that change every step are read on the device instead (AdamW's step scalars,
// the Philox shift), and written there before each replay by small launches outside it.
#include "zero/core/cuda_graph.h"

#include <cuda_runtime.h>

#include "zero/core/cuda/cuda_check.cuh"
#include "zero/core/error.h"
#include "zero/core/tensor_context.h"

namespace zero {
namespace detail {
CachingPool& cuda_pool(int index);  // core/cuda/device_cuda.cu
}

namespace cuda {
namespace {

thread_local cudaStream_t tls_stream = nullptr;
thread_local const uint64_t* tls_shift = nullptr;

__global__ void set_word_kernel(uint64_t* word, uint64_t value) { *word = value; }

}  // namespace

void* launch_stream() { return tls_stream; }
const uint64_t* philox_shift() { return tls_shift; }

CudaGraph::CudaGraph(int device) : device_(device) {}

CudaGraph::~CudaGraph() { Release(); }

void CudaGraph::Release() {
  // Not checked: a destructor must not throw, and a failed call leaves nothing to undo.
  cudaSetDevice(device_);
  if (exec_ != nullptr || pool_kept_) cudaStreamSynchronize(nullptr);  // the last replay
  if (exec_ != nullptr) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec_));
  if (shift_ != nullptr) cudaFree(shift_);
  if (stream_ != nullptr) cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
  if (pool_kept_) {
    detail::cuda_pool(device_).EndGraph(reinterpret_cast<CachingPool::StreamId>(stream_));
  }
  exec_ = nullptr;
  shift_ = nullptr;
  stream_ = nullptr;
  pool_kept_ = false;
}

void CudaGraph::Capture(const std::function<void()>& work) {
  ZERO_CHECK(tls_stream == nullptr, "CudaGraph::Capture: this thread is already capturing");
  Release();
  ZERO_CUDA_CHECK(cudaSetDevice(device_));
  ZERO_CUDA_CHECK(cudaMalloc(&shift_, sizeof(uint64_t)));
  ZERO_CUDA_CHECK(cudaMemset(shift_, 0, sizeof(uint64_t)));
  last_shift_ = 0;
  cudaStream_t stream = nullptr;
  ZERO_CUDA_CHECK(cudaStreamCreate(&stream));  // blocking: see the Note above
  stream_ = stream;
  // Everything queued so far must run before the graph's first replay, which it does:
  // replays go to the legacy stream. The capture itself must not wait for it.
  detail::cuda_pool(device_).BeginGraph(reinterpret_cast<CachingPool::StreamId>(stream));
  pool_kept_ = true;
  cudaGraph_t graph = nullptr;
  ZERO_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  tls_stream = stream;
  tls_shift = shift_;
  try {
    work();
  } catch (...) {
    tls_stream = nullptr;
    tls_shift = nullptr;
    cudaStreamEndCapture(stream, &graph);  // ends the capture; its result is dropped
    if (graph != nullptr) cudaGraphDestroy(graph);
    cudaGetLastError();
    Release();
    throw;
  }
  tls_stream = nullptr;
  tls_shift = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  if (ended != cudaSuccess) {
    cudaGetLastError();
    Release();
    ZERO_CHECK(false, "CudaGraph::Capture: the work could not be captured (",
               cudaGetErrorString(ended), "); something in it waited for the GPU or used "
               "another stream");
  }
  cudaGraphExec_t exec = nullptr;
  const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  if (made != cudaSuccess) {
    cudaGetLastError();
    Release();
    ZERO_CHECK(false, "CudaGraph::Capture: cudaGraphInstantiate failed: ",
               cudaGetErrorString(made));
  }
  exec_ = exec;
}

void CudaGraph::Replay(uint64_t shift) {
  ZERO_CHECK(exec_ != nullptr, "CudaGraph::Replay: nothing was captured");
  ZERO_CHECK(shift % 4 == 0, "CudaGraph::Replay: the Philox shift must be a multiple of 4, "
             "got ", shift);
  ZERO_CUDA_CHECK(cudaSetDevice(device_));
  if (shift != last_shift_) {
    set_word_kernel<<<1, 1, 0, nullptr>>>(shift_, shift);
    ZERO_CUDA_LAUNCH_CHECK();
    last_shift_ = shift;
  }
  ZERO_CUDA_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec_), nullptr));
}

}  // namespace cuda
}  // namespace zero
