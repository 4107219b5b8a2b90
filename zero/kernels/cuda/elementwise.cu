// CUDA element-wise kernels: binary (broadcasting via DimsArg), binary with a
// scalar, unary and unary backward, templated on the element type T and computing in
// float (dtype_dispatch.h). Contiguous, 16-byte aligned operands take a packed path
// (16-byte loads and stores: 4 floats or 8 BF16/F16 values a thread); anything else
// takes the strided path, which maps each output index through DimsArg, a division per
// dimension per element. Between them, an operand that repeats along the other's
// leading dimensions (a bias, a position table, a one-element gradient) keeps the packed
// path, indexing its packs modulo its size. All round each result once, so they give the
// same bits.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "zero/kernels/cuda/cuda_common.cuh"
#include "zero/kernels/cuda/gelu.cuh"
#include "zero/kernels/dims_arg.h"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/dtype_dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {
namespace {

using cuda::grid_for;
using cuda::kBlock;
using cuda::kPack;
using cuda::Pack;

// ---------------------------------------------------------------- functors

struct AddF { __device__ float operator()(float a, float b) const { return a + b; } };
struct SubF { __device__ float operator()(float a, float b) const { return a - b; } };
struct MulF { __device__ float operator()(float a, float b) const { return a * b; } };
struct DivF { __device__ float operator()(float a, float b) const { return a / b; } };

using cuda::gelu;       // gelu.cuh
using cuda::gelu_grad;

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

// n / kPack groups of contiguous, 16-byte aligned elements, then the tail of fewer than
// kPack by the first threads. Arithmetic in float, rounded once to T.
template <typename T, typename F>
__global__ void binary_vec_kernel(const T* a, const T* b, T* out, int64_t n, F f) {
  constexpr int N = kPack<T>;
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t groups = n / N;
  if (i < groups) {
    const Pack<T> x = reinterpret_cast<const Pack<T>*>(a)[i];
    const Pack<T> y = reinterpret_cast<const Pack<T>*>(b)[i];
    Pack<T> r;
#pragma unroll
    for (int e = 0; e < N; ++e) r.v[e] = T(f(float(x.v[e]), float(y.v[e])));
    reinterpret_cast<Pack<T>*>(out)[i] = r;
  }
  const int64_t j = groups * N + i;
  if (i < n - groups * N) out[j] = T(f(float(a[j]), float(b[j])));
}

// out = f(a, b) for contiguous a and out, where b holds m contiguous elements repeated
// along a's leading dimensions: element i meets b[i % m]. m == 1 is a scalar; otherwise
// m % kPack == 0, so each pack of a meets one whole pack of b.
template <typename T, typename F>
__global__ void binary_repeat_vec_kernel(const T* a, const T* b, int64_t m, T* out, int64_t n,
                                         F f) {
  constexpr int N = kPack<T>;
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t groups = n / N;
  if (i < groups) {
    const Pack<T> x = reinterpret_cast<const Pack<T>*>(a)[i];
    Pack<T> y;
    if (m == 1) {
#pragma unroll
      for (int e = 0; e < N; ++e) y.v[e] = b[0];
    } else {
      y = reinterpret_cast<const Pack<T>*>(b)[i * N % m / N];
    }
    Pack<T> r;
#pragma unroll
    for (int e = 0; e < N; ++e) r.v[e] = T(f(float(x.v[e]), float(y.v[e])));
    reinterpret_cast<Pack<T>*>(out)[i] = r;
  }
  const int64_t j = groups * N + i;
  if (i < n - groups * N) out[j] = T(f(float(a[j]), float(b[j % m])));
}

// f with its operands exchanged, for when the repeated operand is the first one.
template <typename F>
struct Swapped {
  F f;
  __device__ float operator()(float a, float b) const { return f(b, a); }
};

template <typename T, typename F>
__global__ void binary_strided_kernel(const T* a, DimsArg da, const T* b, DimsArg db, T* out,
                                      DimsArg dout, int64_t n, F f) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[dout.Offset(i)] = T(f(float(a[da.Offset(i)]), float(b[db.Offset(i)])));
}

template <typename T, typename F>
__global__ void unary_vec_kernel(const T* x, T* out, int64_t n, F f) {
  constexpr int N = kPack<T>;
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t groups = n / N;
  if (i < groups) {
    const Pack<T> v = reinterpret_cast<const Pack<T>*>(x)[i];
    Pack<T> r;
#pragma unroll
    for (int e = 0; e < N; ++e) r.v[e] = T(f(float(v.v[e])));
    reinterpret_cast<Pack<T>*>(out)[i] = r;
  }
  const int64_t j = groups * N + i;
  if (i < n - groups * N) out[j] = T(f(float(x[j])));
}

