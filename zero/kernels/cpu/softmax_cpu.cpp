// CPU softmax and log-softmax over the last dimension of contiguous tensors: one
// row per output row, rows spread over threads.
//
// Note [Stable softmax]
// exp(x) overflows float for x > 88, so each row first subtracts its maximum m:
// softmax(x) = exp(x - m) / sum(exp(x - m)), which is mathematically the same and
// keeps every exponent <= 0 (at least one term is exp(0) = 1, so the sum is >= 1
// and its log is safe). log_softmax(x) = x - m - log(sum(exp(x - m))).
// Sums accumulate in double: these kernels are the reference for the CUDA ones. Every
// kernel is templated on the element type T (f32, bf16, f16), loaded into float, with
// each output rounded once into T.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "zero/kernels/cpu/parallel.h"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/dtype_dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {
namespace {

// Calls f(row_pointer_offset, cols) for every row of the last dimension of `t`.
template <typename F>
void for_each_row(const Tensor& t, F f) {
  const int64_t cols = t.size(-1);
  if (cols == 0) return;
  const int64_t rows = t.numel() / cols;
#pragma omp parallel for if (rows * cols > kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) f(r * cols, cols);
}

// Element j of p as a float (exact for every T).
template <typename T>
inline float load(const T* p, int64_t j) {
  return static_cast<float>(p[j]);
}

// The first largest value of the row, as std::max_element finds it.
template <typename T>
float row_max(const T* x, int64_t cols) {
  float m = load(x, 0);
  for (int64_t j = 1; j < cols; ++j) m = std::max(m, load(x, j));
  return m;
}

// The row's maximum and log(sum(exp(x - max))), see Note [Stable softmax].
struct RowStats {
  float max;
  double log_sum_exp_shifted;
};

template <typename T>
RowStats row_stats(const T* x, int64_t cols) {
  const float m = row_max(x, cols);
  double s = 0.0;
  for (int64_t j = 0; j < cols; ++j) s += std::exp(static_cast<double>(load(x, j)) - m);
  return {m, std::log(s)};
}

template <typename T>
void softmax_forward_t(const Tensor& x, const Tensor& y) {
  const T* px = x.data_ptr<T>();
  T* py = y.data_ptr<T>();
  for_each_row(x, [&](int64_t off, int64_t cols) {
    const T* xr = px + off;
    T* yr = py + off;
    const float m = row_max(xr, cols);
    double s = 0.0;
    for (int64_t j = 0; j < cols; ++j) {
      const float e = std::exp(load(xr, j) - m);
      if constexpr (std::is_same_v<T, float>) yr[j] = e;  // kept for the second pass
      s += e;
    }
    const float inv = static_cast<float>(1.0 / s);
    for (int64_t j = 0; j < cols; ++j) {
      if constexpr (std::is_same_v<T, float>) {
        yr[j] *= inv;
      } else {  // the same float e again, not its rounded copy: one rounding
        yr[j] = static_cast<T>(std::exp(load(xr, j) - m) * inv);
      }
    }
  });
}

// dL/dx_j = y_j * (g_j - sum_k g_k y_k): the Jacobian of softmax is diag(y) - y y^T.
template <typename T>
void softmax_backward_t(const Tensor& y, const Tensor& grad_y, const Tensor& grad_x) {
  const T* py = y.data_ptr<T>();
  const T* pg = grad_y.data_ptr<T>();
  T* px = grad_x.data_ptr<T>();
  for_each_row(y, [&](int64_t off, int64_t cols) {
    double dot = 0.0;
    for (int64_t j = 0; j < cols; ++j) {
      dot += static_cast<double>(load(pg, off + j)) * load(py, off + j);
    }
    const float d = static_cast<float>(dot);
    for (int64_t j = 0; j < cols; ++j) {
      px[off + j] = static_cast<T>(load(py, off + j) * (load(pg, off + j) - d));
    }
  });
}

template <typename T>
void log_softmax_forward_t(const Tensor& x, const Tensor& y) {
  const T* px = x.data_ptr<T>();
  T* py = y.data_ptr<T>();
  for_each_row(x, [&](int64_t off, int64_t cols) {
    const RowStats st = row_stats(px + off, cols);
    // (x - m) first: it is exact for nearby values even when m is large (e.g. 1000).
    const float lse = static_cast<float>(st.log_sum_exp_shifted);
    for (int64_t j = 0; j < cols; ++j) {
      py[off + j] = static_cast<T>((load(px, off + j) - st.max) - lse);
    }
  });
}

// y = x - logsumexp(x), so dy_k/dx_j = [j == k] - softmax_j, and softmax = exp(y).
template <typename T>
void log_softmax_backward_t(const Tensor& y, const Tensor& grad_y, const Tensor& grad_x) {
  const T* py = y.data_ptr<T>();
  const T* pg = grad_y.data_ptr<T>();
  T* px = grad_x.data_ptr<T>();
  for_each_row(y, [&](int64_t off, int64_t cols) {
    double s = 0.0;
    for (int64_t j = 0; j < cols; ++j) s += load(pg, off + j);
    const float sum_g = static_cast<float>(s);
    for (int64_t j = 0; j < cols; ++j) {
      px[off + j] = static_cast<T>(load(pg, off + j) - std::exp(load(py, off + j)) * sum_g);
    }
  });
}

void softmax_forward_cpu(const Tensor& x, const Tensor& y) {
  dispatch_dtype<FloatTypes>(x.dtype(), "softmax", [&](auto tag) {
    softmax_forward_t<typename decltype(tag)::type>(x, y);
  });
}

void softmax_backward_cpu(const Tensor& y, const Tensor& grad_y, const Tensor& grad_x) {
  dispatch_dtype<FloatTypes>(y.dtype(), "softmax backward", [&](auto tag) {
    softmax_backward_t<typename decltype(tag)::type>(y, grad_y, grad_x);
  });
}

void log_softmax_forward_cpu(const Tensor& x, const Tensor& y) {
  dispatch_dtype<FloatTypes>(x.dtype(), "log_softmax", [&](auto tag) {
    log_softmax_forward_t<typename decltype(tag)::type>(x, y);
  });
}

void log_softmax_backward_cpu(const Tensor& y, const Tensor& grad_y, const Tensor& grad_x) {
  dispatch_dtype<FloatTypes>(y.dtype(), "log_softmax backward", [&](auto tag) {
    log_softmax_backward_t<typename decltype(tag)::type>(y, grad_y, grad_x);
  });
}

}  // namespace

ZERO_REGISTER_KERNEL(softmax_forward, kCpu, softmax_forward_cpu);
ZERO_REGISTER_KERNEL(softmax_backward, kCpu, softmax_backward_cpu);
ZERO_REGISTER_KERNEL(log_softmax_forward, kCpu, log_softmax_forward_cpu);
ZERO_REGISTER_KERNEL(log_softmax_backward, kCpu, log_softmax_backward_cpu);

}  // namespace zero::ops
