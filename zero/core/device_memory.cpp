// device_total_memory (device_memory.h): sysconf for the CPU, the CUDA side for GPUs.
#include "zero/core/device_memory.h"

#include <unistd.h>

namespace zero {

int64_t device_total_memory(Device device) {
  if (device.is_cuda()) return detail::cuda_total_memory(device.index());
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : INT64_MAX;
}

}  // namespace zero
