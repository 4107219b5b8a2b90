// The entry points of the plain CUDA attention kernels (cuda/attention_reference.h) in a
// build without CUDA, where they throw like the other *_cuda kernels of such a build
// (no_cuda/kernels.cpp). With CUDA, cuda/attention_reference.cu defines them and this
// file compiles to nothing. The test that calls them skips without a GPU, but must link.
#include "zero/kernels/cuda/attention_reference.h"

#ifndef ZERO_HAS_CUDA
#include "zero/core/error.h"

namespace zero::ops {
namespace {

[[noreturn]] void no_cuda(const char* op) {
  ZERO_CHECK(false, op, ": Zero was built without CUDA; rebuild with -DZERO_CUDA=ON");
  __builtin_unreachable();
}

}  // namespace

void attention_reference_forward_cuda(const Tensor&, const Tensor&, const Tensor&, bool, float,
                                      uint64_t, uint64_t, const Tensor&, const Tensor&) {
  no_cuda("attention_reference_forward");
}

void attention_reference_backward_cuda(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                       const Tensor&, const Tensor&, bool, float, uint64_t,
                                       uint64_t, const Tensor&, const Tensor&, const Tensor&) {
  no_cuda("attention_reference_backward");
}

}  // namespace zero::ops
#endif
