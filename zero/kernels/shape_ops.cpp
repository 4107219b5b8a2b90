// Dispatch for masked_fill and concat: the ops that rearrange or overwrite elements
// rather than compute with them. Checks dtypes, devices and shapes, then calls the
// CPU or CUDA version. The autograd ops are in autograd/ops/shape_ops.cpp.
#include "zero/kernels/dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {

ZERO_DEFINE_KERNEL(masked_fill);
ZERO_DEFINE_KERNEL(concat);

namespace {

// True when `from` broadcasts to exactly `to` (NumPy rules, `to` unchanged).
bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  const size_t lead = to.size() - from.size();
  for (size_t d = 0; d < from.size(); ++d) {
    if (from[d] != 1 && from[d] != to[lead + d]) return false;
  }
  return true;
}

}  // namespace

void masked_fill(const Tensor& x, const Tensor& mask, float value, const Tensor& out) {
  check_same_device("masked_fill", {&x, &mask, &out});
  ZERO_CHECK(x.dtype() == DataType::F32 && out.dtype() == DataType::F32,
             "masked_fill: expected f32 input and output, got ", to_string(x.dtype()), " and ",
             to_string(out.dtype()));
  ZERO_CHECK(mask.dtype() == DataType::I32, "masked_fill: expected an i32 mask, got ",
             to_string(mask.dtype()));
  ZERO_CHECK(broadcasts_to(mask.sizes(), x.sizes()), "masked_fill: expected a mask that "
             "broadcasts to the input's shape ", shape_to_string(x.sizes()), ", got mask shape ",
             shape_to_string(mask.sizes()));
  ZERO_CHECK(out.sizes() == x.sizes(), "masked_fill: expected output shape ",
             shape_to_string(x.sizes()), ", got ", shape_to_string(out.sizes()));
  masked_fill_stub(x.device(), x, mask, value, out);
}

void concat(const std::vector<Tensor>& inputs, int dim, const Tensor& out) {
  ZERO_CHECK(!inputs.empty(), "concat: expected at least one tensor, got an empty list");
  std::vector<const Tensor*> all{&out};
  for (const Tensor& t : inputs) all.push_back(&t);
  check_same_device("concat", all);
  const Tensor& first = inputs[0];
  ZERO_CHECK(dim >= 0 && dim < first.dim(), "concat: dimension ", dim,
             " out of range for shape ", shape_to_string(first.sizes()));
  int64_t joined = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    ZERO_CHECK(t.dtype() == first.dtype(), "concat: expected every tensor of dtype ",
               to_string(first.dtype()), ", got ", to_string(t.dtype()), " for tensor ", i);
    bool fits = t.dim() == first.dim();
    for (int d = 0; fits && d < t.dim(); ++d) fits = d == dim || t.size(d) == first.size(d);
    ZERO_CHECK(fits, "concat: expected sizes to match except in dimension ", dim, ", got ",
               shape_to_string(first.sizes()), " (tensor 0) and ", shape_to_string(t.sizes()),
               " (tensor ", i, ")");
    joined += t.size(dim);
  }
  Shape expected = first.sizes();
  expected[dim] = joined;
  ZERO_CHECK(out.sizes() == expected && out.dtype() == first.dtype(), "concat: expected an ",
             to_string(first.dtype()), " output of shape ", shape_to_string(expected), ", got ",
             to_string(out.dtype()), " ", shape_to_string(out.sizes()));
  concat_stub(out.device(), inputs, dim, out);
}

}  // namespace zero::ops
