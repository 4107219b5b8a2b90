// CPU element-wise kernels: binary (with broadcasting), binary with a scalar,
// unary, and unary backward. Each has a contiguous fast path the compiler can
// vectorise, and a general path that maps the output's row-major index to each
// operand's offset with DimsArg (stride 0 on broadcast dimensions). The loops are
// templated on the element type T and compute in float (dtype_dispatch.h).
#include <cmath>

#include "zero/kernels/cpu/parallel.h"
#include "zero/kernels/cpu/vector_math.h"
#include "zero/kernels/dims_arg.h"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/dtype_dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {
namespace {

// ---------------------------------------------------------------- loops

template <typename T, typename F>
void binary_loop(const Tensor& a, const Tensor& b, const Tensor& out, F f) {
  const int64_t n = out.numel();
  const T* pa = a.data_ptr<T>();
  const T* pb = b.data_ptr<T>();
  T* po = out.data_ptr<T>();
  if (dense_as(a, out.sizes()) && dense_as(b, out.sizes()) && out.is_contiguous()) {
#pragma omp parallel for simd if (n > kCheapLoopGrain)  // f is one arithmetic operation
    for (int64_t i = 0; i < n; ++i) po[i] = T(f(float(pa[i]), float(pb[i])));
    return;
  }
  const DimsArg da = DimsArg::Broadcast(a.meta(), out.sizes());
  const DimsArg db = DimsArg::Broadcast(b.meta(), out.sizes());
  const DimsArg dout = DimsArg::Of(out.meta());
#pragma omp parallel for if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) po[dout.Offset(i)] = T(f(float(pa[da.Offset(i)]), float(pb[db.Offset(i)])));
}

template <typename T, typename F>
void unary_loop(const Tensor& x, const Tensor& out, F f) {
  const int64_t n = out.numel();
  const T* px = x.data_ptr<T>();
  T* po = out.data_ptr<T>();
  if (x.is_contiguous() && out.is_contiguous()) {
#pragma omp parallel for simd if (n > kParallelGrain)
    for (int64_t i = 0; i < n; ++i) po[i] = T(f(float(px[i])));
    return;
  }
  const DimsArg dx = DimsArg::Of(x.meta());
  const DimsArg dout = DimsArg::Of(out.meta());
#pragma omp parallel for if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) po[dout.Offset(i)] = T(f(float(px[dx.Offset(i)])));
}

// Three inputs of one shape -> one output: the unary backward.
template <typename T, typename F>
void ternary_loop(const Tensor& x, const Tensor& y, const Tensor& g, const Tensor& out, F f) {
  const int64_t n = out.numel();
  const T* px = x.data_ptr<T>();
  const T* py = y.data_ptr<T>();
  const T* pg = g.data_ptr<T>();
  T* po = out.data_ptr<T>();
  if (x.is_contiguous() && y.is_contiguous() && g.is_contiguous() && out.is_contiguous()) {
#pragma omp parallel for simd if (n > kParallelGrain)
    for (int64_t i = 0; i < n; ++i) po[i] = T(f(float(px[i]), float(py[i]), float(pg[i])));
    return;
  }
  const DimsArg dx = DimsArg::Of(x.meta()), dy = DimsArg::Of(y.meta());
  const DimsArg dg = DimsArg::Of(g.meta()), dout = DimsArg::Of(out.meta());
#pragma omp parallel for if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) {
    po[dout.Offset(i)] =
        T(f(float(px[dx.Offset(i)]), float(py[dy.Offset(i)]), float(pg[dg.Offset(i)])));
  }
}

// ---------------------------------------------------------------- GeLU

// The tanh form, computed in double with the vectorisable tanh of vector_math.h (Note
// [Why not std::exp in a hot loop]) and rounded once to float: the loops over a tensor
// run eight at a time, and the result is the float nearest the exact GeLU (up to ties),
// where float arithmetic around std::tanh would be off by an ulp or two.
constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kGeluCoeff = 0.044715;

inline float gelu(float xf) {
  const double x = xf;
  const double t = tanh_double(kSqrt2OverPi * (x + kGeluCoeff * x * x * x));
  return static_cast<float>(0.5 * x * (1.0 + t));
}

// d/dx of the tanh-form GeLU: 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 c x^2).
inline float gelu_grad(float xf) {
  const double x = xf;
  const double t = tanh_double(kSqrt2OverPi * (x + kGeluCoeff * x * x * x));
  const double slope = kSqrt2OverPi * (1.0 + 3.0 * kGeluCoeff * x * x);
  return static_cast<float>(0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * slope);
}

// SiLU (swish): x * sigmoid(x); its derivative is s (1 + x (1 - s)) with s = sigmoid(x).
inline float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
inline float silu(float x) { return x * sigmoid(x); }
inline float silu_grad(float x) {
  const float s = sigmoid(x);
  return s * (1.0f + x * (1.0f - s));
}

// ---------------------------------------------------------------- entry points

