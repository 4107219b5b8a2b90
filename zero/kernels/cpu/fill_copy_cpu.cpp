// CPU fill, arange, Philox random numbers and strided copy.
#include <cstring>

#include "zero/core/philox.h"
#include "zero/kernels/cpu/parallel.h"
#include "zero/kernels/dims_arg.h"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/dtype_dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {
namespace {

template <typename T>
void fill_typed(const Tensor& out, T value) {
  T* p = out.data_ptr<T>();
  const int64_t n = out.numel();
  if (out.is_contiguous()) {
#pragma omp parallel for simd if (n > kCheapLoopGrain)
    for (int64_t i = 0; i < n; ++i) p[i] = value;
    return;
  }
  const DimsArg d = DimsArg::Of(out.meta());
#pragma omp parallel for if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) p[d.Offset(i)] = value;
}

void fill_cpu(const Tensor& out, float value) {
  dispatch_dtype<AllTypes>(out.dtype(), "fill", [&](auto tag) {
    using T = typename decltype(tag)::type;
    fill_typed<T>(out, static_cast<T>(value));
  });
}

void arange_cpu(const Tensor& out, double start, double step) {
  dispatch_dtype<AllTypes>(out.dtype(), "arange", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = out.data_ptr<T>();
    for (int64_t i = 0, n = out.numel(); i < n; ++i) p[i] = static_cast<T>(start + step * i);
  });
}

void rand_uniform_cpu(const Tensor& out, uint64_t seed, uint64_t offset) {
  float* p = out.data_ptr<float>();
  const int64_t n = out.numel();
#pragma omp parallel for if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) p[i] = philox_uniform(seed, offset + i);
}

void rand_normal_cpu(const Tensor& out, uint64_t seed, uint64_t offset) {
  float* p = out.data_ptr<float>();
  const int64_t n = out.numel();
#pragma omp parallel for if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) p[i] = philox_normal(seed, offset + i);
}

template <typename T>
void copy_typed(const Tensor& src, const Tensor& dst) {
  const int64_t n = src.numel();
  const T* ps = src.data_ptr<T>();
  T* pd = dst.data_ptr<T>();
  if (src.is_contiguous() && dst.is_contiguous()) {
    std::memmove(pd, ps, n * sizeof(T));  // memmove: a copy onto itself is allowed
    return;
  }
  const DimsArg ds = DimsArg::Of(src.meta()), dd = DimsArg::Of(dst.meta());
#pragma omp parallel for if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) pd[dd.Offset(i)] = ps[ds.Offset(i)];
}

void copy_cpu(const Tensor& src, const Tensor& dst) {
  if (src.numel() == 0) return;
  dispatch_dtype<AllTypes>(src.dtype(), "copy", [&](auto tag) {
    copy_typed<typename decltype(tag)::type>(src, dst);
  });
}

void convert_cpu(const Tensor& src, const Tensor& dst) {
  const int64_t n = src.numel();
  const DimsArg ds = DimsArg::Of(src.meta()), dd = DimsArg::Of(dst.meta());
  dispatch_dtype<AllTypes>(src.dtype(), "convert", [&](auto from) {
    dispatch_dtype<AllTypes>(dst.dtype(), "convert", [&](auto to) {
      using From = typename decltype(from)::type;
      using To = typename decltype(to)::type;
      const From* ps = src.data_ptr<From>();
      To* pd = dst.data_ptr<To>();
#pragma omp parallel for if (n > kParallelGrain)
      for (int64_t i = 0; i < n; ++i) pd[dd.Offset(i)] = convert_value<To>(ps[ds.Offset(i)]);
    });
  });
}

}  // namespace

ZERO_REGISTER_KERNEL(fill, kCpu, fill_cpu);
ZERO_REGISTER_KERNEL(convert, kCpu, convert_cpu);
ZERO_REGISTER_KERNEL(arange, kCpu, arange_cpu);
ZERO_REGISTER_KERNEL(rand_uniform, kCpu, rand_uniform_cpu);
ZERO_REGISTER_KERNEL(rand_normal, kCpu, rand_normal_cpu);
ZERO_REGISTER_KERNEL(copy, kCpu, copy_cpu);

}  // namespace zero::ops
