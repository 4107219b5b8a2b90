// Chapter 05: the entry point of the GPU half (gpu.cu), called from main.cpp only
// when the chapter was built with CUDA (ZERO_CHAPTER_HAS_CUDA) and a GPU is visible.
#pragma once

namespace ch05 {

// Times contiguous, transposed and broadcast adds on the GPU (library kernels and
// the exercise's strided kernel) after checking each against a CPU reference.
// Returns the number of mismatching results (0 = all correct).
int run_gpu_part(bool quick);

}  // namespace ch05
