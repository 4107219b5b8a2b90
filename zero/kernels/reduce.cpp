// Dispatch for reductions (sum, mean, max over a dimension or over everything).
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
  ZERO_CHECK(out.numel() == 1, "sum: expected a one-element output, got shape ",
             shape_to_string(out.sizes()));
  if (x.device().is_cpu()) {
    sum_all_cpu(x, out);
  } else {
    sum_all_cuda(x, out);
  }
}

}  // namespace zero::ops
