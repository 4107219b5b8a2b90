// The GPU half of chapter 01 (gpu.cu), called by main.cpp only when the program
// was built with CUDA (ZERO_CHAPTER_HAS_CUDA) and a GPU is visible at run time.
#pragma once

namespace ch01 {

// Section 4 (device query) and section 5 (kernels against the copy bandwidth).
// Returns the number of results that did not match the CPU reference (0 = all did).
int run_gpu_part(bool quick);

}  // namespace ch01
