// Dispatch for reductions (sum, mean, max over a dimension or over everything, and
// the backward of max). Checks shapes and dtypes, then calls the kernel's stub.
// The kernels are in cpu/reduce_cpu.cpp; the autograd ops in autograd/ops/reduce_ops.cpp.
#include <limits>

#include "zero/kernels/checks.h"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {

ZERO_DEFINE_KERNEL(sum);
ZERO_DEFINE_KERNEL(sum_all);
ZERO_DEFINE_KERNEL(mean);
ZERO_DEFINE_KERNEL(mean_all);
ZERO_DEFINE_KERNEL(max);
ZERO_DEFINE_KERNEL(max_all);
ZERO_DEFINE_KERNEL(max_backward);

namespace {

// `out` has x's dtype and x's shape with size 1 at `dim`.
void check_dim_reduction(const char* op, const Tensor& x, int dim, const Tensor& out) {
  check_dim(op, x, dim);
  Shape expected = x.sizes();
  expected[dim] = 1;
  check_shape(op, out, "output", expected);
  check_same_dtype(op, x, {&out});
}

// `out` is one element of x's dtype.
void check_all_reduction(const char* op, const Tensor& x, const Tensor& out) {
  ZERO_CHECK(out.numel() == 1, op, ": expected a one-element output, got shape ",
             shape_to_string(out.sizes()));
  check_same_dtype(op, x, {&out});
}

}  // namespace

void sum(const Tensor& x, int dim, const Tensor& out) {
  check_same_device("sum", {&x, &out});
  check_dim_reduction("sum", x, dim, out);
  sum_stub(x.device(), x, dim, out);
}

void sum_all(const Tensor& x, const Tensor& out) {
  check_same_device("sum", {&x, &out});
  check_all_reduction("sum", x, out);
  sum_all_stub(x.device(), x, out);
}

void mean(const Tensor& x, int dim, const Tensor& out) {
  check_same_device("mean", {&x, &out});
  check_dim_reduction("mean", x, dim, out);
  mean_stub(x.device(), x, dim, out);
}

void mean_all(const Tensor& x, const Tensor& out) {
  check_same_device("mean", {&x, &out});
  check_all_reduction("mean", x, out);
  mean_all_stub(x.device(), x, out);
}

void max(const Tensor& x, int dim, const Tensor& values, const Tensor& indices) {
  check_same_device("max", {&x, &values, &indices});
  check_dim_reduction("max", x, dim, values);
  ZERO_CHECK(x.size(dim) > 0, "max: expected a non-empty dimension to reduce, got dimension ",
             dim, " of size 0 in shape ", shape_to_string(x.sizes()));
  ZERO_CHECK(x.size(dim) <= std::numeric_limits<int32_t>::max(), "max: dimension ", dim,
             " of size ", x.size(dim), " does not fit the i32 indices");
  check_dtype("max", indices, "indices", DataType::I32);
  check_shape("max", indices, "indices", values.sizes());
  max_stub(x.device(), x, dim, values, indices);
}

void max_all(const Tensor& x, const Tensor& value, const Tensor& index) {
  check_same_device("max", {&x, &value, &index});
  check_all_reduction("max", x, value);
  ZERO_CHECK(x.numel() > 0, "max: expected a non-empty tensor, got shape ",
             shape_to_string(x.sizes()));
  ZERO_CHECK(x.numel() <= std::numeric_limits<int32_t>::max(), "max: ", x.numel(),
             " elements do not fit the i32 index");
  check_dtype("max", index, "the index", DataType::I32);
  ZERO_CHECK(index.numel() == 1, "max: expected a one-element index, got shape ",
             shape_to_string(index.sizes()));
  max_all_stub(x.device(), x, value, index);
}

void max_backward(const Tensor& grad_values, const Tensor& indices, int dim,
                  const Tensor& grad_x) {
  check_same_device("max backward", {&grad_values, &indices, &grad_x});
  check_dim_reduction("max backward", grad_x, dim, grad_values);  // also checks grad_values
  check_dtype("max backward", indices, "indices", DataType::I32);
  check_shape("max backward", indices, "indices", grad_values.sizes());
  max_backward_stub(grad_x.device(), grad_values, indices, dim, grad_x);
}

}  // namespace zero::ops
