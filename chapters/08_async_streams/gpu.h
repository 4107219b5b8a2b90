// Chapter 08: what main.cpp (the CPU half) and the GPU half (gpu.cu, overlap.cu, fault.cu)
// share: the options and the entry points of the GPU half (defined only with CUDA).
#pragma once

#include <string>

namespace ch08 {

struct Options {
  bool quick = false;        // small sizes, short waits: the CTest run
  bool fault = false;        // run only the asynchronous-error demonstration
  std::string timeline_csv;  // --timeline FILE: where section 6 writes its timeline
};

// Runs the launch, sync-point, timing, stream-ordering and overlap experiments; returns
// the number of results that failed their check against the CPU reference.
int run_gpu_part(const Options& options);

// Section 6 (overlap.cu): one stream against two for chunked copies and compute, with
// the timeline of every chunk; returns 1 if the output does not match the CPU, else 0.
int overlap(const Options& options);

// Launches a kernel that writes out of bounds and shows where the error is reported:
// at a later call, or at the launch under CUDA_LAUNCH_BLOCKING=1. Returns 0 when an
// error was reported (as it must be), 1 otherwise.
int run_fault_demo();

}  // namespace ch08
