// The GPU half of chapter 03, defined in gpu.cu (built only with CUDA): measures
// host<->device copies from pageable and pinned memory and fits the copy model of
// exercise 03 (copy_model.h) to them. Returns the program's exit status.
#pragma once

namespace ch03 {

int run_copy_benchmark(bool quick);

}  // namespace ch03
