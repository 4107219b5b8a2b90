// CPU reductions. Each output element reduces one "fibre" of the input along
// `dim`; fibres are independent, so they are spread over threads. Sums accumulate
// in double: this is the reference the CUDA kernels are checked against.
// Max keeps the first maximal position and lets NaN win (as PyTorch does), so a
// NaN in the input shows up in the result instead of being silently skipped.
#include <cmath>
#include <limits>

#include "zero/kernels/cpu/parallel.h"
#include "zero/kernels/dims_arg.h"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/dtype_dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {
namespace {

// Calls f(out_linear, base_offset, step, n) for every fibre of `x` along `dim`:
// the fibre's elements are x[base + k * step], k < n.
template <typename F>
void for_each_fibre(const Tensor& x, int dim, F f) {
  TensorMeta fibres = x.meta();
  fibres.sizes[dim] = 1;
  const DimsArg d = DimsArg::Of(fibres);
  const int64_t count = fibres.numel(), n = x.size(dim), step = x.stride(dim);
#pragma omp parallel for if (count * n > kParallelGrain)
  for (int64_t o = 0; o < count; ++o) f(o, d.Offset(o), step, n);
}

// out = scale * (sum of each fibre of x along dim).
template <typename T>
void scaled_sum_fibres(const Tensor& x, int dim, double scale, const Tensor& out) {
  const T* px = x.data_ptr<T>();
  T* po = out.data_ptr<T>();
  const DimsArg dout = DimsArg::Of(out.meta());
  for_each_fibre(x, dim, [&](int64_t o, int64_t base, int64_t step, int64_t n) {
    double acc = 0.0;
    for (int64_t k = 0; k < n; ++k) acc += static_cast<float>(px[base + k * step]);
    po[dout.Offset(o)] = static_cast<T>(static_cast<float>(acc * scale));
  });
}

template <typename T>
double sum_all_double(const Tensor& x) {
  const T* px = x.data_ptr<T>();
  const int64_t n = x.numel();
  double acc = 0.0;
  if (x.is_contiguous()) {
#pragma omp parallel for reduction(+ : acc) if (n > kParallelGrain)
    for (int64_t i = 0; i < n; ++i) acc += static_cast<float>(px[i]);
  } else {
    const DimsArg d = DimsArg::Of(x.meta());
#pragma omp parallel for reduction(+ : acc) if (n > kParallelGrain)
    for (int64_t i = 0; i < n; ++i) acc += static_cast<float>(px[d.Offset(i)]);
  }
  return acc;
}

// A candidate maximum and its position.
struct Candidate {
  float value;
  int64_t index;
};

// True when `a` should be the maximum rather than `b`: NaN beats numbers, a larger
// value beats a smaller one, and among equals the earlier position wins.
inline bool better(const Candidate& a, const Candidate& b) {
  const bool a_nan = std::isnan(a.value), b_nan = std::isnan(b.value);
  if (a_nan != b_nan) return a_nan;
  if (!a_nan && a.value != b.value) return a.value > b.value;
  return a.index < b.index;
}

template <typename T>
void max_fibres(const Tensor& x, int dim, const Tensor& values, const Tensor& indices) {
  const T* px = x.data_ptr<T>();
  T* pv = values.data_ptr<T>();
  int32_t* pi = indices.data_ptr<int32_t>();
  const DimsArg dv = DimsArg::Of(values.meta()), di = DimsArg::Of(indices.meta());
  for_each_fibre(x, dim, [&](int64_t o, int64_t base, int64_t step, int64_t n) {
    Candidate best{static_cast<float>(px[base]), 0};  // n >= 1, checked by the dispatch
    for (int64_t k = 1; k < n; ++k) {
      const Candidate c{static_cast<float>(px[base + k * step]), k};
      if (better(c, best)) best = c;
    }
    pv[dv.Offset(o)] = static_cast<T>(best.value);
    pi[di.Offset(o)] = static_cast<int32_t>(best.index);
  });
}

template <typename T>
void max_all_typed(const Tensor& x, const Tensor& value, const Tensor& index) {
  const T* px = x.data_ptr<T>();
  const int64_t n = x.numel();
  const bool dense = x.is_contiguous();
  const DimsArg d = DimsArg::Of(x.meta());
  // Loses every comparison against a real element, even -inf (by position).
  const Candidate none{-std::numeric_limits<float>::infinity(),
                       std::numeric_limits<int64_t>::max()};
  Candidate best = none;
  // Each thread scans a block, then the per-thread winners merge; `better` breaks ties
  // by position, so the result does not depend on the order of the merge.
#pragma omp parallel if (n > kParallelGrain)
  {
    Candidate local = none;
#pragma omp for nowait
    for (int64_t i = 0; i < n; ++i) {
      const Candidate c{static_cast<float>(px[dense ? i : d.Offset(i)]), i};
      if (better(c, local)) local = c;
    }
#pragma omp critical
    if (better(local, best)) best = local;
  }
  *value.data_ptr<T>() = static_cast<T>(best.value);
  *index.data_ptr<int32_t>() = static_cast<int32_t>(best.index);
}

template <typename T>
void max_backward_fibres(const Tensor& grad_values, const Tensor& indices, int dim,
                         const Tensor& grad_x) {
  const T* pg = grad_values.data_ptr<T>();
  const int32_t* pi = indices.data_ptr<int32_t>();
  T* px = grad_x.data_ptr<T>();
  const DimsArg dg = DimsArg::Of(grad_values.meta()), di = DimsArg::Of(indices.meta());
  // Each fibre of grad_x is written whole (zeros and one gradient), so no separate fill.
  for_each_fibre(grad_x, dim, [&](int64_t o, int64_t base, int64_t step, int64_t n) {
    const int64_t winner = pi[di.Offset(o)];
    const T g = pg[dg.Offset(o)];
    for (int64_t k = 0; k < n; ++k) px[base + k * step] = k == winner ? g : T(0.0f);
  });
}

// ---------------------------------------------------------------- entry points
// Each picks the instantiation for the input's dtype (dtype_dispatch.h).

void sum_cpu(const Tensor& x, int dim, const Tensor& out) {
  dispatch_dtype<FloatTypes>(x.dtype(), "sum", [&](auto tag) {
    scaled_sum_fibres<typename decltype(tag)::type>(x, dim, 1.0, out);
  });
}

void sum_all_cpu(const Tensor& x, const Tensor& out) {
  dispatch_dtype<FloatTypes>(x.dtype(), "sum", [&](auto tag) {
    using T = typename decltype(tag)::type;
    *out.data_ptr<T>() = static_cast<T>(static_cast<float>(sum_all_double<T>(x)));
  });
}

// An empty dimension gives 0 / 0 = NaN, as in PyTorch.
void mean_cpu(const Tensor& x, int dim, const Tensor& out) {
  dispatch_dtype<FloatTypes>(x.dtype(), "mean", [&](auto tag) {
    scaled_sum_fibres<typename decltype(tag)::type>(
        x, dim, 1.0 / static_cast<double>(x.size(dim)), out);
  });
}

void mean_all_cpu(const Tensor& x, const Tensor& out) {
  dispatch_dtype<FloatTypes>(x.dtype(), "mean", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const double mean = sum_all_double<T>(x) / static_cast<double>(x.numel());
    *out.data_ptr<T>() = static_cast<T>(static_cast<float>(mean));
  });
}

