// CUDA element-wise kernels: binary (broadcasting via DimsArg), binary with a
// scalar, unary and unary backward. Contiguous aligned F32 operands take a float4
// path (16-byte loads and stores, a quarter of the instructions); anything else
// takes the strided path, which maps each output index through DimsArg and is
// templated on the element type T, computing in float (dtype_dispatch.h).
#include <cmath>
#include <type_traits>

#include "zero/kernels/cuda/cuda_common.cuh"
#include "zero/kernels/dims_arg.h"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/dtype_dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {
namespace {

using cuda::grid_for;
using cuda::kBlock;

// ---------------------------------------------------------------- functors

struct AddF { __device__ float operator()(float a, float b) const { return a + b; } };
struct SubF { __device__ float operator()(float a, float b) const { return a - b; } };
struct MulF { __device__ float operator()(float a, float b) const { return a * b; } };
struct DivF { __device__ float operator()(float a, float b) const { return a / b; } };

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCoeff = 0.044715f;

__device__ inline float gelu(float x) {
  return 0.5f * x * (1.0f + tanhf(kSqrt2OverPi * (x + kGeluCoeff * x * x * x)));
}

__device__ inline float gelu_grad(float x) {
  const float t = tanhf(kSqrt2OverPi * (x + kGeluCoeff * x * x * x));
  return 0.5f * (1.0f + t) +
         0.5f * x * (1.0f - t * t) * kSqrt2OverPi * (1.0f + 3.0f * kGeluCoeff * x * x);
}

// SiLU: x * sigmoid(x); derivative s (1 + x (1 - s)), s = sigmoid(x).
__device__ inline float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
__device__ inline float silu(float x) { return x * sigmoid(x); }
__device__ inline float silu_grad(float x) {
  const float s = sigmoid(x);
  return s * (1.0f + x * (1.0f - s));
}

struct UnaryF {
  UnaryOp op;
  __device__ float operator()(float v) const {
    switch (op) {
      case UnaryOp::kNeg: return -v;
      case UnaryOp::kExp: return expf(v);
      case UnaryOp::kLog: return logf(v);
      case UnaryOp::kSqrt: return sqrtf(v);
      case UnaryOp::kTanh: return tanhf(v);
      case UnaryOp::kRelu: return v > 0.0f ? v : 0.0f;
      case UnaryOp::kGelu: return gelu(v);
      case UnaryOp::kSilu: return silu(v);
    }
    return 0.0f;
  }
};

// `a op s` or `s op a`.
struct ScalarF {
  BinaryOp op;
  float s;
  bool scalar_first;
  __device__ float operator()(float v) const {
    const float a = scalar_first ? s : v, b = scalar_first ? v : s;
    switch (op) {
      case BinaryOp::kAdd: return a + b;
      case BinaryOp::kSub: return a - b;
      case BinaryOp::kMul: return a * b;
      case BinaryOp::kDiv: return a / b;
    }
    return 0.0f;
  }
};

// grad_x from (x, y, grad_y).
struct UnaryGradF {
  UnaryOp op;
  __device__ float operator()(float x, float y, float g) const {
    switch (op) {
      case UnaryOp::kNeg: return -g;
      case UnaryOp::kExp: return g * y;
      case UnaryOp::kLog: return g / x;
      case UnaryOp::kSqrt: return g * 0.5f / y;
      case UnaryOp::kTanh: return g * (1.0f - y * y);
      case UnaryOp::kRelu: return x > 0.0f ? g : 0.0f;
      case UnaryOp::kGelu: return g * gelu_grad(x);
      case UnaryOp::kSilu: return g * silu_grad(x);
    }
    return 0.0f;
  }
};

// grad_x from (x, grad_y), for the ops whose derivative needs only x.
struct UnaryGradFromX {
  UnaryOp op;
  __device__ float operator()(float x, float g) const { return UnaryGradF{op}(x, 0.0f, g); }
};

// ---------------------------------------------------------------- kernels

// n/4 float4 groups, then the n%4 tail by the first threads.
template <typename F>
__global__ void binary_vec4_kernel(const float* a, const float* b, float* out, int64_t n, F f) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t groups = n / 4;
  if (i < groups) {
    const float4 x = reinterpret_cast<const float4*>(a)[i];
    const float4 y = reinterpret_cast<const float4*>(b)[i];
    reinterpret_cast<float4*>(out)[i] = make_float4(f(x.x, y.x), f(x.y, y.y), f(x.z, y.z), f(x.w, y.w));
  }
  if (i < n - groups * 4) out[groups * 4 + i] = f(a[groups * 4 + i], b[groups * 4 + i]);
}

