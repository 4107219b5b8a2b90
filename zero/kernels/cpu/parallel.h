// Helpers shared by the CPU kernels: when to go parallel, and the strided loop
// every element-wise kernel falls back to when its operands are not contiguous.
#pragma once

#include <cstdint>

#include "zero/core/tensor.h"
#include "zero/kernels/dims_arg.h"

namespace zero::ops {

// Below this many elements an OpenMP parallel region costs more than it saves.
constexpr int64_t kParallelGrain = 1 << 15;

// True when `t` is contiguous and has exactly `sizes` (no broadcasting needed).
inline bool dense_as(const Tensor& t, const Shape& sizes) {
  return t.is_contiguous() && t.sizes() == sizes;
}

}  // namespace zero::ops
