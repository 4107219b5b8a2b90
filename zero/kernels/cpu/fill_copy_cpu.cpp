// CPU fill, arange, Philox random numbers and strided copy.
#include <cstring>

#include "zero/core/philox.h"
#include "zero/kernels/cpu/cpu_ops.h"
#include "zero/kernels/cpu/parallel.h"

namespace zero::ops {
namespace {

template <typename T>
void fill_typed(const Tensor& out, T value) {
  T* p = static_cast<T*>(out.data());
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

}  // namespace

void fill_cpu(const Tensor& out, float value) {
  if (out.dtype() == DataType::F32) {
    fill_typed<float>(out, value);
  } else {
    fill_typed<int32_t>(out, static_cast<int32_t>(value));
  }
}

void arange_cpu(const Tensor& out, double start, double step) {
  const int64_t n = out.numel();
  if (out.dtype() == DataType::F32) {
    float* p = out.data_ptr<float>();
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(start + step * i);
  } else {
    int32_t* p = out.data_ptr<int32_t>();
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<int32_t>(start + step * i);
  }
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

void copy_cpu(const Tensor& src, const Tensor& dst) {
  const int64_t n = src.numel();
  if (n == 0) return;
  const char* s = static_cast<const char*>(src.data());
  char* d = static_cast<char*>(dst.data());
  if (src.is_contiguous() && dst.is_contiguous()) {
    std::memmove(d, s, n * dtype_size(src.dtype()));
    return;
  }
  // 4-byte elements of either dtype: copy as raw 32-bit words.
  const DimsArg ds = DimsArg::Of(src.meta()), dd = DimsArg::Of(dst.meta());
  const uint32_t* ps = reinterpret_cast<const uint32_t*>(s);
  uint32_t* pd = reinterpret_cast<uint32_t*>(d);
#pragma omp parallel for if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) pd[dd.Offset(i)] = ps[ds.Offset(i)];
}

}  // namespace zero::ops
