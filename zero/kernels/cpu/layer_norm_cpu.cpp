// CPU LayerNorm over the last dimension, the reference the CUDA kernels are checked
// against. x is N contiguous rows of C. Rows are independent, so the forward and the
// grad_x half of the backward run one row per iteration across threads; the row
// statistics accumulate in double. grad_weight and grad_bias sum over rows instead,
// and are computed per block of columns (see Note [Deterministic column sums]).
// Every kernel is templated on the element type T of x (f32, bf16, f16): it loads T
// into float, computes exactly as for f32, and rounds once on the store.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "zero/kernels/cpu/parallel.h"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/dtype_dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {
namespace {

// Columns of grad_weight / grad_bias one thread owns at a time.
constexpr int64_t kColumnBlock = 64;

// Element i of p as a float (exact for every T).
template <typename T>
inline float load(const T* p, int64_t i) {
  return static_cast<float>(p[i]);
}

template <typename T>
void forward_rows(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps,
                  const Tensor& y, const Tensor& mean, const Tensor& rstd) {
  const int64_t c = x.size(-1), n = x.numel() / c;
  const T* px = x.data_ptr<T>();
  const T* pw = weight.data_ptr<T>();
  const T* pb = bias.data_ptr<T>();
  T* py = y.data_ptr<T>();
  float* pmean = mean.data_ptr<float>();
  float* prstd = rstd.data_ptr<float>();
#pragma omp parallel for if (n * c > kParallelGrain)
  for (int64_t row = 0; row < n; ++row) {
    const T* xr = px + row * c;
    // Two passes (mean, then squared deviations) avoid the cancellation of E[x^2] - E[x]^2.
    double sum = 0.0;
    for (int64_t j = 0; j < c; ++j) sum += load(xr, j);
    const double mu = sum / static_cast<double>(c);
    double sq = 0.0;
    for (int64_t j = 0; j < c; ++j) sq += (load(xr, j) - mu) * (load(xr, j) - mu);
    const double var = sq / static_cast<double>(c);  // biased, as PyTorch's LayerNorm
    const float m = static_cast<float>(mu);
    const float r = static_cast<float>(1.0 / std::sqrt(var + static_cast<double>(eps)));
    T* yr = py + row * c;
    for (int64_t j = 0; j < c; ++j) {
      yr[j] = static_cast<T>((load(xr, j) - m) * r * load(pw, j) + load(pb, j));
    }
    pmean[row] = m;
    prstd[row] = r;
  }
}

void layer_norm_forward_cpu(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps,
                            const Tensor& y, const Tensor& mean, const Tensor& rstd) {
  dispatch_dtype<FloatTypes>(x.dtype(), "layer_norm", [&](auto tag) {
    forward_rows<typename decltype(tag)::type>(x, weight, bias, eps, y, mean, rstd);
  });
}

// `own` + `add` rounded to T, `own` already rounded to T, as the separate addition of a
// gradient to a gradient has it. For F32 the volatile keeps the compiler from fusing the
// product that made `own` with the addition into one multiply-add, which rounds once.
template <typename T>
T plus(T own, float add) {
  if constexpr (std::is_same_v<T, float>) {
    volatile float rounded = own;
    return rounded + add;
  } else {
    return static_cast<T>(static_cast<float>(own) + add);
  }
}

// With xhat = (x - mean) * rstd and dxhat = grad_y * weight, the gradient of one row is
//   grad_x = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)),
// the two means coming from mean and rstd depending on every element of the row.
//
// Note [Deterministic column sums]
// grad_weight[j] = sum over rows of grad_y * xhat and grad_bias[j] = sum of grad_y.
// Splitting rows across threads would make each thread's partial sum race on the same
// column, or depend on the thread count once combined. Instead each thread owns whole
// blocks of columns and walks every row for them, in row order, into double
// accumulators: the result is the same for any number of threads.
// T is the dtype of x, grad_y, weight and grad_x; G that of grad_weight and grad_bias
// (T or float).
// With grad_x_add, grad_x = that + the row's gradient (Note [Sums made by the op] in
// autograd/engine.cpp).
template <typename T, typename G>
void backward_rows(const Tensor& grad_y, const Tensor& x, const Tensor& weight,
                   const Tensor& mean, const Tensor& rstd, const Tensor& grad_x,
                   const Tensor& grad_weight, const Tensor& grad_bias, const Tensor& grad_x_add) {
  const int64_t c = x.size(-1), n = x.numel() / c;
  const T* pg = grad_y.data_ptr<T>();
  const T* px = x.data_ptr<T>();
  const T* pw = weight.data_ptr<T>();
  const float* pmean = mean.data_ptr<float>();
  const float* prstd = rstd.data_ptr<float>();
  T* pgx = grad_x.data_ptr<T>();
  const T* padd = grad_x_add.defined() ? grad_x_add.data_ptr<T>() : nullptr;
  G* pgw = grad_weight.data_ptr<G>();
  G* pgb = grad_bias.data_ptr<G>();

#pragma omp parallel for if (n * c > kParallelGrain)
  for (int64_t row = 0; row < n; ++row) {
    const T* xr = px + row * c;
    const T* gr = pg + row * c;
    const float m = pmean[row], r = prstd[row];
    double sum_dxhat = 0.0, sum_dxhat_xhat = 0.0;
    for (int64_t j = 0; j < c; ++j) {
      const double dxhat = static_cast<double>(load(gr, j)) * load(pw, j);
      sum_dxhat += dxhat;
      sum_dxhat_xhat += dxhat * ((load(xr, j) - m) * r);
    }
    const float mean_dxhat = static_cast<float>(sum_dxhat / static_cast<double>(c));
    const float mean_dxhat_xhat = static_cast<float>(sum_dxhat_xhat / static_cast<double>(c));
    T* gxr = pgx + row * c;
    const T* addr = padd != nullptr ? padd + row * c : nullptr;
    for (int64_t j = 0; j < c; ++j) {
      const float xhat = (load(xr, j) - m) * r;
      const T own = static_cast<T>(
          r * (load(gr, j) * load(pw, j) - mean_dxhat - xhat * mean_dxhat_xhat));
      gxr[j] = addr != nullptr ? plus(own, load(addr, j)) : own;
    }
  }

  const int64_t blocks = (c + kColumnBlock - 1) / kColumnBlock;
#pragma omp parallel for if (n * c > kParallelGrain)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t j0 = b * kColumnBlock, j1 = std::min(c, j0 + kColumnBlock);
    double acc_w[kColumnBlock] = {}, acc_b[kColumnBlock] = {};
    for (int64_t row = 0; row < n; ++row) {
      const T* xr = px + row * c;
      const T* gr = pg + row * c;
      const float m = pmean[row], r = prstd[row];
      for (int64_t j = j0; j < j1; ++j) {
        acc_w[j - j0] += static_cast<double>(load(gr, j)) * ((load(xr, j) - m) * r);
        acc_b[j - j0] += load(gr, j);
      }
    }
    for (int64_t j = j0; j < j1; ++j) {
      pgw[j] = static_cast<G>(static_cast<float>(acc_w[j - j0]));
      pgb[j] = static_cast<G>(static_cast<float>(acc_b[j - j0]));
    }
  }
}

