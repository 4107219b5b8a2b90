// Dispatch for the embedding lookup: check shapes, dtypes, devices and layouts, then
// call the CPU or CUDA kernel. Ids are validated by the kernels, which read them
// (the CPU one before writing anything); see cpu/embedding_cpu.cpp.
//
// Dtypes: the table and the gathered rows share one dtype (f32, bf16 or f16). The
// backward sums grad_out rows in FP32 and stores grad_weight in grad_out's dtype or,
// for an FP32 optimiser, in f32.
#include "zero/kernels/checks.h"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {

ZERO_DEFINE_KERNEL(embedding_forward);
ZERO_DEFINE_KERNEL(embedding_backward);

namespace {

// ids.sizes() + [C]: the shape of the gathered rows.
Shape gathered_shape(const Tensor& ids, int64_t c) {
  Shape s = ids.sizes();
  s.push_back(c);
  return s;
}

void check_table(const char* op, const Tensor& t, const char* what) {
  check_float_dtype(op, t, what);
  ZERO_CHECK(t.dim() == 2, op, ": expected ", what, " of shape [V, C], got ",
             shape_to_string(t.sizes()));
  check_contiguous(op, t, what);
}

void check_rows(const char* op, const Tensor& t, const char* what, const Tensor& ids,
                int64_t c) {
  const Shape expected = gathered_shape(ids, c);
  check_float_dtype(op, t, what);
  ZERO_CHECK(t.sizes() == expected, op, ": expected ", what, " of shape ",
             shape_to_string(expected), " (ids ", shape_to_string(ids.sizes()), " + [C]), got ",
             shape_to_string(t.sizes()));
  check_contiguous(op, t, what);
}

}  // namespace

void embedding_forward(const Tensor& weight, const Tensor& ids, const Tensor& out) {
  const char* op = "embedding";
  check_same_device(op, {&weight, &ids, &out});
  check_table(op, weight, "weight");
  check_dtype(op, ids, "ids", DataType::I32);
  check_rows(op, out, "output", ids, weight.size(1));
  check_dtype(op, out, "output", weight.dtype());
  embedding_forward_stub(out.device(), weight, ids, out);
}

void embedding_backward(const Tensor& grad_out, const Tensor& ids, const Tensor& grad_weight,
                        bool accumulate) {
  const char* op = "embedding backward";
  check_same_device(op, {&grad_out, &ids, &grad_weight});
  check_table(op, grad_weight, "grad_weight");
  check_dtype(op, ids, "ids", DataType::I32);
  check_rows(op, grad_out, "grad_out", ids, grad_weight.size(1));
  check_dtype_or_f32(op, grad_weight, "grad_weight", grad_out.dtype());
  embedding_backward_stub(grad_weight.device(), grad_out, ids, grad_weight, accumulate);
}

}  // namespace zero::ops
