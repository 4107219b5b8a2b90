// PinnedStaging in a build without CUDA (see zero/data/cuda/pinned.h): there is no GPU
// to copy to, so making one throws the same "built without CUDA" error as every other
// way into the GPU. BatchSampler only makes them for a CUDA device.
#include "zero/data/cuda/pinned.h"

#include "zero/core/error.h"

namespace zero::data::detail {

PinnedStaging::PinnedStaging(size_t bytes, int device) : bytes_(bytes), device_(device) {
  ZERO_CHECK(false, "Zero was built without CUDA, so batches cannot be staged for cuda:", device,
             "; rebuild with -DZERO_CUDA=ON on a machine with the CUDA toolkit");
}

PinnedStaging::~PinnedStaging() = default;

void PinnedStaging::CopyToDeviceAsync(size_t, void*, size_t) {
  ZERO_ASSERT(false, "PinnedStaging used in a build without CUDA");
}

void PinnedStaging::RecordCopies() {
  ZERO_ASSERT(false, "PinnedStaging used in a build without CUDA");
}

void PinnedStaging::WaitForCopies() {}

}  // namespace zero::data::detail
