// The one error every missing kernel raises (dispatch.h).
#include "zero/kernels/dispatch.h"

#include "zero/core/error.h"

namespace zero::ops {

void throw_missing_kernel(const char* kernel, const Device& device) {
  // A CUDA slot is empty in every kernel of a CPU-only build: say so, and how to fix it.
  ZERO_CHECK(!device.is_cuda() || cuda_built(), kernel,
             ": Zero was built without CUDA; rebuild with -DZERO_CUDA=ON");
  ZERO_CHECK(false, kernel, ": no kernel for ", device, " in this build");
  __builtin_unreachable();
}

}  // namespace zero::ops
