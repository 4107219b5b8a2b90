// CPU softmax and log-softmax over the last dimension of contiguous tensors: one
// row per output row, rows spread over threads.
//
// Note [Stable softmax]
// exp(x) overflows float for x > 88, so each row first subtracts its maximum m:
// softmax(x) = exp(x - m) / sum(exp(x - m)), which is mathematically the same and
// keeps every exponent <= 0 (at least one term is exp(0) = 1, so the sum is >= 1
// and its log is safe). log_softmax(x) = x - m - log(sum(exp(x - m))).
// Sums accumulate in double: these kernels are the reference for the CUDA ones.
#include <algorithm>
#include <cmath>

#include "zero/kernels/cpu/parallel.h"
#include "zero/kernels/dispatch.h"
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

// The row's maximum and log(sum(exp(x - max))), see Note [Stable softmax].
struct RowStats {
  float max;
  double log_sum_exp_shifted;
};

RowStats row_stats(const float* x, int64_t cols) {
  const float m = *std::max_element(x, x + cols);
  double s = 0.0;
  for (int64_t j = 0; j < cols; ++j) s += std::exp(static_cast<double>(x[j]) - m);
  return {m, std::log(s)};
}

void softmax_forward_cpu(const Tensor& x, const Tensor& y) {
  const float* px = x.data_ptr<float>();
  float* py = y.data_ptr<float>();
  for_each_row(x, [&](int64_t off, int64_t cols) {
    const float* xr = px + off;
    float* yr = py + off;
    const float m = *std::max_element(xr, xr + cols);
    double s = 0.0;
    for (int64_t j = 0; j < cols; ++j) {
      const float e = std::exp(xr[j] - m);
      yr[j] = e;
      s += e;
    }
    const float inv = static_cast<float>(1.0 / s);
    for (int64_t j = 0; j < cols; ++j) yr[j] *= inv;
  });
}

// dL/dx_j = y_j * (g_j - sum_k g_k y_k): the Jacobian of softmax is diag(y) - y y^T.
void softmax_backward_cpu(const Tensor& y, const Tensor& grad_y, const Tensor& grad_x) {
  const float* py = y.data_ptr<float>();
  const float* pg = grad_y.data_ptr<float>();
  float* px = grad_x.data_ptr<float>();
  for_each_row(y, [&](int64_t off, int64_t cols) {
    double dot = 0.0;
    for (int64_t j = 0; j < cols; ++j) dot += static_cast<double>(pg[off + j]) * py[off + j];
    const float d = static_cast<float>(dot);
    for (int64_t j = 0; j < cols; ++j) px[off + j] = py[off + j] * (pg[off + j] - d);
  });
}

void log_softmax_forward_cpu(const Tensor& x, const Tensor& y) {
  const float* px = x.data_ptr<float>();
  float* py = y.data_ptr<float>();
  for_each_row(x, [&](int64_t off, int64_t cols) {
    const RowStats st = row_stats(px + off, cols);
    // (x - m) first: it is exact for nearby values even when m is large (e.g. 1000).
    const float lse = static_cast<float>(st.log_sum_exp_shifted);
    for (int64_t j = 0; j < cols; ++j) py[off + j] = (px[off + j] - st.max) - lse;
  });
}

// y = x - logsumexp(x), so dy_k/dx_j = [j == k] - softmax_j, and softmax = exp(y).
void log_softmax_backward_cpu(const Tensor& y, const Tensor& grad_y, const Tensor& grad_x) {
  const float* py = y.data_ptr<float>();
  const float* pg = grad_y.data_ptr<float>();
  float* px = grad_x.data_ptr<float>();
  for_each_row(y, [&](int64_t off, int64_t cols) {
    double s = 0.0;
    for (int64_t j = 0; j < cols; ++j) s += pg[off + j];
    const float sum_g = static_cast<float>(s);
    for (int64_t j = 0; j < cols; ++j) px[off + j] = pg[off + j] - std::exp(py[off + j]) * sum_g;
  });
}

}  // namespace

ZERO_REGISTER_KERNEL(softmax_forward, kCpu, softmax_forward_cpu);
ZERO_REGISTER_KERNEL(softmax_backward, kCpu, softmax_backward_cpu);
ZERO_REGISTER_KERNEL(log_softmax_forward, kCpu, log_softmax_forward_cpu);
ZERO_REGISTER_KERNEL(log_softmax_backward, kCpu, log_softmax_backward_cpu);

}  // namespace zero::ops
