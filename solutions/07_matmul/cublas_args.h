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
  // BEGIN SOLUTION ex07.1: pick transpose and ld from the stride that is 1
  // Unit stride along a row: ordinary row-major storage, which column-major code reads
  // as v^T already. A size-1 dimension has no meaningful stride, so it never decides.
  if ((v.col_stride == 1 || v.cols == 1) && (v.rows == 1 || v.row_stride >= v.cols)) {
    return {false, v.rows == 1 ? std::max<int64_t>(v.cols, 1) : v.row_stride};
  }
  // Unit stride down a column: a transposed view, i.e. column-major storage of v. To see
  // v^T cuBLAS must transpose it; consecutive columns of v are col_stride apart.
  if ((v.row_stride == 1 || v.rows == 1) && (v.cols == 1 || v.col_stride >= v.rows)) {
    return {true, v.cols == 1 ? std::max<int64_t>(v.rows, 1) : v.col_stride};
  }
  ZERO_CHECK(false, "expected a view with a unit stride, got strides (", v.row_stride, ", ",
             v.col_stride, ") for a ", v.rows, " x ", v.cols, " matrix; call Contiguous() first");
  return {};
  // END SOLUTION
}

/// The cuBLAS arguments for C = A B with A [M, K], B [K, N] (row-major views) and C a
/// contiguous row-major [M, N]. Throws zero::Error if the inner dimensions differ.
inline GemmArgs cublas_gemm_args(const MatrixView& a, const MatrixView& b) {
  ZERO_CHECK(a.cols == b.rows, "expected A [M, K] and B [K, N] with equal K, got A [", a.rows, ", ",
             a.cols, "] and B [", b.rows, ", ", b.cols, "]");
  GemmArgs args;
  // BEGIN SOLUTION ex07.2: fill args for C^T = B^T A^T (B first, m = N, n = M, ldc = N)
  const ColumnMajorRead rb = column_major_read(b), ra = column_major_read(a);
  args.first = Operand::B;  // column-major cuBLAS computes C^T (N x M) = B^T (N x K) A^T (K x M)
  args.second = Operand::A;
  args.transa = rb.transpose;
  args.transb = ra.transpose;
  args.m = b.cols;
  args.n = a.rows;
  args.k = a.cols;
  args.lda = rb.ld;
  args.ldb = ra.ld;
  args.ldc = std::max<int64_t>(b.cols, 1);  // C^T column-major = C row-major with row stride N
  // END SOLUTION
  return args;
}

}  // namespace zero::ex07