void max_cpu(const Tensor& x, int dim, const Tensor& values, const Tensor& indices) {
  dispatch_dtype<FloatTypes>(x.dtype(), "max", [&](auto tag) {
    max_fibres<typename decltype(tag)::type>(x, dim, values, indices);
  });
}

void max_all_cpu(const Tensor& x, const Tensor& value, const Tensor& index) {
  dispatch_dtype<FloatTypes>(x.dtype(), "max", [&](auto tag) {
    max_all_typed<typename decltype(tag)::type>(x, value, index);
  });
}

void max_backward_cpu(const Tensor& grad_values, const Tensor& indices, int dim,
                      const Tensor& grad_x) {
  dispatch_dtype<FloatTypes>(grad_x.dtype(), "max backward", [&](auto tag) {
    max_backward_fibres<typename decltype(tag)::type>(grad_values, indices, dim, grad_x);
  });
}

}  // namespace

ZERO_REGISTER_KERNEL(sum, kCpu, sum_cpu);
ZERO_REGISTER_KERNEL(sum_all, kCpu, sum_all_cpu);
ZERO_REGISTER_KERNEL(mean, kCpu, mean_cpu);
ZERO_REGISTER_KERNEL(mean_all, kCpu, mean_all_cpu);
ZERO_REGISTER_KERNEL(max, kCpu, max_cpu);
ZERO_REGISTER_KERNEL(max_all, kCpu, max_all_cpu);
ZERO_REGISTER_KERNEL(max_backward, kCpu, max_backward_cpu);

}  // namespace zero::ops
