// CUDA fill, arange, Philox random numbers, and copy: the device-transfer path
// behind Tensor::To. Host<->device copies go through cudaMemcpy and are the
// synchronisation points of a program; a non-contiguous side is first gathered
// into a contiguous temporary on its own device.
#include <cmath>

#include "zero/core/philox.h"
#include "zero/kernels/cuda/cuda_common.cuh"
#include "zero/kernels/dims_arg.h"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/dtype_dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {
namespace {

using cuda::grid_for;
using cuda::kBlock;

template <typename T>
__global__ void fill_kernel(T* out, DimsArg d, int64_t n, T value) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[d.Offset(i)] = value;
}

template <typename T>
__global__ void fill_contiguous_kernel(T* out, int64_t n, T value) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = value;
}

template <typename T>
__global__ void arange_kernel(T* out, int64_t n, double start, double step) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = static_cast<T>(start + step * i);
}

// `shift`: a CUDA graph's Philox shift (core/cuda_graph.h), or null.
__global__ void uniform_kernel(float* out, int64_t n, uint64_t seed, uint64_t offset,
                               const uint64_t* shift) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (shift != nullptr) offset += *shift;
  if (i < n) out[i] = philox_uniform(seed, offset + i);
}

__global__ void normal_kernel(float* out, int64_t n, uint64_t seed, uint64_t offset,
                              const uint64_t* shift) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (shift != nullptr) offset += *shift;
  if (i < n) out[i] = philox_normal(seed, offset + i);
}

template <typename T>
__global__ void strided_copy_kernel(const T* src, DimsArg ds, T* dst, DimsArg dd, int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) dst[dd.Offset(i)] = src[ds.Offset(i)];
}

template <typename To, typename From>
__global__ void convert_kernel(const From* src, DimsArg ds, To* dst, DimsArg dd, int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) dst[dd.Offset(i)] = convert_value<To>(src[ds.Offset(i)]);
}

// The same for operands whose rows (last dimension, `row` elements) are contiguous, as
// the attention's views of a packed qkv and every contiguous tensor are: kPer elements
// of one row a thread, so the index arithmetic over the leading dimensions (`ds`, `dd`,
// the shape without its last dimension) is paid once per kPer elements, not per element
// per dimension. (row % kPer == 0.)
template <int kPer, typename To, typename From>
__global__ void convert_rows_kernel(const From* src, DimsArg ds, To* dst, DimsArg dd,
                                    int64_t row, int64_t n) {
  const int64_t i = (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) * kPer;
  if (i >= n) return;
  const int64_t r = i / row, c = i % row;
  const From* s = src + ds.Offset(r) + c;
  To* d = dst + dd.Offset(r) + c;
#pragma unroll
  for (int e = 0; e < kPer; ++e) d[e] = convert_value<To>(s[e]);
}

// The leading dimensions of `t` (all but the last), as DimsArg of its rows.
DimsArg rows_of(const Tensor& t) {
  DimsArg d = DimsArg::Of(t.meta());
  d.ndim -= 1;
  return d;
}

// Device-to-device copy on one GPU, any layouts.
void copy_on_device(const Tensor& src, const Tensor& dst) {
  const int64_t n = src.numel();
  cuda::set_device(dst);
  if (src.is_contiguous() && dst.is_contiguous()) {
    ZERO_CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), n * dtype_size(src.dtype()),
                                    cudaMemcpyDeviceToDevice, cuda::current_stream()));
    return;
  }
  dispatch_dtype<AllTypes>(src.dtype(), "copy", [&](auto tag) {
    using T = typename decltype(tag)::type;
    strided_copy_kernel<<<grid_for(n), kBlock, 0, cuda::current_stream()>>>(
        src.data_ptr<T>(), DimsArg::Of(src.meta()), dst.data_ptr<T>(), DimsArg::Of(dst.meta()),
        n);
  });
  ZERO_CUDA_LAUNCH_CHECK();
}

// Zeros of every dtype are all-zero bytes, so a contiguous fill with +0 is a memset: it
// runs at the copy engines' rate, where the DimsArg kernel's index divisions held a
// 150 MB gradient buffer to a quarter of the memory bandwidth (docs/speed_notes.md, item 42).
void fill_cuda(const Tensor& out, float value) {
  const int64_t n = out.numel();
  if (n == 0) return;
  cuda::set_device(out);
  if (out.is_contiguous() && value == 0.0f && !std::signbit(value)) {
    ZERO_CUDA_CHECK(cudaMemsetAsync(out.data(), 0, n * dtype_size(out.dtype()),
                                    cuda::current_stream()));
    return;
  }
  dispatch_dtype<AllTypes>(out.dtype(), "fill", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (out.is_contiguous()) {
      fill_contiguous_kernel<<<grid_for(n), kBlock, 0, cuda::current_stream()>>>(
          out.data_ptr<T>(), n, static_cast<T>(value));
      return;
    }
    fill_kernel<<<grid_for(n), kBlock, 0, cuda::current_stream()>>>(
        out.data_ptr<T>(), DimsArg::Of(out.meta()), n, static_cast<T>(value));
  });
  ZERO_CUDA_LAUNCH_CHECK();
}

