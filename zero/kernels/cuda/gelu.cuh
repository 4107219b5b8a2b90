// GeLU's tanh approximation, 0.5 x (1 + tanh(k (x + 0.044715 x^3))) with k = sqrt(2/pi),
// and its derivative on the GPU: one definition for elementwise.cu's unary kernels and
// gelu_epilogue.cu's pass of the MLP's backward, so that in FP32 the two give the same
// bits. Each formula takes t, the tanh, so that a kernel that needs both evaluates it once.
#pragma once

#include <cuda_runtime.h>

namespace zero::ops::cuda {

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCoeff = 0.044715f;

// GeLU's argument of tanh at x.
__device__ inline float gelu_arg(float x) { return kSqrt2OverPi * (x + kGeluCoeff * x * x * x); }

// gelu(x) and gelu'(x) from t = tanh(gelu_arg(x)).
__device__ inline float gelu_from(float x, float t) { return 0.5f * x * (1.0f + t); }
__device__ inline float gelu_grad_from(float x, float t) {
  return 0.5f * (1.0f + t) +
         0.5f * x * (1.0f - t * t) * kSqrt2OverPi * (1.0f + 3.0f * kGeluCoeff * x * x);
}

// With the exact tanhf.
__device__ inline float gelu(float x) { return gelu_from(x, tanhf(gelu_arg(x))); }
__device__ inline float gelu_grad(float x) { return gelu_grad_from(x, tanhf(gelu_arg(x))); }

}  // namespace zero::ops::cuda
