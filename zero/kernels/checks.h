// Argument checks shared by the dispatch functions of zero/kernels/*.cpp (private).
// Each throws zero::Error naming the op, the argument, and what was expected and given.
#pragma once

#include "zero/core/tensor.h"

namespace zero::ops {

// `t` has `dtype`, exactly `sizes`, and a contiguous layout.
inline void check_tensor(const char* op, const Tensor& t, const char* what, DataType dtype,
                         const Shape& sizes) {
  ZERO_CHECK(t.dtype() == dtype, op, ": expected ", what, " of dtype ", to_string(dtype),
             ", got ", to_string(t.dtype()));
  ZERO_CHECK(t.sizes() == sizes, op, ": expected ", what, " of shape ", shape_to_string(sizes),
             ", got ", shape_to_string(t.sizes()));
  ZERO_CHECK(t.is_contiguous(), op, ": expected ", what, " to be contiguous; call .Contiguous()");
}

// `t` is a one-element f32 tensor (a loss, a count, an incoming scalar gradient).
inline void check_scalar(const char* op, const Tensor& t, const char* what) {
  ZERO_CHECK(t.dtype() == DataType::F32 && t.numel() == 1, op, ": expected a one-element f32 ",
             what, ", got dtype ", to_string(t.dtype()), " and shape ", shape_to_string(t.sizes()));
}

}  // namespace zero::ops
