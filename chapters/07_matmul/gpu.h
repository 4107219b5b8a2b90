// Chapter 07: what main.cpp (the CPU half), gpu.cu (the GPU half) and epilogue.cu share:
// the options, the datasheet figures the measurements are compared with, the timer, and
// the entry points of the GPU half (defined only when the chapter is built with CUDA).
#pragma once

#include "tools/gpu_median.h"

namespace ch07 {

struct Options {
  bool quick = false;  // small sizes, few repetitions: the CTest run
};

// NVIDIA H200 SXM datasheet figures (dense, no sparsity). Assumptions, not
// measurements: the program prints them as such and measures the rest.
constexpr double kPeakFp32Tflops = 67.0;
constexpr double kPeakTf32Tflops = 495.0;
constexpr double kPeakFp16Tflops = 990.0;
constexpr double kPeakHbmTBps = 4.8;

// Runs the GEMM, cuBLAS-overhead and GEMV-to-GEMM experiments; returns the number of
// results that failed their check against the CPU reference.
int run_gpu_part(const Options& options);

// Every GPU time of the chapter: median milliseconds of `reps` runs after `warmup`
// untimed ones, each timed with CUDA events on the default stream (chapter 08 explains
// why events).
using zero::tools::median_gpu_ms;

// Section 5 (epilogue.cu): zero::linear (bias added in the cuBLASLt epilogue) against a
// GEMM followed by an add; returns the number of mismatches.
int bias_epilogue(const Options& options);

}  // namespace ch07
