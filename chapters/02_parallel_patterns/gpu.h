// The GPU half of chapter 02 (gpu.cu), called by main.cpp only when the program
// was built with CUDA (ZERO_CHAPTER_HAS_CUDA) and a GPU is visible at run time.
#pragma once

#include <vector>

namespace ch02 {

// Section 4: the reduction ladder, Zero's sum_all and the copy baseline on `x`,
// each result checked against `exact` (the CPU's double-precision sum) before it
// is timed. `version` 0 runs every version, N only version N. Returns the number
// of results that did not match.
int run_reduction_ladder(const std::vector<float>& x, double exact, int version, bool quick);

}  // namespace ch02
