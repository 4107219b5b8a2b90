// The kernels layer's own views (private to the kernels): a tensor's elements seen
// through new metadata, without the history that Tensor::Transpose and Tensor::View
// record in the autograd layer above. The fused Linear's kernels use them to read a
// weight [out, in] as its transpose and a bias [out] as a row [1, out].
#pragma once

#include "zero/core/tensor.h"

namespace zero::ops {

// `t` (2-d) with its two dimensions swapped (no copy).
inline Tensor transposed(const Tensor& t) {
  return Tensor(meta_transpose(t.meta(), 0, 1), t.node());
}

// Contiguous `t` viewed with new `sizes` of the same element count.
inline Tensor reshaped(const Tensor& t, const Shape& sizes) {
  return Tensor(meta_view(t.meta(), sizes), t.node());
}

}  // namespace zero::ops