void arange_cuda(const Tensor& out, double start, double step) {
  const int64_t n = out.numel();
  if (n == 0) return;
  cuda::set_device(out);
  dispatch_dtype<AllTypes>(out.dtype(), "arange", [&](auto tag) {
    using T = typename decltype(tag)::type;
    arange_kernel<<<grid_for(n), kBlock, 0, cuda::current_stream()>>>(out.data_ptr<T>(), n, start,
                                                                      step);
  });
  ZERO_CUDA_LAUNCH_CHECK();
}

void rand_uniform_cuda(const Tensor& out, uint64_t seed, uint64_t offset) {
  const int64_t n = out.numel();
  if (n == 0) return;
  cuda::set_device(out);
  uniform_kernel<<<grid_for(n), kBlock, 0, cuda::current_stream()>>>(out.data_ptr<float>(), n, seed,
                                                                  offset, cuda::philox_shift());
  ZERO_CUDA_LAUNCH_CHECK();
}

void rand_normal_cuda(const Tensor& out, uint64_t seed, uint64_t offset) {
  const int64_t n = out.numel();
  if (n == 0) return;
  cuda::set_device(out);
  normal_kernel<<<grid_for(n), kBlock, 0, cuda::current_stream()>>>(out.data_ptr<float>(), n, seed,
                                                                  offset, cuda::philox_shift());
  ZERO_CUDA_LAUNCH_CHECK();
}

void copy_cuda(const Tensor& src, const Tensor& dst) {
  const int64_t n = src.numel();
  if (n == 0) return;
  const size_t bytes = n * dtype_size(src.dtype());
  const Device from = src.device(), to = dst.device();
  if (from.is_cuda() && to.is_cuda() && from == to) return copy_on_device(src, dst);

  // Across devices: gather the source contiguously on its side, move the bytes,
  // then scatter into the destination's layout on its side.
  const Tensor s = contiguous(src);
  const Tensor d = contiguous_output(dst);
  if (from.is_cpu()) {
    cuda::set_device(d);
    ZERO_CUDA_CHECK(cudaMemcpy(d.data(), s.data(), bytes, cudaMemcpyHostToDevice));
  } else if (to.is_cpu()) {
    cuda::set_device(s);
    ZERO_CUDA_CHECK(cudaMemcpy(d.data(), s.data(), bytes, cudaMemcpyDeviceToHost));
  } else {
    ZERO_CUDA_CHECK(cudaMemcpyPeer(d.data(), to.index(), s.data(), from.index(), bytes));
  }
  if (!d.SharesStorage(dst)) copy(d, dst);  // scatter on the destination's device
}

void convert_cuda(const Tensor& src, const Tensor& dst) {
  const int64_t n = src.numel();
  if (n == 0) return;
  cuda::set_device(dst);
  dispatch_dtype<AllTypes>(src.dtype(), "convert", [&](auto from) {
    dispatch_dtype<AllTypes>(dst.dtype(), "convert", [&](auto to) {
      using From = typename decltype(from)::type;
      using To = typename decltype(to)::type;
      const int64_t row = src.dim() > 0 ? src.size(-1) : 1;
      const bool rows = src.dim() > 0 && src.stride(-1) == 1 && dst.stride(-1) == 1;
      if (rows && row % 4 == 0) {
        convert_rows_kernel<4><<<grid_for(n, 4), kBlock, 0, cuda::current_stream()>>>(
            src.data_ptr<From>(), rows_of(src), dst.data_ptr<To>(), rows_of(dst), row, n);
        return;
      }
      convert_kernel<<<grid_for(n), kBlock, 0, cuda::current_stream()>>>(
          src.data_ptr<From>(), DimsArg::Of(src.meta()), dst.data_ptr<To>(),
          DimsArg::Of(dst.meta()), n);
    });
  });
  ZERO_CUDA_LAUNCH_CHECK();
}

}  // namespace

ZERO_REGISTER_KERNEL(fill, kCuda, fill_cuda);
ZERO_REGISTER_KERNEL(convert, kCuda, convert_cuda);
ZERO_REGISTER_KERNEL(arange, kCuda, arange_cuda);
ZERO_REGISTER_KERNEL(rand_uniform, kCuda, rand_uniform_cuda);
ZERO_REGISTER_KERNEL(rand_normal, kCuda, rand_normal_cuda);
ZERO_REGISTER_KERNEL(copy, kCuda, copy_cuda);

}  // namespace zero::ops