template <typename T, typename F>
__global__ void binary_strided_kernel(const T* a, DimsArg da, const T* b, DimsArg db, T* out,
                                      DimsArg dout, int64_t n, F f) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[dout.Offset(i)] = T(f(float(a[da.Offset(i)]), float(b[db.Offset(i)])));
}

template <typename F>
__global__ void unary_vec4_kernel(const float* x, float* out, int64_t n, F f) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t groups = n / 4;
  if (i < groups) {
    const float4 v = reinterpret_cast<const float4*>(x)[i];
    reinterpret_cast<float4*>(out)[i] = make_float4(f(v.x), f(v.y), f(v.z), f(v.w));
  }
  if (i < n - groups * 4) out[groups * 4 + i] = f(x[groups * 4 + i]);
}

template <typename T, typename F>
__global__ void unary_strided_kernel(const T* x, DimsArg dx, T* out, DimsArg dout, int64_t n,
                                     F f) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[dout.Offset(i)] = T(f(float(x[dx.Offset(i)])));
}

// out = f(x, y, g) over n contiguous floats, four at a time (the unary backward's path
// for the usual case; the strided kernel below pays an index division per dimension).
template <typename F>
__global__ void ternary_vec4_kernel(const float* x, const float* y, const float* g, float* out,
                                    int64_t n, F f) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t groups = n / 4;
  if (i < groups) {
    const float4 a = reinterpret_cast<const float4*>(x)[i];
    const float4 b = reinterpret_cast<const float4*>(y)[i];
    const float4 c = reinterpret_cast<const float4*>(g)[i];
    reinterpret_cast<float4*>(out)[i] =
        make_float4(f(a.x, b.x, c.x), f(a.y, b.y, c.y), f(a.z, b.z, c.z), f(a.w, b.w, c.w));
  }
  if (i < n - groups * 4) {
    const int64_t j = groups * 4 + i;
    out[j] = f(x[j], y[j], g[j]);
  }
}

template <typename T, typename F>
__global__ void ternary_strided_kernel(const T* x, DimsArg dx, const T* y, DimsArg dy,
                                       const T* g, DimsArg dg, T* out, DimsArg dout, int64_t n,
                                       F f) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) {
    out[dout.Offset(i)] =
        T(f(float(x[dx.Offset(i)]), float(y[dy.Offset(i)]), float(g[dg.Offset(i)])));
  }
}

// ---------------------------------------------------------------- launchers

// The float4 paths read F32 only; other element types take the strided kernels.
template <typename T>
constexpr bool kVec4 = std::is_same_v<T, float>;

template <typename T, typename F>
void launch_binary(const Tensor& a, const Tensor& b, const Tensor& out, F f) {
  const int64_t n = out.numel();
  if (n == 0) return;
  cuda::set_device(out);
  const bool same = a.sizes() == out.sizes() && b.sizes() == out.sizes();
  if (kVec4<T> && same && cuda::vec4_ok(a) && cuda::vec4_ok(b) && cuda::vec4_ok(out)) {
    binary_vec4_kernel<<<grid_for(n, 4), kBlock, 0, cuda::current_stream()>>>(
        a.data_ptr<float>(), b.data_ptr<float>(), out.data_ptr<float>(), n, f);
    ZERO_CUDA_LAUNCH_CHECK();
    return;
  }
  binary_strided_kernel<<<grid_for(n), kBlock, 0, cuda::current_stream()>>>(
      a.data_ptr<T>(), DimsArg::Broadcast(a.meta(), out.sizes()), b.data_ptr<T>(),
      DimsArg::Broadcast(b.meta(), out.sizes()), out.data_ptr<T>(), DimsArg::Of(out.meta()), n,
      f);
  ZERO_CUDA_LAUNCH_CHECK();
}

