// Exercise 05: the index arithmetic behind every strided and broadcast kernel.
//
// A kernel over an output of shape `out_sizes` gives each thread one row-major
// position `linear`. To read an operand it needs that position's element offset in
// the operand's buffer: unravel `linear` into coordinates, then dot them with the
// operand's strides. A broadcast operand reads the same element for every index of
// a broadcast dimension, which is exactly a stride of 0. The chapter's strided kernel
// (chapters/05_dispatch/gpu.cu) and CPU loop (main.cpp) call these two functions;
// the library's own version is DimsArg::Offset / DimsArg::Broadcast in
// zero/kernels/dims_arg.h (solve it without looking!).
#pragma once

#include <cstdint>

#include "zero/core/error.h"
#include "zero/kernels/dims_arg.h"

namespace ch05 {

using zero::DimsArg;
using zero::kMaxDims;
using zero::Shape;

// Element offset, relative to the operand's first element, of the row-major
// position `linear` over `arg.sizes`. Runs on the host and on the GPU.
ZERO_HOST_DEVICE inline int64_t operand_offset(int64_t linear, const DimsArg& arg) {
  // TODO(ex05.1): unravel `linear` over arg.sizes (last dim fastest); sum coordinate * stride.
  ZERO_NOT_IMPLEMENTED("ex05.1");
}

// The DimsArg a kernel needs to read an operand of `sizes`/`strides` as if it had
// `out_sizes` (NumPy broadcasting): dimensions are matched from the right; a
// missing leading dimension or a size-1 dimension stretched to a larger size gets
// stride 0. Throws zero::Error ("cannot broadcast ...") when the shapes do not fit.
inline DimsArg broadcast_dims(const Shape& sizes, const Shape& strides, const Shape& out_sizes) {
  const int n = static_cast<int>(out_sizes.size());
  const int own = static_cast<int>(sizes.size());
  ZERO_CHECK(n <= kMaxDims, "expected at most ", kMaxDims, " dimensions, got ",
             zero::shape_to_string(out_sizes));
  ZERO_CHECK(own <= n && strides.size() == sizes.size(), "cannot broadcast shape ",
             zero::shape_to_string(sizes), " to ", zero::shape_to_string(out_sizes));
  DimsArg arg;
  arg.ndim = n;
  // TODO(ex05.2): right-align sizes; stride 0 where broadcast; else "cannot broadcast shape A to B".
  ZERO_NOT_IMPLEMENTED("ex05.2");
  return arg;
}

}  // namespace ch05