template <typename T>
void binary_typed(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  switch (op) {
    case BinaryOp::kAdd: return binary_loop<T>(a, b, out, [](float x, float y) { return x + y; });
    case BinaryOp::kSub: return binary_loop<T>(a, b, out, [](float x, float y) { return x - y; });
    case BinaryOp::kMul: return binary_loop<T>(a, b, out, [](float x, float y) { return x * y; });
    case BinaryOp::kDiv: return binary_loop<T>(a, b, out, [](float x, float y) { return x / y; });
  }
}

template <typename T>
void binary_scalar_typed(BinaryOp op, const Tensor& a, float s, const Tensor& out,
                         bool scalar_first) {
  switch (op) {
    case BinaryOp::kAdd: return unary_loop<T>(a, out, [s](float x) { return x + s; });
    case BinaryOp::kMul: return unary_loop<T>(a, out, [s](float x) { return x * s; });
    case BinaryOp::kSub:
      if (scalar_first) return unary_loop<T>(a, out, [s](float x) { return s - x; });
      return unary_loop<T>(a, out, [s](float x) { return x - s; });
    case BinaryOp::kDiv:
      if (scalar_first) return unary_loop<T>(a, out, [s](float x) { return s / x; });
      return unary_loop<T>(a, out, [s](float x) { return x / s; });
  }
}

template <typename T>
void unary_typed(UnaryOp op, const Tensor& x, const Tensor& out) {
  switch (op) {
    case UnaryOp::kNeg: return unary_loop<T>(x, out, [](float v) { return -v; });
    case UnaryOp::kExp: return unary_loop<T>(x, out, [](float v) { return std::exp(v); });
    case UnaryOp::kLog: return unary_loop<T>(x, out, [](float v) { return std::log(v); });
    case UnaryOp::kSqrt: return unary_loop<T>(x, out, [](float v) { return std::sqrt(v); });
    case UnaryOp::kTanh: return unary_loop<T>(x, out, [](float v) { return std::tanh(v); });
    case UnaryOp::kRelu: return unary_loop<T>(x, out, [](float v) { return v > 0.0f ? v : 0.0f; });
    case UnaryOp::kGelu: return unary_loop<T>(x, out, [](float v) { return gelu(v); });
    case UnaryOp::kSilu: return unary_loop<T>(x, out, [](float v) { return silu(v); });
  }
}

template <typename T>
void unary_backward_typed(UnaryOp op, const Tensor& x, const Tensor& y, const Tensor& grad_y,
                          const Tensor& grad_x) {
  auto run = [&](auto f) { ternary_loop<T>(x, y, grad_y, grad_x, f); };
  switch (op) {
    case UnaryOp::kNeg: return run([](float, float, float g) { return -g; });
    case UnaryOp::kExp: return run([](float, float yv, float g) { return g * yv; });
    case UnaryOp::kLog: return run([](float xv, float, float g) { return g / xv; });
    case UnaryOp::kSqrt: return run([](float, float yv, float g) { return g * 0.5f / yv; });
    case UnaryOp::kTanh: return run([](float, float yv, float g) { return g * (1.0f - yv * yv); });
    case UnaryOp::kRelu: return run([](float xv, float, float g) { return xv > 0.0f ? g : 0.0f; });
    case UnaryOp::kGelu: return run([](float xv, float, float g) { return g * gelu_grad(xv); });
    case UnaryOp::kSilu: return run([](float xv, float, float g) { return g * silu_grad(xv); });
  }
}

void binary_cpu(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  dispatch_dtype<FloatTypes>(out.dtype(), "binary", [&](auto tag) {
    binary_typed<typename decltype(tag)::type>(op, a, b, out);
  });
}

void binary_scalar_cpu(BinaryOp op, const Tensor& a, float s, const Tensor& out,
                       bool scalar_first) {
  dispatch_dtype<FloatTypes>(out.dtype(), "binary_scalar", [&](auto tag) {
    binary_scalar_typed<typename decltype(tag)::type>(op, a, s, out, scalar_first);
  });
}

void unary_cpu(UnaryOp op, const Tensor& x, const Tensor& out) {
  dispatch_dtype<FloatTypes>(out.dtype(), "unary", [&](auto tag) {
    unary_typed<typename decltype(tag)::type>(op, x, out);
  });
}

void unary_backward_cpu(UnaryOp op, const Tensor& x, const Tensor& y, const Tensor& grad_y,
                        const Tensor& grad_x) {
  dispatch_dtype<FloatTypes>(x.dtype(), "unary_backward", [&](auto tag) {
    unary_backward_typed<typename decltype(tag)::type>(op, x, y, grad_y, grad_x);
  });
}

}  // namespace

ZERO_REGISTER_KERNEL(binary, kCpu, binary_cpu);
ZERO_REGISTER_KERNEL(binary_scalar, kCpu, binary_scalar_cpu);
ZERO_REGISTER_KERNEL(unary, kCpu, unary_cpu);
ZERO_REGISTER_KERNEL(unary_backward, kCpu, unary_backward_cpu);

}  // namespace zero::ops