template <typename T, typename F>
void launch_unary(const Tensor& x, const Tensor& out, F f) {
  const int64_t n = out.numel();
  if (n == 0) return;
  cuda::set_device(out);
  if (kVec4<T> && cuda::vec4_ok(x) && cuda::vec4_ok(out)) {
    unary_vec4_kernel<<<grid_for(n, 4), kBlock, 0, cuda::current_stream()>>>(
        x.data_ptr<float>(), out.data_ptr<float>(), n, f);
    ZERO_CUDA_LAUNCH_CHECK();
    return;
  }
  unary_strided_kernel<<<grid_for(n), kBlock, 0, cuda::current_stream()>>>(
      x.data_ptr<T>(), DimsArg::Of(x.meta()), out.data_ptr<T>(), DimsArg::Of(out.meta()), n, f);
  ZERO_CUDA_LAUNCH_CHECK();
}

template <typename T>
void launch_unary_backward(UnaryOp op, const Tensor& x, const Tensor& y, const Tensor& grad_y,
                           const Tensor& grad_x) {
  const int64_t n = x.numel();
  if (n == 0) return;
  cuda::set_device(x);
  // GeLU, ReLU, log and negation need only x and grad_y: one stream of memory fewer.
  const bool needs_y = op == UnaryOp::kExp || op == UnaryOp::kSqrt || op == UnaryOp::kTanh;
  const bool vec4 = kVec4<T> && cuda::vec4_ok(x) && cuda::vec4_ok(grad_y) && cuda::vec4_ok(grad_x);
  if (vec4 && !needs_y) {
    binary_vec4_kernel<<<grid_for(n, 4), kBlock, 0, cuda::current_stream()>>>(
        x.data_ptr<float>(), grad_y.data_ptr<float>(), grad_x.data_ptr<float>(), n,
        UnaryGradFromX{op});
    ZERO_CUDA_LAUNCH_CHECK();
    return;
  }
  if (vec4 && cuda::vec4_ok(y)) {
    ternary_vec4_kernel<<<grid_for(n, 4), kBlock, 0, cuda::current_stream()>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), grad_y.data_ptr<float>(),
        grad_x.data_ptr<float>(), n, UnaryGradF{op});
    ZERO_CUDA_LAUNCH_CHECK();
    return;
  }
  ternary_strided_kernel<<<grid_for(n), kBlock, 0, cuda::current_stream()>>>(
      x.data_ptr<T>(), DimsArg::Of(x.meta()), y.data_ptr<T>(), DimsArg::Of(y.meta()),
      grad_y.data_ptr<T>(), DimsArg::Of(grad_y.meta()), grad_x.data_ptr<T>(),
      DimsArg::Of(grad_x.meta()), n, UnaryGradF{op});
  ZERO_CUDA_LAUNCH_CHECK();
}

// ---------------------------------------------------------------- entry points

void binary_cuda(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  dispatch_dtype<FloatTypes>(out.dtype(), "binary", [&](auto tag) {
    using T = typename decltype(tag)::type;
    switch (op) {
      case BinaryOp::kAdd: return launch_binary<T>(a, b, out, AddF{});
      case BinaryOp::kSub: return launch_binary<T>(a, b, out, SubF{});
      case BinaryOp::kMul: return launch_binary<T>(a, b, out, MulF{});
      case BinaryOp::kDiv: return launch_binary<T>(a, b, out, DivF{});
    }
  });
}

void binary_scalar_cuda(BinaryOp op, const Tensor& a, float s, const Tensor& out,
                        bool scalar_first) {
  dispatch_dtype<FloatTypes>(out.dtype(), "binary_scalar", [&](auto tag) {
    launch_unary<typename decltype(tag)::type>(a, out, ScalarF{op, s, scalar_first});
  });
}

void unary_cuda(UnaryOp op, const Tensor& x, const Tensor& out) {
  dispatch_dtype<FloatTypes>(out.dtype(), "unary", [&](auto tag) {
    launch_unary<typename decltype(tag)::type>(x, out, UnaryF{op});
  });
}

void unary_backward_cuda(UnaryOp op, const Tensor& x, const Tensor& y, const Tensor& grad_y,
                         const Tensor& grad_x) {
  dispatch_dtype<FloatTypes>(x.dtype(), "unary_backward", [&](auto tag) {
    launch_unary_backward<typename decltype(tag)::type>(op, x, y, grad_y, grad_x);
  });
}

}  // namespace

ZERO_REGISTER_KERNEL(binary, kCuda, binary_cuda);
ZERO_REGISTER_KERNEL(binary_scalar, kCuda, binary_scalar_cuda);
ZERO_REGISTER_KERNEL(unary, kCuda, unary_cuda);
ZERO_REGISTER_KERNEL(unary_backward, kCuda, unary_backward_cuda);

}  // namespace zero::ops
