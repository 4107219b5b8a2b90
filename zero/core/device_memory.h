/// @file
/// How much memory a device has, so that a program can refuse a size it could never hold
/// before it allocates anything (train/budget.h does this for training and sampling).
#pragma once

#include <cstdint>

#include "zero/core/device.h"

namespace zero {

/// Total bytes of memory of `device`: the physical RAM for the CPU, the global memory of
/// the GPU for cuda:N. @throws zero::Error for a GPU when Zero was built without CUDA.
int64_t device_total_memory(Device device);

namespace detail {
/// The CUDA half of `device_total_memory` (core/cuda/device_cuda.cu, or the throwing
/// version of a build without CUDA).
int64_t cuda_total_memory(int index);
}  // namespace detail

}  // namespace zero
