// CPU reductions. Each output element reduces one "fibre" of the input along
// `dim`; fibres are independent, so they are spread over threads. Sums accumulate
// in double: this is the reference the CUDA kernels are checked against.
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

}  // namespace

void sum_cpu(const Tensor& x, int dim, const Tensor& out) {
  const float* px = x.data_ptr<float>();
  float* po = out.data_ptr<float>();
  const DimsArg dout = DimsArg::Of(out.meta());
  for_each_fibre(x, dim, [&](int64_t o, int64_t base, int64_t step, int64_t n) {
    double acc = 0.0;
    for (int64_t k = 0; k < n; ++k) acc += px[base + k * step];
    po[dout.Offset(o)] = static_cast<float>(acc);
  });
}

void sum_all_cpu(const Tensor& x, const Tensor& out) {
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
  *out.data_ptr<float>() = static_cast<float>(acc);
}

}  // namespace zero::ops
