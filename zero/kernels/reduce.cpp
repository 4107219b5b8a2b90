// Dispatch for reductions (sum, mean, max over a dimension or over everything, and
// the backward of max). Checks shapes and dtypes, then calls the CPU or CUDA version.
// The kernels are in cpu/reduce_cpu.cpp; the autograd ops in autograd/ops/reduce_ops.cpp.
#include <limits>

#include "zero/kernels/cpu/cpu_ops.h"
#include "zero/kernels/cuda/cuda_ops.h"

namespace zero::ops {
namespace {

// `out` must be `x`'s shape with size 1 at `dim`.
void check_dim_reduction(const char* op, const Tensor& x, int dim, const Tensor& out) {
  ZERO_CHECK(x.dtype() == DataType::F32, op, ": expected an f32 input, got ", to_string(x.dtype()));
  ZERO_CHECK(dim >= 0 && dim < x.dim(), op, ": dimension ", dim, " out of range for shape ",
             shape_to_string(x.sizes()));
  Shape expected = x.sizes();
  expected[dim] = 1;
  ZERO_CHECK(out.sizes() == expected, op, ": expected output shape ", shape_to_string(expected),
             ", got ", shape_to_string(out.sizes()));
  ZERO_CHECK(out.dtype() == DataType::F32, op, ": expected an f32 output, got ",
             to_string(out.dtype()));
}

void check_all_reduction(const char* op, const Tensor& x, const Tensor& out) {
  ZERO_CHECK(x.dtype() == DataType::F32, op, ": expected an f32 input, got ", to_string(x.dtype()));
  ZERO_CHECK(out.numel() == 1, op, ": expected a one-element output, got shape ",
             shape_to_string(out.sizes()));
  ZERO_CHECK(out.dtype() == DataType::F32, op, ": expected an f32 output, got ",
             to_string(out.dtype()));
}

void check_dtype(const char* op, const Tensor& t, DataType dtype, const char* what) {
  ZERO_CHECK(t.dtype() == dtype, op, ": expected ", what, " of dtype ", to_string(dtype), ", got ",
             to_string(t.dtype()));
}

}  // namespace

void sum(const Tensor& x, int dim, const Tensor& out) {
  check_same_device("sum", {&x, &out});
  check_dim_reduction("sum", x, dim, out);
  if (x.device().is_cpu()) {
    sum_cpu(x, dim, out);
  } else {
    sum_cuda(x, dim, out);
  }
}

void sum_all(const Tensor& x, const Tensor& out) {
  check_same_device("sum", {&x, &out});
  check_all_reduction("sum", x, out);
  if (x.device().is_cpu()) {
    sum_all_cpu(x, out);
  } else {
    sum_all_cuda(x, out);
  }
}

void mean(const Tensor& x, int dim, const Tensor& out) {
  check_same_device("mean", {&x, &out});
  check_dim_reduction("mean", x, dim, out);
  if (x.device().is_cpu()) {
    mean_cpu(x, dim, out);
  } else {
    mean_cuda(x, dim, out);
  }
}

void mean_all(const Tensor& x, const Tensor& out) {
  check_same_device("mean", {&x, &out});
  check_all_reduction("mean", x, out);
  if (x.device().is_cpu()) {
    mean_all_cpu(x, out);
  } else {
    mean_all_cuda(x, out);
  }
}

void max(const Tensor& x, int dim, const Tensor& values, const Tensor& indices) {
  check_same_device("max", {&x, &values, &indices});
  check_dim_reduction("max", x, dim, values);
  ZERO_CHECK(x.size(dim) > 0, "max: expected a non-empty dimension to reduce, got dimension ",
             dim, " of size 0 in shape ", shape_to_string(x.sizes()));
  ZERO_CHECK(x.size(dim) <= std::numeric_limits<int32_t>::max(), "max: dimension ", dim,
             " of size ", x.size(dim), " does not fit the i32 indices");
  check_dtype("max", values, DataType::F32, "values");
  check_dtype("max", indices, DataType::I32, "indices");
  ZERO_CHECK(indices.sizes() == values.sizes(), "max: expected indices of shape ",
             shape_to_string(values.sizes()), ", got ", shape_to_string(indices.sizes()));
  if (x.device().is_cpu()) {
    max_cpu(x, dim, values, indices);
  } else {
    max_cuda(x, dim, values, indices);
  }
}

void max_all(const Tensor& x, const Tensor& value, const Tensor& index) {
  check_same_device("max", {&x, &value, &index});
  check_all_reduction("max", x, value);
  ZERO_CHECK(x.numel() > 0, "max: expected a non-empty tensor, got shape ",
             shape_to_string(x.sizes()));
  ZERO_CHECK(x.numel() <= std::numeric_limits<int32_t>::max(), "max: ", x.numel(),
             " elements do not fit the i32 index");
  check_dtype("max", value, DataType::F32, "the value");
  check_dtype("max", index, DataType::I32, "the index");
  ZERO_CHECK(index.numel() == 1, "max: expected a one-element index, got shape ",
             shape_to_string(index.sizes()));
  if (x.device().is_cpu()) {
    max_all_cpu(x, value, index);
  } else {
    max_all_cuda(x, value, index);
  }
}

void max_backward(const Tensor& grad_values, const Tensor& indices, int dim,
                  const Tensor& grad_x) {
  check_same_device("max backward", {&grad_values, &indices, &grad_x});
  check_dtype("max backward", grad_x, DataType::F32, "grad_x");
  check_dim_reduction("max backward", grad_x, dim, grad_values);  // also checks grad_values
  check_dtype("max backward", indices, DataType::I32, "indices");
  ZERO_CHECK(indices.sizes() == grad_values.sizes(), "max backward: expected indices of shape ",
             shape_to_string(grad_values.sizes()), ", got ", shape_to_string(indices.sizes()));
  if (grad_x.device().is_cpu()) {
    max_backward_cpu(grad_values, indices, dim, grad_x);
  } else {
    max_backward_cuda(grad_values, indices, dim, grad_x);
  }
}

}  // namespace zero::ops