// sums[j] = the sum over rows of grad_x[row, j] as written, in double, stored as S.
template <typename T, typename S>
void grad_x_column_sums(const Tensor& grad_x, const Tensor& sums) {
  const int64_t c = grad_x.size(-1), n = grad_x.numel() / c;
  const T* pgx = grad_x.data_ptr<T>();
  S* out = sums.data_ptr<S>();
  const int64_t blocks = (c + kColumnBlock - 1) / kColumnBlock;
#pragma omp parallel for if (n * c > kParallelGrain)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t j0 = b * kColumnBlock, j1 = std::min(c, j0 + kColumnBlock);
    double acc[kColumnBlock] = {};
    for (int64_t row = 0; row < n; ++row) {
      for (int64_t j = j0; j < j1; ++j) acc[j - j0] += load(pgx + row * c, j);
    }
    for (int64_t j = j0; j < j1; ++j) out[j] = static_cast<S>(static_cast<float>(acc[j - j0]));
  }
}

void layer_norm_backward_cpu(const Tensor& grad_y, const Tensor& x, const Tensor& weight,
                             const Tensor& mean, const Tensor& rstd, const Tensor& grad_x,
                             const Tensor& grad_weight, const Tensor& grad_bias,
                             const Tensor& grad_x_add, const Tensor& grad_x_sums) {
  dispatch_dtype<FloatTypes>(x.dtype(), "layer_norm backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (grad_weight.dtype() == DataType::F32) {
      backward_rows<T, float>(grad_y, x, weight, mean, rstd, grad_x, grad_weight, grad_bias,
                              grad_x_add);
    } else {
      backward_rows<T, T>(grad_y, x, weight, mean, rstd, grad_x, grad_weight, grad_bias,
                          grad_x_add);
    }
    if (!grad_x_sums.defined()) return;
    if (grad_x_sums.dtype() == DataType::F32) {
      grad_x_column_sums<T, float>(grad_x, grad_x_sums);
    } else {
      grad_x_column_sums<T, T>(grad_x, grad_x_sums);
    }
  });
}

}  // namespace

ZERO_REGISTER_KERNEL(layer_norm_forward, kCpu, layer_norm_forward_cpu);
ZERO_REGISTER_KERNEL(layer_norm_backward, kCpu, layer_norm_backward_cpu);

}  // namespace zero::ops
