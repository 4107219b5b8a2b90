// Exercise 07 test: the cuBLAS arguments for a row-major product (cublas_args.h).
// A tiny column-major GEMM below plays cuBLAS: run with the arguments the exercise
// returns, on the operands' own memory, it must give the row-major product C = A B.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cublas_args.h"

namespace zero::ex07 {
namespace {

using ::testing::HasSubstr;

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

TEST(CublasArgsTest, RowMajorMatrixIsReadAsStoredWithItsRowStride) {
  const ColumnMajorRead r = column_major_read({2, 3, 3, 1});
  EXPECT_FALSE(r.transpose);
  EXPECT_EQ(r.ld, 3);
}

TEST(CublasArgsTest, TransposedViewIsReadTransposed) {
  const ColumnMajorRead r = column_major_read({3, 2, 1, 3});  // the .T of a 2x3 tensor
  EXPECT_TRUE(r.transpose);
  EXPECT_EQ(r.ld, 3);
}

TEST(CublasArgsTest, PaddedRowsKeepTheirRowStride) {
  const ColumnMajorRead r = column_major_read({2, 3, 8, 1});  // a column slice of a 2x8 tensor
  EXPECT_FALSE(r.transpose);
  EXPECT_EQ(r.ld, 8);
}

TEST(CublasArgsTest, ViewWithoutUnitStrideIsRejected) {
  EXPECT_FALSE(column_major_read({4, 4, 4, 1}).transpose);
  try {
    column_major_read({4, 4, 8, 2});  // every other column of a 4x8 tensor
    FAIL() << "expected zero::Error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("unit stride"));
  }
}

TEST(CublasArgsTest, TwoByThreeTimesThreeByTwo) {
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
  const GemmArgs g = cublas_gemm_args({5, 7, 7, 1}, {7, 3, 3, 1});
  EXPECT_EQ(g.m, 3);
  EXPECT_EQ(g.n, 5);
  EXPECT_EQ(g.k, 7);
  EXPECT_EQ(g.ldc, 3);
  const GemmArgs t = cublas_gemm_args({5, 7, 1, 5}, {7, 3, 1, 7});  // both transposed views
  EXPECT_TRUE(t.transa);
  EXPECT_TRUE(t.transb);
  EXPECT_EQ(t.lda, 7);
  EXPECT_EQ(t.ldb, 5);
}

TEST(CublasArgsTest, ColumnMajorGemmReproducesTheRowMajorProduct) {
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
          ASSERT_GE(g.lda, std::max<int64_t>(1, g.transa ? g.k : g.m)) << describe(b.view);
          ASSERT_GE(g.ldb, std::max<int64_t>(1, g.transb ? g.n : g.k)) << describe(a.view);
          ASSERT_GE(g.ldc, std::max<int64_t>(1, g.m));
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
  EXPECT_EQ(cublas_gemm_args({2, 3, 3, 1}, {3, 4, 4, 1}).k, 3);
  try {
    cublas_gemm_args({2, 3, 3, 1}, {4, 2, 2, 1});
    FAIL() << "expected zero::Error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("A [2, 3] and B [4, 2]"));
  }
}

}  // namespace
}  // namespace zero::ex07
