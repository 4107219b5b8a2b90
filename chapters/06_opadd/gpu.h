// Chapter 06: the CUDA-event timers main.cpp uses for the GPU rows of its table
// (gpu.cu); declared only when the chapter is built with CUDA (ZERO_CHAPTER_HAS_CUDA).
#pragma once

#include <cstddef>
#include <functional>

namespace ch06 {

// Microseconds per call of `f`: `iters` calls back to back between two CUDA events
// (so host-side overhead shows whenever it exceeds the GPU's work), median of `reps`.
double cuda_us_per_call(const std::function<void()>& f, int iters, int reps);

// Device-to-device cudaMemcpy of `bytes`: GB/s counting the read and the write.
double cuda_copy_gbs(size_t bytes, int reps);

}  // namespace ch06
