/// @file
/// `ZERO_HOST_DEVICE`: marks a function that both host code and CUDA kernels call, for
/// the few headers (philox.h, half.h) whose code runs on either side unchanged.
#pragma once

#if defined(__CUDACC__)
/// Marks a function callable from host and device code when compiled by nvcc.
#define ZERO_HOST_DEVICE __host__ __device__
#else
/// Marks a function callable from host and device code when compiled by nvcc.
#define ZERO_HOST_DEVICE
#endif
