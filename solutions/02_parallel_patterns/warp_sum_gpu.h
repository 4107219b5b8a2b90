// Runs your warp_sum() (warp_reduce.h) on the GPU, for the exercise test:
// warp_sum_gpu.cu launches one thread per value and returns what each thread got.
#pragma once

#include <vector>

namespace ch02 {

// values.size() must be a multiple of 32: thread t holds values[t]. Returns, for
// every thread, the value warp_sum() returned to it (so every lane can be checked).
std::vector<float> warp_sums_on_gpu(const std::vector<float>& values);

}  // namespace ch02
