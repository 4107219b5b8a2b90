// Exercise 07 test: the cuBLAS arguments for a row-major product (cublas_args.h).
// A tiny column-major GEMM below plays cuBLAS: run with the arguments the exercise
// returns, on the operands' own memory, it must give the row-major product C = A B.
#include <gtest/gtest.h>

#include <algorithm>
#include <ostream>
#include <string>
#include <vector>

#include "cublas_args.h"
#include "exercise_test.h"

namespace zero::ex07 {

// So a failed EXPECT_EQ on an operand slot prints "A" or "B", not the enum's bytes.
void PrintTo(Operand o, std::ostream* os) { *os << (o == Operand::A ? "A" : "B"); }

namespace {

// What cublasSgemm computes: C (m x n, column-major, ldc) = op(A) (m x k) * op(B) (k x n),
// where op(X) = X or X^T, and X (column-major, ld) holds X(i, j) at x[i + j * ld].
void gemm_column_major(bool transa, bool transb, int64_t m, int64_t n, int64_t k, const float* a,
                       int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc) {
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = 0; i < m; ++i) {
      double acc = 0.0;
      for (int64_t p = 0; p < k; ++p) {
        const float av = transa ? a[p + i * lda] : a[i + p * lda];
        const float bv = transb ? b[j + p * ldb] : b[p + j * ldb];
        acc += static_cast<double>(av) * bv;
      }
      c[i + j * ldc] = static_cast<float>(acc);
    }
  }
}

// A matrix in memory: `storage` and a view of it (possibly transposed or padded).
struct Operand2D {
  std::vector<float> storage;
  MatrixView view;
  float at(int64_t r, int64_t c) const {
    return storage[r * view.row_stride + c * view.col_stride];
  }
};

// rows x cols values; `transposed` stores them column-major (a transposed view of a
// cols x rows tensor), `pad` adds unused elements after each stored row.
Operand2D make_operand(int64_t rows, int64_t cols, bool transposed, int64_t pad, float seed) {
  Operand2D m;
  const int64_t outer = transposed ? cols : rows, inner = transposed ? rows : cols;
  const int64_t ld = inner + pad;
  m.storage.assign(outer * ld, -999.0f);  // padding would poison a wrong read
  m.view = transposed ? MatrixView{rows, cols, 1, ld} : MatrixView{rows, cols, ld, 1};
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      m.storage[r * m.view.row_stride + c * m.view.col_stride] = seed + r * 10.0f + c;
    }
  }
  return m;
}

std::string describe(const MatrixView& v) {
  return std::to_string(v.rows) + "x" + std::to_string(v.cols) + " strides (" +
         std::to_string(v.row_stride) + ", " + std::to_string(v.col_stride) + ")";
}

// Checks `r` by what cuBLAS would do with it rather than by expected numbers (a vector
// has more than one right answer). cuBLAS reads a stored matrix X column-major, X(i, j)
// at i + j * ld, and uses op(X) = X, or X^T when transposed; it must see v^T. So X is
// v^T (cols x rows) when not transposed and v (rows x cols) when transposed, and cuBLAS
// rejects an ld below X's row count. Returns "" or what goes wrong.
std::string misread(const MatrixView& v, const ColumnMajorRead& r) {
  const int64_t x_rows = r.transpose ? v.rows : v.cols;
  if (r.ld < std::max<int64_t>(1, x_rows)) {
    return "ld " + std::to_string(r.ld) + " is below the stored matrix's " +
           std::to_string(x_rows) + " rows (cuBLAS rejects it)";
  }
  for (int64_t i = 0; i < v.rows; ++i) {
    for (int64_t j = 0; j < v.cols; ++j) {
      const int64_t want = i * v.row_stride + j * v.col_stride;  // where v(i, j) lives
      const int64_t got = r.transpose ? i + j * r.ld : j + i * r.ld;
      if (got != want) {
        return "element (" + std::to_string(i) + ", " + std::to_string(j) + ") read at offset " +
               std::to_string(got) + " instead of " + std::to_string(want);
      }
    }
  }
  return "";
}

// The largest offset cuBLAS touches in an operand op(X) of m x k with leading dimension ld.
int64_t last_offset(bool trans, int64_t m, int64_t k, int64_t ld) {
  const int64_t x_rows = trans ? k : m, x_cols = trans ? m : k;
  return (x_rows - 1) + (x_cols - 1) * ld;
}

