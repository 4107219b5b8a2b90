// Helpers shared by the CPU kernels: when to go parallel, and the strided loop
// every element-wise kernel falls back to when its operands are not contiguous.
#pragma once

#include <cstdint>

#include "zero/core/tensor.h"
#include "zero/kernels/dims_arg.h"

namespace zero::ops {

// Below this many elements an OpenMP parallel region costs more than it saves.
constexpr int64_t kParallelGrain = 1 << 15;

// The same for the cheapest loops, a load or two, one operation and a store per
// element (a dense add, a fill), which one core runs at cache speed: 256K elements
// take it some 40 us, about what waking a sleeping worker costs on a small virtual
// machine (use_passive_openmp_wait, kernels/cpu_threads.h). Below that, two threads
// were slower than one in the measurement of chapter 11's README.
constexpr int64_t kCheapLoopGrain = 1 << 18;

// True when `t` is contiguous and has exactly `sizes` (no broadcasting needed).
inline bool dense_as(const Tensor& t, const Shape& sizes) {
  return t.is_contiguous() && t.sizes() == sizes;
}

}  // namespace zero::ops
