// CudaGraph in a CPU-only build: nothing is ever captured, so kernels would launch on
// the default stream with no Philox shift; making a graph throws one clear error.
#include "zero/core/cuda_graph.h"

#include "zero/core/error.h"

namespace zero::cuda {

void* launch_stream() { return nullptr; }
const uint64_t* philox_shift() { return nullptr; }

CudaGraph::CudaGraph(int device) : device_(device) {
  ZERO_CHECK(false, "CudaGraph: Zero was built without CUDA; rebuild with -DZERO_CUDA=ON");
}
CudaGraph::~CudaGraph() = default;
void CudaGraph::Capture(const std::function<void()>&) {}
void CudaGraph::Replay(uint64_t) {}
void CudaGraph::Release() {}

}  // namespace zero::cuda