TEST(CublasArgsTest, RowMajorMatrixIsReadAsStoredWithItsRowStride) {
  ZERO_EXERCISE("ex07.1");
  const ColumnMajorRead r = column_major_read({2, 3, 3, 1});
  EXPECT_FALSE(r.transpose);
  EXPECT_EQ(r.ld, 3);
}

TEST(CublasArgsTest, TransposedViewIsReadTransposed) {
  ZERO_EXERCISE("ex07.1");
  const ColumnMajorRead r = column_major_read({3, 2, 1, 3});  // the .T of a 2x3 tensor
  EXPECT_TRUE(r.transpose);
  EXPECT_EQ(r.ld, 3);
}

TEST(CublasArgsTest, PaddedRowsKeepTheirRowStride) {
  ZERO_EXERCISE("ex07.1");
  const ColumnMajorRead r = column_major_read({2, 3, 8, 1});  // a column slice of a 2x8 tensor
  EXPECT_FALSE(r.transpose);
  EXPECT_EQ(r.ld, 8);
}

TEST(CublasArgsTest, PaddedTransposedViewKeepsItsColumnStride) {
  ZERO_EXERCISE("ex07.1");
  const ColumnMajorRead r = column_major_read({3, 2, 1, 5});  // the .T of a 2x3 slice of 2x5
  EXPECT_TRUE(r.transpose);
  EXPECT_EQ(r.ld, 5);
}

TEST(CublasArgsTest, EveryViewWithAUnitStrideIsReadInPlace) {
  ZERO_EXERCISE("ex07.1");
  // Size-1 dimensions included: a 1 x 4 row whose strides are both 1 still needs ld >= 4.
  for (int64_t rows : {1, 2, 3, 5}) {
    for (int64_t cols : {1, 2, 4}) {
      for (const bool transposed : {false, true}) {
        for (int64_t pad : {0, 3}) {
          const MatrixView v = transposed ? MatrixView{rows, cols, 1, rows + pad}
                                          : MatrixView{rows, cols, cols + pad, 1};
          const ColumnMajorRead r = column_major_read(v);
          const std::string why = misread(v, r);
          EXPECT_TRUE(why.empty()) << "view " << describe(v) << " read with transpose "
                                   << (r.transpose ? "true" : "false") << ", ld " << r.ld
                                   << ": " << why;
        }
      }
    }
  }
}

TEST(CublasArgsTest, ViewWithoutUnitStrideIsRejected) {
  ZERO_EXERCISE("ex07.1");
  EXPECT_FALSE(column_major_read({4, 4, 4, 1}).transpose);
  // Every other column of a 4x8 tensor: neither stride is 1, so no (transpose, ld) pair
  // describes it and cuBLAS would read the wrong elements.
  exercise::expect_exercise_error([] { column_major_read({4, 4, 8, 2}); },
                                  "a 4x4 view with strides (8, 2)");
  exercise::expect_exercise_error([] { column_major_read({3, 5, 2, 6}); },
                                  "a 3x5 view with strides (2, 6)");
}

TEST(CublasArgsTest, TwoByThreeTimesThreeByTwo) {
  ZERO_EXERCISE("ex07.2");
  const GemmArgs g = cublas_gemm_args({2, 3, 3, 1}, {3, 2, 2, 1});
  EXPECT_EQ(g.first, Operand::B);
  EXPECT_EQ(g.second, Operand::A);
  EXPECT_FALSE(g.transa);
  EXPECT_FALSE(g.transb);
  EXPECT_EQ(g.m, 2);  // N
  EXPECT_EQ(g.n, 2);  // M
  EXPECT_EQ(g.k, 3);
  EXPECT_EQ(g.lda, 2);  // B's row stride
  EXPECT_EQ(g.ldb, 3);  // A's row stride
  EXPECT_EQ(g.ldc, 2);
}

