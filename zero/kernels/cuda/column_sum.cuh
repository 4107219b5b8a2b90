// Column sums of a row-major matrix on the GPU, for the gradients of a bias: the sum of
// grad_out [N, out] over its N rows. Shared by blas_lt.cu (a Linear's bias gradient)
// and the kernels that need the same sum of their own partials.
#pragma once

#include "zero/core/tensor.h"

namespace zero::ops::cuda {

// out[c] = sum over r of x[r, c], for x of shape [rows, cols] in a float dtype whose rows
// are contiguous (any row stride: a column block of a wider matrix is fine) and out of
// `cols` contiguous elements in any float dtype. Sums in FP32, in a fixed order (the
// same bits on every run), and rounds once to out's dtype. With `out2` (and `out3`), of
// the same dtype, the sums of the columns [0, out.numel()) go to out and the next ones to
// out2 (then out3): the gradients made from one matrix of partials (a LayerNorm's weight
// and bias, and the bias of the Linear before it) in one launch.
void column_sums(const Tensor& x, const Tensor& out, const Tensor& out2 = Tensor(),
                 const Tensor& out3 = Tensor());

}  // namespace zero::ops::cuda
