// The CUDA device entry points of a CPU-only build (-DZERO_CUDA=OFF or no toolkit):
// the same API, with every way into the GPU throwing one clear error.
#include "zero/core/device.h"
#include "zero/core/device_memory.h"
#include "zero/core/error.h"
#include "zero/core/tensor_context.h"

namespace zero {

bool cuda_built() { return false; }
int cuda_device_count() { return 0; }

namespace detail {
int64_t cuda_total_memory(int index) {
  ZERO_CHECK(false, "Zero was built without CUDA, so cuda:", index,
             " has no memory to report; rebuild with -DZERO_CUDA=ON on a machine with the CUDA toolkit");
  __builtin_unreachable();
}

TensorContext& cuda_tensor_context(int index) {
  ZERO_CHECK(false, "Zero was built without CUDA, so cuda:", index,
             " cannot be used; rebuild with -DZERO_CUDA=ON on a machine with the CUDA toolkit");
  __builtin_unreachable();
}
}  // namespace detail

int cuda_compute_capability(int index) {
  ZERO_CHECK(false, "Zero was built without CUDA, so cuda:", index,
             " has no compute capability; rebuild with -DZERO_CUDA=ON");
  __builtin_unreachable();
}

}  // namespace zero
