// Dispatch for filling, random numbers and copies (the device-transfer path), and the
// kernels layer's own `contiguous`.
#include "zero/kernels/checks.h"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {

ZERO_DEFINE_KERNEL(fill);
ZERO_DEFINE_KERNEL(arange);
ZERO_DEFINE_KERNEL(rand_uniform);
ZERO_DEFINE_KERNEL(rand_normal);
ZERO_DEFINE_KERNEL(copy);
ZERO_DEFINE_KERNEL(convert);

void fill(const Tensor& out, float value) { fill_stub(out.device(), out, value); }

void arange(const Tensor& out, double start, double step) {
  ZERO_CHECK(out.is_contiguous(), "arange: expected a contiguous output");
  arange_stub(out.device(), out, start, step);
}

void rand_uniform(const Tensor& out, uint64_t seed, uint64_t offset) {
  ZERO_CHECK(out.is_contiguous() && out.dtype() == DataType::F32,
             "rand_uniform: expected a contiguous f32 output");
  rand_uniform_stub(out.device(), out, seed, offset);
}

void rand_normal(const Tensor& out, uint64_t seed, uint64_t offset) {
  ZERO_CHECK(out.is_contiguous() && out.dtype() == DataType::F32,
             "rand_normal: expected a contiguous f32 output");
  rand_normal_stub(out.device(), out, seed, offset);
}

void copy(const Tensor& src, const Tensor& dst) {
  ZERO_CHECK(src.sizes() == dst.sizes(), "copy: expected source and destination of one shape, got ",
             shape_to_string(src.sizes()), " and ", shape_to_string(dst.sizes()));
  ZERO_CHECK(src.dtype() == dst.dtype(), "copy: expected one dtype, got ", to_string(src.dtype()),
             " and ", to_string(dst.dtype()));
  // A copy that involves a GPU in either direction is the CUDA kernel's.
  copy_stub(src.device().is_cuda() ? src.device() : dst.device(), src, dst);
}

void convert(const Tensor& src, const Tensor& dst) {
  check_same_device("convert", {&src, &dst});
  check_shape("convert", dst, "the destination", src.sizes());
  if (src.dtype() == dst.dtype()) return copy(src, dst);
  convert_stub(dst.device(), src, dst);
}

Tensor contiguous(const Tensor& t) {
  if (t.is_contiguous()) return t;
  Tensor c = Tensor::Empty(t.sizes(), TensorOption().WithDtype(t.dtype()).OnDevice(t.device()));
  copy(t, c);
  return c;
}

Tensor contiguous_output(const Tensor& t) {
  if (t.is_contiguous()) return t;
  return Tensor::Empty(t.sizes(), TensorOption().WithDtype(t.dtype()).OnDevice(t.device()));
}

}  // namespace zero::ops
