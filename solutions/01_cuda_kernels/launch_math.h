// Exercise 01: the arithmetic of a one-thread-per-element launch.
// Every element-wise kernel in chapter 01 (scale_kernel, add_kernel) finds its
// element with global_index() and is launched with blocks_for() blocks. Both are
// plain functions, callable from the host and the GPU, so the exercise test can
// simulate a whole launch on the CPU: tests/exercises/01_cuda_kernels/ex01_test.cpp.
#pragma once

#include <cstdint>

#include "zero/core/error.h"
#include "zero/core/philox.h"  // ZERO_HOST_DEVICE

namespace ch01 {

// 256 threads a block: 8 warps. Large enough to hide memory latency with several
// resident blocks per SM, small enough that a tail block wastes little.
constexpr int kThreadsPerBlock = 256;

// Number of blocks of `threads` threads that give each of `n` elements a thread:
// ceil(n / threads), computed in integers. 0 for n == 0 (the caller must then not
// launch: a grid of zero blocks is an invalid configuration). Requires threads > 0.
ZERO_HOST_DEVICE inline int64_t blocks_for(int64_t n, int64_t threads) {
  // BEGIN SOLUTION ex01.1: return ceil(n / threads) using only integer arithmetic.
  return (n + threads - 1) / threads;
  // END SOLUTION
}

// The element owned by thread `thread_idx` of block `block_idx`, for blocks of
// `block_dim` threads: blocks tile the array in order, threads tile their block.
// 64-bit, because blockIdx.x * blockDim.x overflows 32 bits past 4 Gi elements.
ZERO_HOST_DEVICE inline int64_t global_index(int64_t block_idx, int64_t block_dim,
                                             int64_t thread_idx) {
  // BEGIN SOLUTION ex01.2: return the index of the element this thread owns.
  return block_idx * block_dim + thread_idx;
  // END SOLUTION
}

}  // namespace ch01