template <typename T, typename F>
__global__ void unary_strided_kernel(const T* x, DimsArg dx, T* out, DimsArg dout, int64_t n,
                                     F f) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[dout.Offset(i)] = T(f(float(x[dx.Offset(i)])));
}

// out = f(x, y, g) over n contiguous elements, a 16-byte pack at a time (the unary
// backward's path for the usual case; the strided kernel below pays an index division
// per dimension).
template <typename T, typename F>
__global__ void ternary_vec_kernel(const T* x, const T* y, const T* g, T* out, int64_t n, F f) {
  constexpr int N = kPack<T>;
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t groups = n / N;
  if (i < groups) {
    const Pack<T> a = reinterpret_cast<const Pack<T>*>(x)[i];
    const Pack<T> b = reinterpret_cast<const Pack<T>*>(y)[i];
    const Pack<T> c = reinterpret_cast<const Pack<T>*>(g)[i];
    Pack<T> r;
#pragma unroll
    for (int e = 0; e < N; ++e) r.v[e] = T(f(float(a.v[e]), float(b.v[e]), float(c.v[e])));
    reinterpret_cast<Pack<T>*>(out)[i] = r;
  }
  const int64_t j = groups * N + i;
  if (i < n - groups * N) out[j] = T(f(float(x[j]), float(y[j]), float(g[j])));
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

// Whether `t` can be binary_repeat_vec_kernel's b for an output of shape `out`: one
// element, or contiguous, 16-byte aligned, a whole number of packs, and its shape (less
// any leading 1s) the trailing dimensions of `out`.
template <typename T>
bool repeats_along_leading(const Tensor& t, const Shape& out) {
  if (t.numel() == 1) return true;
  if (!cuda::vec4_ok(t) || t.numel() % kPack<T> != 0) return false;
  const Shape& s = t.sizes();
  const auto first = std::find_if(s.begin(), s.end(), [](int64_t d) { return d != 1; });
  const auto k = static_cast<size_t>(s.end() - first);
  return k <= out.size() && std::equal(first, s.end(), out.end() - k);
}

template <typename T, typename F>
void launch_binary(const Tensor& a, const Tensor& b, const Tensor& out, F f) {
  const int64_t n = out.numel();
  if (n == 0) return;
  cuda::set_device(out);
  const bool full_a = a.sizes() == out.sizes() && cuda::vec4_ok(a);
  const bool full_b = b.sizes() == out.sizes() && cuda::vec4_ok(b);
  const unsigned grid = grid_for(n, kPack<T>);
  if (cuda::vec4_ok(out) && full_a && full_b) {
    binary_vec_kernel<<<grid, kBlock, 0, cuda::current_stream()>>>(
        a.data_ptr<T>(), b.data_ptr<T>(), out.data_ptr<T>(), n, f);
    ZERO_CUDA_LAUNCH_CHECK();
    return;
  }
  if (cuda::vec4_ok(out) && full_a && repeats_along_leading<T>(b, out.sizes())) {
    binary_repeat_vec_kernel<<<grid, kBlock, 0, cuda::current_stream()>>>(
        a.data_ptr<T>(), b.data_ptr<T>(), b.numel(), out.data_ptr<T>(), n, f);
    ZERO_CUDA_LAUNCH_CHECK();
    return;
  }
  if (cuda::vec4_ok(out) && full_b && repeats_along_leading<T>(a, out.sizes())) {
    binary_repeat_vec_kernel<<<grid, kBlock, 0, cuda::current_stream()>>>(
        b.data_ptr<T>(), a.data_ptr<T>(), a.numel(), out.data_ptr<T>(), n, Swapped<F>{f});
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
  if (cuda::vec4_ok(x) && cuda::vec4_ok(out)) {
    unary_vec_kernel<<<grid_for(n, kPack<T>), kBlock, 0, cuda::current_stream()>>>(
        x.data_ptr<T>(), out.data_ptr<T>(), n, f);
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
  const bool vec = cuda::vec4_ok(x) && cuda::vec4_ok(grad_y) && cuda::vec4_ok(grad_x);
  if (vec && !needs_y) {
    binary_vec_kernel<<<grid_for(n, kPack<T>), kBlock, 0, cuda::current_stream()>>>(
        x.data_ptr<T>(), grad_y.data_ptr<T>(), grad_x.data_ptr<T>(), n, UnaryGradFromX{op});
    ZERO_CUDA_LAUNCH_CHECK();
    return;
  }
  if (vec && cuda::vec4_ok(y)) {
    ternary_vec_kernel<<<grid_for(n, kPack<T>), kBlock, 0, cuda::current_stream()>>>(
        x.data_ptr<T>(), y.data_ptr<T>(), grad_y.data_ptr<T>(), grad_x.data_ptr<T>(), n,
        UnaryGradF{op});
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
