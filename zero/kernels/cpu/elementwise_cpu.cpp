// CPU element-wise kernels: binary (with broadcasting), binary with a scalar,
// unary, and unary backward. Each has a contiguous fast path the compiler can
// vectorise, and a general path that maps the output's row-major index to each
// operand's offset with DimsArg (stride 0 on broadcast dimensions).
#include <cmath>

#include "zero/kernels/cpu/cpu_ops.h"
#include "zero/kernels/cpu/parallel.h"
#include "zero/kernels/dims_arg.h"

namespace zero::ops {
namespace {

// ---------------------------------------------------------------- loops

template <typename F>
void binary_loop(const Tensor& a, const Tensor& b, const Tensor& out, F f) {
  const int64_t n = out.numel();
  const float* pa = a.data_ptr<float>();
  const float* pb = b.data_ptr<float>();
  float* po = out.data_ptr<float>();
  if (dense_as(a, out.sizes()) && dense_as(b, out.sizes()) && out.is_contiguous()) {
#pragma omp parallel for simd if (n > kCheapLoopGrain)  // f is one arithmetic operation
    for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], pb[i]);
    return;
  }
  const DimsArg da = DimsArg::Broadcast(a.meta(), out.sizes());
  const DimsArg db = DimsArg::Broadcast(b.meta(), out.sizes());
  const DimsArg dout = DimsArg::Of(out.meta());
#pragma omp parallel for if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) po[dout.Offset(i)] = f(pa[da.Offset(i)], pb[db.Offset(i)]);
}

template <typename F>
void unary_loop(const Tensor& x, const Tensor& out, F f) {
  const int64_t n = out.numel();
  const float* px = x.data_ptr<float>();
  float* po = out.data_ptr<float>();
  if (x.is_contiguous() && out.is_contiguous()) {
#pragma omp parallel for simd if (n > kParallelGrain)
    for (int64_t i = 0; i < n; ++i) po[i] = f(px[i]);
    return;
  }
  const DimsArg dx = DimsArg::Of(x.meta());
  const DimsArg dout = DimsArg::Of(out.meta());
#pragma omp parallel for if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) po[dout.Offset(i)] = f(px[dx.Offset(i)]);
}

// Three inputs of one shape -> one output: the unary backward.
template <typename F>
void ternary_loop(const Tensor& x, const Tensor& y, const Tensor& g, const Tensor& out, F f) {
  const int64_t n = out.numel();
  const float* px = x.data_ptr<float>();
  const float* py = y.data_ptr<float>();
  const float* pg = g.data_ptr<float>();
  float* po = out.data_ptr<float>();
  if (x.is_contiguous() && y.is_contiguous() && g.is_contiguous() && out.is_contiguous()) {
#pragma omp parallel for simd if (n > kParallelGrain)
    for (int64_t i = 0; i < n; ++i) po[i] = f(px[i], py[i], pg[i]);
    return;
  }
  const DimsArg dx = DimsArg::Of(x.meta()), dy = DimsArg::Of(y.meta());
  const DimsArg dg = DimsArg::Of(g.meta()), dout = DimsArg::Of(out.meta());
#pragma omp parallel for if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) {
    po[dout.Offset(i)] = f(px[dx.Offset(i)], py[dy.Offset(i)], pg[dg.Offset(i)]);
  }
}

// ---------------------------------------------------------------- GeLU

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCoeff = 0.044715f;

inline float gelu(float x) {
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * (x + kGeluCoeff * x * x * x)));
}

// d/dx of the tanh-form GeLU: 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 c x^2).
inline float gelu_grad(float x) {
  const float t = std::tanh(kSqrt2OverPi * (x + kGeluCoeff * x * x * x));
  return 0.5f * (1.0f + t) +
         0.5f * x * (1.0f - t * t) * kSqrt2OverPi * (1.0f + 3.0f * kGeluCoeff * x * x);
}

}  // namespace

// ---------------------------------------------------------------- entry points

void binary_cpu(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  switch (op) {
    case BinaryOp::kAdd: return binary_loop(a, b, out, [](float x, float y) { return x + y; });
    case BinaryOp::kSub: return binary_loop(a, b, out, [](float x, float y) { return x - y; });
    case BinaryOp::kMul: return binary_loop(a, b, out, [](float x, float y) { return x * y; });
    case BinaryOp::kDiv: return binary_loop(a, b, out, [](float x, float y) { return x / y; });
  }
}

void binary_scalar_cpu(BinaryOp op, const Tensor& a, float s, const Tensor& out,
                       bool scalar_first) {
  switch (op) {
    case BinaryOp::kAdd: return unary_loop(a, out, [s](float x) { return x + s; });
    case BinaryOp::kMul: return unary_loop(a, out, [s](float x) { return x * s; });
    case BinaryOp::kSub:
      if (scalar_first) return unary_loop(a, out, [s](float x) { return s - x; });
      return unary_loop(a, out, [s](float x) { return x - s; });
    case BinaryOp::kDiv:
      if (scalar_first) return unary_loop(a, out, [s](float x) { return s / x; });
      return unary_loop(a, out, [s](float x) { return x / s; });
  }
}

void unary_cpu(UnaryOp op, const Tensor& x, const Tensor& out) {
  switch (op) {
    case UnaryOp::kNeg: return unary_loop(x, out, [](float v) { return -v; });
    case UnaryOp::kExp: return unary_loop(x, out, [](float v) { return std::exp(v); });
    case UnaryOp::kLog: return unary_loop(x, out, [](float v) { return std::log(v); });
    case UnaryOp::kSqrt: return unary_loop(x, out, [](float v) { return std::sqrt(v); });
    case UnaryOp::kTanh: return unary_loop(x, out, [](float v) { return std::tanh(v); });
    case UnaryOp::kRelu: return unary_loop(x, out, [](float v) { return v > 0.0f ? v : 0.0f; });
    case UnaryOp::kGelu: return unary_loop(x, out, [](float v) { return gelu(v); });
  }
}

void unary_backward_cpu(UnaryOp op, const Tensor& x, const Tensor& y, const Tensor& grad_y,
                        const Tensor& grad_x) {
  auto run = [&](auto f) { ternary_loop(x, y, grad_y, grad_x, f); };
  switch (op) {
    case UnaryOp::kNeg: return run([](float, float, float g) { return -g; });
    case UnaryOp::kExp: return run([](float, float yv, float g) { return g * yv; });
    case UnaryOp::kLog: return run([](float xv, float, float g) { return g / xv; });
    case UnaryOp::kSqrt: return run([](float, float yv, float g) { return g * 0.5f / yv; });
    case UnaryOp::kTanh: return run([](float, float yv, float g) { return g * (1.0f - yv * yv); });
    case UnaryOp::kRelu: return run([](float xv, float, float g) { return xv > 0.0f ? g : 0.0f; });
    case UnaryOp::kGelu: return run([](float xv, float, float g) { return g * gelu_grad(xv); });
  }
}

}  // namespace zero::ops
