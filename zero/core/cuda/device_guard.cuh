// DeviceGuard: makes a GPU current for a scope and restores the caller's afterwards, so
// that work for cuda:1 (a stream, an NCCL call) does not silently move the caller's later
// work to cuda:1. Private to the CUDA sources (.cu files, and .cpp files built with the
// CUDA runtime such as the NCCL communicator).
#pragma once

#include <cuda_runtime.h>

#include "zero/core/cuda/cuda_check.cuh"

namespace zero::cuda {

class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    ZERO_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != device) ZERO_CUDA_CHECK(cudaSetDevice(device));
  }
  ~DeviceGuard() { cudaSetDevice(previous_); }  // a destructor must not throw
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

}  // namespace zero::cuda
