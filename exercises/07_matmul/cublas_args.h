// Exercise 07: the arguments of a column-major cuBLAS GEMM that computes a row-major
// product C = A B, as a pure function of the operands' shapes and strides.
//
// cuBLAS reads every matrix column-major; Zero stores tensors row-major. A row-major
// R x C matrix, read column-major with leading dimension = its row stride, is its
// transpose (C x R). So instead of C = A B we ask cuBLAS for C^T = B^T A^T: B goes
// first, A second, M and N swap, and the C^T cuBLAS writes column-major is C
// row-major. No data moves. (zero/kernels/cuda/blas.cu does the same; see its Note
// [Row-major tensors in a column-major library].) The chapter program prints these
// arguments for a 2x3 @ 3x2 example and calls cuBLAS with them; the CPU test checks
// them against a column-major GEMM written in the test.
#pragma once

#include <algorithm>
#include <cstdint>

#include "zero/core/error.h"

namespace zero::ex07 {

/// A 2-D view of row-major memory: element (r, c) is at data[r * row_stride + c * col_stride].
/// A contiguous R x C matrix has strides (C, 1); its transposed view has (1, R).
struct MatrixView {
  int64_t rows = 0, cols = 0;
  int64_t row_stride = 0, col_stride = 1;
};

/// How cuBLAS should read one operand: as stored (`transpose` false) or transposed, with
/// leading dimension `ld` (the distance between consecutive columns, column-major).
struct ColumnMajorRead {
  bool transpose = false;
  int64_t ld = 1;
};

/// Which tensor cuBLAS gets in its first or second operand slot.
enum class Operand { A, B };

/// One cublasGemmEx call: C_cm (m x n, ldc) = op(first) (m x k) * op(second) (k x n).
struct GemmArgs {
  Operand first = Operand::A, second = Operand::B;
  bool transa = false, transb = false;  // op() of the first and of the second operand
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;  // leading dimensions of first, second and C
};

/// How cuBLAS must read the row-major view `v` so that, column-major, it sees v^T
/// (v.cols x v.rows) without copying. Throws zero::Error if no stride is 1 (the caller
/// must make such a view contiguous first).
inline ColumnMajorRead column_major_read(const MatrixView& v) {
  // TODO(ex07.1): pick transpose and ld from the stride that is 1
  ZERO_NOT_IMPLEMENTED("ex07.1");
}

/// The cuBLAS arguments for C = A B with A [M, K], B [K, N] (row-major views) and C a
/// contiguous row-major [M, N]. Throws zero::Error if the inner dimensions differ.
inline GemmArgs cublas_gemm_args(const MatrixView& a, const MatrixView& b) {
  ZERO_CHECK(a.cols == b.rows, "expected A [M, K] and B [K, N] with equal K, got A [", a.rows, ", ",
             a.cols, "] and B [", b.rows, ", ", b.cols, "]");
  GemmArgs args;
  // TODO(ex07.2): fill args for C^T = B^T A^T (B first, m = N, n = M, ldc = N)
  ZERO_NOT_IMPLEMENTED("ex07.2");
  return args;
}

}  // namespace zero::ex07
