// CUDA softmax and log-softmax over the last dimension, one block per row.
//
// Note [Softmax in one read]
// Softmax needs the row maximum, then the sum of exponentials, then the output:
// three passes. Reading the row from memory three times would triple the traffic
// of a memory-bound kernel, so each thread keeps its share of the row in
// registers (up to kMaxVec float4 values) and only the final write goes
// back to memory: one read and one write per element, the minimum possible.
// Rows longer than kThreads * kMaxVec * 4 = 8192, or not float4-aligned, take the
// general kernel, which re-reads the row (from L2 for rows of a few KB). So do BF16 and
// F16 rows: the general and backward kernels are templated on the element type T,
// loading it into float and rounding each output once; the register path is FP32's.
#include "zero/kernels/cuda/block_reduce.cuh"
#include "zero/kernels/cuda/cuda_common.cuh"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/dtype_dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxVec = 8;  // float4 loads per thread kept in registers: rows up to 8192

// LOG selects log-softmax. Row length `n` must be a multiple of 4 and rows 16-byte
// aligned for the register path.
template <bool LOG>
__global__ void softmax_registers_kernel(const float* x, float* y, int64_t n) {
  __shared__ float scratch[2][32];
  const float4* row = reinterpret_cast<const float4*>(x + blockIdx.x * n);
  float4* out = reinterpret_cast<float4*>(y + blockIdx.x * n);
  const int groups = static_cast<int>(n / 4);
  float4 v[kMaxVec];
  float m = -INFINITY;
#pragma unroll
  for (int k = 0; k < kMaxVec; ++k) {
    const int g = threadIdx.x + k * kThreads;
    v[k] = g < groups ? row[g] : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
    m = fmaxf(m, fmaxf(fmaxf(v[k].x, v[k].y), fmaxf(v[k].z, v[k].w)));
  }
  m = cuda::block_max(m, scratch[0]);
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < kMaxVec; ++k) {
    s += __expf(v[k].x - m) + __expf(v[k].y - m) + __expf(v[k].z - m) + __expf(v[k].w - m);
  }
  s = cuda::block_sum(s, scratch[1]);
  const float log_s = __logf(s), inv_s = 1.0f / s;
#pragma unroll
  for (int k = 0; k < kMaxVec; ++k) {
    const int g = threadIdx.x + k * kThreads;
    if (g >= groups) break;
    float4 r;
    if (LOG) {
      r = make_float4(v[k].x - m - log_s, v[k].y - m - log_s, v[k].z - m - log_s, v[k].w - m - log_s);
    } else {
      r = make_float4(__expf(v[k].x - m) * inv_s, __expf(v[k].y - m) * inv_s,
                      __expf(v[k].z - m) * inv_s, __expf(v[k].w - m) * inv_s);
    }
    out[g] = r;
  }
}

// Element i of p as a float (exact for every T).
template <typename T>
__device__ inline float load(const T* p, int64_t i) {
  return static_cast<float>(p[i]);
}

// Any row length: three passes over the row (max, sum, write).
template <bool LOG, typename T>
__global__ void softmax_general_kernel(const T* x, T* y, int64_t n) {
  __shared__ float scratch[2][32];
  const T* row = x + blockIdx.x * n;
  T* out = y + blockIdx.x * n;
  float m = -INFINITY;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) m = fmaxf(m, load(row, i));
  m = cuda::block_max(m, scratch[0]);
  float s = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += __expf(load(row, i) - m);
  s = cuda::block_sum(s, scratch[1]);
  const float log_s = __logf(s), inv_s = 1.0f / s;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const float v = load(row, i);
    out[i] = static_cast<T>(LOG ? v - m - log_s : __expf(v - m) * inv_s);
  }
}

// softmax:     grad_x = y * (g - sum(g * y))
// log-softmax: grad_x = g - exp(y) * sum(g)
template <bool LOG, typename T>
__global__ void softmax_backward_kernel(const T* y, const T* g, T* gx, int64_t n) {
  __shared__ float scratch[32];
  const int64_t base = blockIdx.x * n;
  float s = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    s += LOG ? load(g, base + i) : load(g, base + i) * load(y, base + i);
  }
  s = cuda::block_sum(s, scratch);
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const float yi = load(y, base + i), gi = load(g, base + i);
    gx[base + i] = static_cast<T>(LOG ? gi - __expf(yi) * s : yi * (gi - s));
  }
}

template <bool LOG>
void launch_forward(const Tensor& x, const Tensor& y) {
  if (x.numel() == 0) return;
  cuda::set_device(x);
  const int64_t n = x.size(-1), rows = x.numel() / n;
  const unsigned grid = static_cast<unsigned>(rows);
  if (x.dtype() == DataType::F32 && n % 4 == 0 && n <= 4 * kMaxVec * kThreads &&
      cuda::vec4_ok(x) && cuda::vec4_ok(y)) {
    softmax_registers_kernel<LOG><<<grid, kThreads, 0, cuda::current_stream()>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), n);
    ZERO_CUDA_LAUNCH_CHECK();
    return;
  }
  dispatch_dtype<FloatTypes>(x.dtype(), LOG ? "log_softmax" : "softmax", [&](auto tag) {
    using T = typename decltype(tag)::type;
    softmax_general_kernel<LOG, T><<<grid, kThreads, 0, cuda::current_stream()>>>(
        x.data_ptr<T>(), y.data_ptr<T>(), n);
    ZERO_CUDA_LAUNCH_CHECK();
  });
}

template <bool LOG>
void launch_backward(const Tensor& y, const Tensor& g, const Tensor& gx) {
  if (y.numel() == 0) return;
  cuda::set_device(y);
  const int64_t n = y.size(-1), rows = y.numel() / n;
  dispatch_dtype<FloatTypes>(y.dtype(), LOG ? "log_softmax backward" : "softmax backward",
                             [&](auto tag) {
    using T = typename decltype(tag)::type;
    softmax_backward_kernel<LOG, T><<<static_cast<unsigned>(rows), kThreads, 0,
                                      cuda::current_stream()>>>(
        y.data_ptr<T>(), g.data_ptr<T>(), gx.data_ptr<T>(), n);
    ZERO_CUDA_LAUNCH_CHECK();
  });
}

void softmax_forward_cuda(const Tensor& x, const Tensor& y) { launch_forward<false>(x, y); }
void log_softmax_forward_cuda(const Tensor& x, const Tensor& y) { launch_forward<true>(x, y); }
void softmax_backward_cuda(const Tensor& y, const Tensor& grad_y, const Tensor& grad_x) {
  launch_backward<false>(y, grad_y, grad_x);
}
void log_softmax_backward_cuda(const Tensor& y, const Tensor& grad_y, const Tensor& grad_x) {
  launch_backward<true>(y, grad_y, grad_x);
}

}  // namespace

ZERO_REGISTER_KERNEL(softmax_forward, kCuda, softmax_forward_cuda);
ZERO_REGISTER_KERNEL(log_softmax_forward, kCuda, log_softmax_forward_cuda);
ZERO_REGISTER_KERNEL(softmax_backward, kCuda, softmax_backward_cuda);
ZERO_REGISTER_KERNEL(log_softmax_backward, kCuda, log_softmax_backward_cuda);

}  // namespace zero::ops