TEST(CublasArgsTest, RectangularShapesSwapMAndN) {
  ZERO_EXERCISE("ex07.2");
  const GemmArgs g = cublas_gemm_args({5, 7, 7, 1}, {7, 3, 3, 1});  // [5, 7] @ [7, 3]
  EXPECT_EQ(g.m, 3) << "m = N, the columns of B (cuBLAS computes C^T, N x M)";
  EXPECT_EQ(g.n, 5) << "n = M, the rows of A";
  EXPECT_EQ(g.k, 7) << "k = K, the shared dimension";
  EXPECT_EQ(g.ldc, 3) << "ldc = N, the row stride of the row-major [M, N] result";
  const GemmArgs t = cublas_gemm_args({5, 7, 1, 5}, {7, 3, 1, 7});  // both transposed views
  EXPECT_TRUE(t.transa);
  EXPECT_TRUE(t.transb);
  EXPECT_EQ(t.lda, 7);
  EXPECT_EQ(t.ldb, 5);
  // Only A transposed: B's flag and ld go in the first slot, A's in the second.
  const GemmArgs only_a = cublas_gemm_args({5, 7, 1, 5}, {7, 3, 3, 1});
  EXPECT_FALSE(only_a.transa) << "transa belongs to B, the first operand";
  EXPECT_TRUE(only_a.transb) << "transb belongs to A, the second operand";
  EXPECT_EQ(only_a.lda, 3);
  EXPECT_EQ(only_a.ldb, 5);
}

TEST(CublasArgsTest, ColumnMajorGemmReproducesTheRowMajorProduct) {
  ZERO_EXERCISE("ex07.1 ex07.2");
  int cases = 0;
  for (int64_t M : {1, 2, 3, 5}) {
    for (int64_t K : {1, 2, 4}) {
      for (int64_t N : {1, 3, 6}) {
        for (int layout = 0; layout < 8; ++layout) {
          const bool ta = layout & 1, tb = layout & 2;
          const int64_t pad = (layout & 4) ? 2 : 0;
          const Operand2D a = make_operand(M, K, ta, pad, 1.0f);
          const Operand2D b = make_operand(K, N, tb, pad, -0.5f);
          const GemmArgs g = cublas_gemm_args(a.view, b.view);
          const Operand2D& first = g.first == Operand::A ? a : b;
          const Operand2D& second = g.second == Operand::A ? a : b;
          // cuBLAS's own rule: a leading dimension is at least the stored column's length.
          ASSERT_GE(g.lda, std::max<int64_t>(1, g.transa ? g.k : g.m))
              << "lda of the first operand, " << describe(first.view);
          ASSERT_GE(g.ldb, std::max<int64_t>(1, g.transb ? g.n : g.k))
              << "ldb of the second operand, " << describe(second.view);
          ASSERT_GE(g.ldc, std::max<int64_t>(1, g.m)) << "ldc for C of m = " << g.m << " rows";
          // Wrong m, n, k or ld would make the GEMM below read or write outside memory.
          ASSERT_LT(last_offset(g.transa, g.m, g.k, g.lda), int64_t(first.storage.size()))
              << "the first operand's reads run past its memory: " << describe(first.view);
          ASSERT_LT(last_offset(g.transb, g.k, g.n, g.ldb), int64_t(second.storage.size()))
              << "the second operand's reads run past its memory: " << describe(second.view);
          ASSERT_LE((g.n - 1) * g.ldc + g.m, M * N)
              << "C (m " << g.m << ", n " << g.n << ", ldc " << g.ldc
              << ") runs past the " << M << " x " << N << " result";
          std::vector<float> c(M * N, 0.0f);
          gemm_column_major(g.transa, g.transb, g.m, g.n, g.k, first.storage.data(), g.lda,
                            second.storage.data(), g.ldb, c.data(), g.ldc);
          for (int64_t i = 0; i < M; ++i) {
            for (int64_t j = 0; j < N; ++j) {
              double ref = 0.0;
              for (int64_t p = 0; p < K; ++p) ref += static_cast<double>(a.at(i, p)) * b.at(p, j);
              ASSERT_FLOAT_EQ(c[i * N + j], static_cast<float>(ref))
                  << "C(" << i << ", " << j << ") for A " << describe(a.view) << " and B "
                  << describe(b.view);
            }
          }
          ++cases;
        }
      }
    }
  }
  EXPECT_EQ(cases, 4 * 3 * 3 * 8);
}

TEST(CublasArgsTest, MismatchedInnerDimensionsAreRejected) {
  ZERO_EXERCISE("ex07.2");
  EXPECT_EQ(cublas_gemm_args({2, 3, 3, 1}, {3, 4, 4, 1}).k, 3);
  exercise::expect_exercise_error([] { cublas_gemm_args({2, 3, 3, 1}, {4, 2, 2, 1}); },
                                  "A [2, 3] times B [4, 2]");
}

}  // namespace
}  // namespace zero::ex07
