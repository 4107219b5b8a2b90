// The optimiser's multi-tensor CUDA entry points in a CPU-only build: optim/ names
// them, so they must exist, but no CUDA tensor can be made in such a build, so nothing
// reaches them. Each throws the same "built without CUDA" error as no_cuda/kernels.cpp.
#include "zero/optim/cuda/multi_tensor.h"

namespace zero::optim::detail {
namespace {

[[noreturn]] void no_cuda_kernel(const char* op) {
  ZERO_CHECK(false, op, ": Zero was built without CUDA; rebuild with -DZERO_CUDA=ON");
  __builtin_unreachable();
}

}  // namespace

void adamw_multi_cuda(const std::vector<AdamWTensor>&, const ops::AdamWParams&) {
  no_cuda_kernel("adamw_multi");
}
Tensor sum_of_squares_multi_cuda(const std::vector<Tensor>&) {
  no_cuda_kernel("sum_of_squares_multi");
}
void scale_multi_cuda(const std::vector<Tensor>&, float) { no_cuda_kernel("scale_multi"); }

}  // namespace zero::optim::detail
