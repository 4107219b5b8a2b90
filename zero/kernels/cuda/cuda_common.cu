// The one out-of-line helper of cuda_common.cuh that is not a kernel launcher.
#include <map>
#include <mutex>
#include <utility>

#include "zero/kernels/cuda/cuda_common.cuh"

namespace zero::ops::cuda {

int device_attribute(int device, cudaDeviceAttr attr) {
  static std::mutex mutex;
  static std::map<std::pair<int, int>, int> known;
  std::lock_guard<std::mutex> lock(mutex);
  const auto key = std::make_pair(device, static_cast<int>(attr));
  auto it = known.find(key);
  if (it == known.end()) {
    int value = 0;
    ZERO_CUDA_CHECK(cudaDeviceGetAttribute(&value, attr, device));
    it = known.emplace(key, value).first;
  }
  return it->second;
}

}  // namespace zero::ops::cuda
