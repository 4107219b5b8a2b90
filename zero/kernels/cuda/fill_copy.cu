// CUDA fill, arange, Philox random numbers, and copy: the device-transfer path
// behind Tensor::To. Host<->device copies go through cudaMemcpy and are the
// synchronisation points of a program; a non-contiguous side is first gathered
// into a contiguous temporary on its own device.
#include "zero/core/philox.h"
#include "zero/kernels/cpu/cpu_ops.h"
#include "zero/kernels/cuda/cuda_common.cuh"
#include "zero/kernels/cuda/cuda_ops.h"
#include "zero/kernels/dims_arg.h"

namespace zero::ops {
namespace {

using cuda::grid_for;
using cuda::kBlock;

// Both dtypes are 4 bytes wide, so fill and copy move raw 32-bit words.
__global__ void fill_kernel(uint32_t* out, DimsArg d, int64_t n, uint32_t bits) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[d.Offset(i)] = bits;
}

__global__ void arange_f32_kernel(float* out, int64_t n, double start, double step) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = static_cast<float>(start + step * i);
}

__global__ void arange_i32_kernel(int32_t* out, int64_t n, double start, double step) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = static_cast<int32_t>(start + step * i);
}

__global__ void uniform_kernel(float* out, int64_t n, uint64_t seed, uint64_t offset) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = philox_uniform(seed, offset + i);
}

__global__ void normal_kernel(float* out, int64_t n, uint64_t seed, uint64_t offset) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = philox_normal(seed, offset + i);
}

__global__ void strided_copy_kernel(const uint32_t* src, DimsArg ds, uint32_t* dst, DimsArg dd,
                                    int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) dst[dd.Offset(i)] = src[ds.Offset(i)];
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
  strided_copy_kernel<<<grid_for(n), kBlock, 0, cuda::current_stream()>>>(
      static_cast<const uint32_t*>(src.data()), DimsArg::Of(src.meta()),
      static_cast<uint32_t*>(dst.data()), DimsArg::Of(dst.meta()), n);
  ZERO_CUDA_LAUNCH_CHECK();
}


}  // namespace

void fill_cuda(const Tensor& out, float value) {
  const int64_t n = out.numel();
  if (n == 0) return;
  cuda::set_device(out);
  uint32_t bits;
  if (out.dtype() == DataType::F32) {
    memcpy(&bits, &value, 4);
  } else {
    const int32_t v = static_cast<int32_t>(value);
    memcpy(&bits, &v, 4);
  }
  fill_kernel<<<grid_for(n), kBlock, 0, cuda::current_stream()>>>(
      static_cast<uint32_t*>(out.data()), DimsArg::Of(out.meta()), n, bits);
  ZERO_CUDA_LAUNCH_CHECK();
}

void arange_cuda(const Tensor& out, double start, double step) {
  const int64_t n = out.numel();
  if (n == 0) return;
  cuda::set_device(out);
  if (out.dtype() == DataType::F32) {
    arange_f32_kernel<<<grid_for(n), kBlock, 0, cuda::current_stream()>>>(out.data_ptr<float>(), n, start, step);
  } else {
    arange_i32_kernel<<<grid_for(n), kBlock, 0, cuda::current_stream()>>>(out.data_ptr<int32_t>(), n, start, step);
  }
  ZERO_CUDA_LAUNCH_CHECK();
}

void rand_uniform_cuda(const Tensor& out, uint64_t seed, uint64_t offset) {
  const int64_t n = out.numel();
  if (n == 0) return;
  cuda::set_device(out);
  uniform_kernel<<<grid_for(n), kBlock, 0, cuda::current_stream()>>>(out.data_ptr<float>(), n, seed, offset);
  ZERO_CUDA_LAUNCH_CHECK();
}

void rand_normal_cuda(const Tensor& out, uint64_t seed, uint64_t offset) {
  const int64_t n = out.numel();
  if (n == 0) return;
  cuda::set_device(out);
  normal_kernel<<<grid_for(n), kBlock, 0, cuda::current_stream()>>>(out.data_ptr<float>(), n, seed, offset);
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
  const Tensor s = cuda::contiguous(src);
  const Tensor d = dst.is_contiguous() ? dst : Tensor::Empty(dst.sizes(), dst.options());
  if (from.is_cpu()) {
    cuda::set_device(d);
    ZERO_CUDA_CHECK(cudaMemcpy(d.data(), s.data(), bytes, cudaMemcpyHostToDevice));
  } else if (to.is_cpu()) {
    cuda::set_device(s);
    ZERO_CUDA_CHECK(cudaMemcpy(d.data(), s.data(), bytes, cudaMemcpyDeviceToHost));
  } else {
    ZERO_CUDA_CHECK(cudaMemcpyPeer(d.data(), to.index(), s.data(), from.index(), bytes));
  }
  if (!d.SharesStorage(dst)) {
    if (to.is_cpu()) {
      copy_cpu(d, dst);
    } else {
      copy_on_device(d, dst);
    }
  }
}

namespace cuda {

Tensor contiguous(const Tensor& t) {
  if (t.is_contiguous()) return t;
  Tensor c = Tensor::Empty(t.sizes(), t.options());
  if (t.device().is_cpu()) {
    copy_cpu(t, c);
  } else {
    copy_on_device(t, c);
  }
  return c;
}

}  // namespace cuda
}  // namespace zero::ops
