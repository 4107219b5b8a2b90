// Dispatch for filling, random numbers and copies (the device-transfer path).
#include "zero/kernels/cpu/cpu_ops.h"
#include "zero/kernels/cuda/cuda_ops.h"

namespace zero::ops {

void fill(const Tensor& out, float value) {
  if (out.device().is_cpu()) {
    fill_cpu(out, value);
  } else {
    fill_cuda(out, value);
  }
}

void arange(const Tensor& out, double start, double step) {
  ZERO_CHECK(out.is_contiguous(), "arange: expected a contiguous output");
  if (out.device().is_cpu()) {
    arange_cpu(out, start, step);
  } else {
    arange_cuda(out, start, step);
  }
}

void rand_uniform(const Tensor& out, uint64_t seed, uint64_t offset) {
  ZERO_CHECK(out.is_contiguous() && out.dtype() == DataType::F32,
             "rand_uniform: expected a contiguous f32 output");
  if (out.device().is_cpu()) {
    rand_uniform_cpu(out, seed, offset);
  } else {
    rand_uniform_cuda(out, seed, offset);
  }
}

void rand_normal(const Tensor& out, uint64_t seed, uint64_t offset) {
  ZERO_CHECK(out.is_contiguous() && out.dtype() == DataType::F32,
             "rand_normal: expected a contiguous f32 output");
  if (out.device().is_cpu()) {
    rand_normal_cpu(out, seed, offset);
  } else {
    rand_normal_cuda(out, seed, offset);
  }
}

void copy(const Tensor& src, const Tensor& dst) {
  ZERO_CHECK(src.sizes() == dst.sizes(), "copy: expected source and destination of one shape, got ",
             shape_to_string(src.sizes()), " and ", shape_to_string(dst.sizes()));
  ZERO_CHECK(src.dtype() == dst.dtype(), "copy: expected one dtype, got ", to_string(src.dtype()),
             " and ", to_string(dst.dtype()));
  if (src.device().is_cpu() && dst.device().is_cpu()) {
    copy_cpu(src, dst);
  } else {
    copy_cuda(src, dst);  // any direction that involves a GPU
  }
}

}  // namespace zero::ops
