// Argument checks shared by the dispatch functions of zero/kernels/*.cpp (private).
// Each throws zero::Error naming the op, the argument, and what was expected and
// given, so that every kernel words the same mistake the same way.
#pragma once

#include <vector>

#include "zero/core/tensor.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {

// `t` has dtype `dtype`.
inline void check_dtype(const char* op, const Tensor& t, const char* what, DataType dtype) {
  ZERO_CHECK(t.dtype() == dtype, op, ": expected ", what, " of dtype ", to_string(dtype),
             ", got ", to_string(t.dtype()));
}

// `t` has one of the floating-point dtypes the kernels are built for: f32, or bf16 and
// f16, which they load into float and compute with in FP32 (dtype_dispatch.h).
inline void check_float_dtype(const char* op, const Tensor& t, const char* what) {
  const DataType d = t.dtype();
  ZERO_CHECK(d == DataType::F32 || d == DataType::BF16 || d == DataType::F16, op, ": expected ",
             what, " of dtype f32, bf16 or f16, got ", to_string(d));
}

// `t` has dtype `dtype` or f32: a result that a 16-bit kernel may also write in FP32
// (a parameter gradient summed over many rows, kept in FP32 for the optimiser).
inline void check_dtype_or_f32(const char* op, const Tensor& t, const char* what,
                               DataType dtype) {
  ZERO_CHECK(t.dtype() == dtype || t.dtype() == DataType::F32, op, ": expected ", what,
             " of dtype ", to_string(dtype), dtype == DataType::F32 ? "" : " or f32", ", got ",
             to_string(t.dtype()));
}

// Every tensor of `operands` has `ref`'s dtype (the kernel's dtype dispatch then picks
// one instantiation for all of them).
inline void check_same_dtype(const char* op, const Tensor& ref,
                             const std::vector<const Tensor*>& operands) {
  for (const Tensor* t : operands) {
    ZERO_CHECK(t->dtype() == ref.dtype(), op, ": expected every operand of dtype ",
               to_string(ref.dtype()), ", got one of dtype ", to_string(t->dtype()));
  }
}

// `t` is laid out row-major without gaps.
inline void check_contiguous(const char* op, const Tensor& t, const char* what) {
  ZERO_CHECK(t.is_contiguous(), op, ": expected a contiguous ", what,
             " (call .Contiguous() first), got strides ", shape_to_string(t.strides()),
             " for shape ", shape_to_string(t.sizes()));
}

// `t` has exactly `sizes`.
inline void check_shape(const char* op, const Tensor& t, const char* what, const Shape& sizes) {
  ZERO_CHECK(t.sizes() == sizes, op, ": expected ", what, " of shape ", shape_to_string(sizes),
             ", got ", shape_to_string(t.sizes()));
}

// `t` has `dtype`, exactly `sizes`, and a contiguous layout.
inline void check_tensor(const char* op, const Tensor& t, const char* what, DataType dtype,
                         const Shape& sizes) {
  check_dtype(op, t, what, dtype);
  check_shape(op, t, what, sizes);
  check_contiguous(op, t, what);
}

// `t` is a one-element f32 tensor (a loss, a count, an incoming scalar gradient).
inline void check_scalar(const char* op, const Tensor& t, const char* what) {
  ZERO_CHECK(t.dtype() == DataType::F32 && t.numel() == 1, op, ": expected a one-element f32 ",
             what, ", got dtype ", to_string(t.dtype()), " and shape ", shape_to_string(t.sizes()));
}

// `dim` indexes a dimension of `t`.
inline void check_dim(const char* op, const Tensor& t, int dim) {
  ZERO_CHECK(dim >= 0 && dim < t.dim(), op, ": dimension ", dim, " out of range for shape ",
             shape_to_string(t.sizes()));
}

// A probability of dropping, in [0, 1): p = 1 would scale the kept nothing by 1/0.
inline void check_drop_probability(const char* op, float p) {
  ZERO_CHECK(p >= 0.0f && p < 1.0f, op, ": expected a dropout probability p in [0, 1), got ", p,
             p == 1.0f ? " (p = 1 would drop everything and scale by 1/0: use p < 1)" : "");
}

}  // namespace zero::ops
