// CPU reductions. Each output element reduces one "fibre" of the input along
// `dim`; fibres are independent, so they are spread over threads. Sums accumulate
// in double: this is the reference the CUDA kernels are checked against.
// Max keeps the first maximal position and lets NaN win (as PyTorch does), so a
// NaN in the input shows up in the result instead of being silently skipped.
#include <cmath>
#include <limits>

#include "zero/kernels/cpu/cpu_ops.h"
#include "zero/kernels/cpu/parallel.h"

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
void scaled_sum_fibres(const Tensor& x, int dim, double scale, const Tensor& out) {
  const float* px = x.data_ptr<float>();
  float* po = out.data_ptr<float>();
  const DimsArg dout = DimsArg::Of(out.meta());
  for_each_fibre(x, dim, [&](int64_t o, int64_t base, int64_t step, int64_t n) {
    double acc = 0.0;
    for (int64_t k = 0; k < n; ++k) acc += px[base + k * step];
    po[dout.Offset(o)] = static_cast<float>(acc * scale);
  });
}

double sum_all_double(const Tensor& x) {
  const float* px = x.data_ptr<float>();
  const int64_t n = x.numel();
  double acc = 0.0;
  if (x.is_contiguous()) {
#pragma omp parallel for reduction(+ : acc) if (n > kParallelGrain)
    for (int64_t i = 0; i < n; ++i) acc += px[i];
  } else {
    const DimsArg d = DimsArg::Of(x.meta());
#pragma omp parallel for reduction(+ : acc) if (n > kParallelGrain)
    for (int64_t i = 0; i < n; ++i) acc += px[d.Offset(i)];
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

}  // namespace

void sum_cpu(const Tensor& x, int dim, const Tensor& out) { scaled_sum_fibres(x, dim, 1.0, out); }

void sum_all_cpu(const Tensor& x, const Tensor& out) {
  *out.data_ptr<float>() = static_cast<float>(sum_all_double(x));
}

// An empty dimension gives 0 / 0 = NaN, as in PyTorch.
void mean_cpu(const Tensor& x, int dim, const Tensor& out) {
  scaled_sum_fibres(x, dim, 1.0 / static_cast<double>(x.size(dim)), out);
}

void mean_all_cpu(const Tensor& x, const Tensor& out) {
  *out.data_ptr<float>() = static_cast<float>(sum_all_double(x) / static_cast<double>(x.numel()));
}

void max_cpu(const Tensor& x, int dim, const Tensor& values, const Tensor& indices) {
  const float* px = x.data_ptr<float>();
  float* pv = values.data_ptr<float>();
  int32_t* pi = indices.data_ptr<int32_t>();
  const DimsArg dv = DimsArg::Of(values.meta()), di = DimsArg::Of(indices.meta());
  for_each_fibre(x, dim, [&](int64_t o, int64_t base, int64_t step, int64_t n) {
    Candidate best{px[base], 0};  // n >= 1, checked by the dispatch
    for (int64_t k = 1; k < n; ++k) {
      const Candidate c{px[base + k * step], k};
      if (better(c, best)) best = c;
    }
    pv[dv.Offset(o)] = best.value;
    pi[di.Offset(o)] = static_cast<int32_t>(best.index);
  });
}

void max_all_cpu(const Tensor& x, const Tensor& value, const Tensor& index) {
  const float* px = x.data_ptr<float>();
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
      const Candidate c{px[dense ? i : d.Offset(i)], i};
      if (better(c, local)) local = c;
    }
#pragma omp critical
    if (better(local, best)) best = local;
  }
  *value.data_ptr<float>() = best.value;
  *index.data_ptr<int32_t>() = static_cast<int32_t>(best.index);
}

void max_backward_cpu(const Tensor& grad_values, const Tensor& indices, int dim,
                      const Tensor& grad_x) {
  const float* pg = grad_values.data_ptr<float>();
  const int32_t* pi = indices.data_ptr<int32_t>();
  float* px = grad_x.data_ptr<float>();
  const DimsArg dg = DimsArg::Of(grad_values.meta()), di = DimsArg::Of(indices.meta());
  // Each fibre of grad_x is written whole (zeros and one gradient), so no separate fill.
  for_each_fibre(grad_x, dim, [&](int64_t o, int64_t base, int64_t step, int64_t n) {
    const int64_t winner = pi[di.Offset(o)];
    const float g = pg[dg.Offset(o)];
    for (int64_t k = 0; k < n; ++k) px[base + k * step] = k == winner ? g : 0.0f;
  });
}

}  // namespace zero::ops
