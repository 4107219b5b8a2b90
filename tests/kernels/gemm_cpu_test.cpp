// Tests of the CPU SGEMM (kernels/cpu/gemm_cpu.cpp): the blocked gemm_cpu against
// the naive loop on shapes that hit every edge of the blocking (sizes that are not
// multiples of the register tile, several K slices, several tiles of C), all four
// transpose combinations, alpha/beta, leading dimensions wider than the matrices,
// K = 0, and concurrent calls. gemm_naive itself is first checked against
// hand-computed values.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "zero/kernels/cpu/gemm_cpu.h"

namespace zero::ops {
namespace {

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

struct Case {
  int64_t M, N, K;
};

// Runs gemm_cpu and gemm_naive on the same random inputs (stored transposed when
// asked, with leading dimensions `pad` wider than needed) and compares all of C,
// including the padding columns of C, which neither may touch.
void expect_matches_naive(Case s, bool trans_a, bool trans_b, float alpha, float beta,
                          int64_t pad = 0) {
  const int64_t a_rows = trans_a ? s.K : s.M, a_cols = trans_a ? s.M : s.K;
  const int64_t b_rows = trans_b ? s.N : s.K, b_cols = trans_b ? s.K : s.N;
  const int64_t lda = a_cols + pad, ldb = b_cols + pad, ldc = s.N + pad;
  const std::vector<float> a = random_floats(a_rows * lda, 1);
  const std::vector<float> b = random_floats(b_rows * ldb, 2);
  std::vector<float> c = random_floats(s.M * ldc, 3);
  std::vector<float> expected = c;
  gemm_cpu(trans_a, trans_b, s.M, s.N, s.K, alpha, a.data(), lda, b.data(), ldb, beta, c.data(),
           ldc);
  gemm_naive(trans_a, trans_b, s.M, s.N, s.K, alpha, a.data(), lda, b.data(), ldb, beta,
             expected.data(), ldc);
  const float tol = 1e-5f * (s.K + 1);
  int reported = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    if (std::fabs(c[i] - expected[i]) > tol && reported++ < 5) {
      ADD_FAILURE() << "M=" << s.M << " N=" << s.N << " K=" << s.K << " trans_a=" << trans_a
                    << " trans_b=" << trans_b << " pad=" << pad << ": C[" << i / ldc << "]["
                    << i % ldc << "] = " << c[i] << ", naive gives " << expected[i];
    }
  }
}

TEST(GemmCpuTest, NaiveMatchesHandComputedProduct) {
  // [[1, 2], [3, 4]] @ [[5, 6], [7, 8]] = [[19, 22], [43, 50]].
  const std::vector<float> a = {1, 2, 3, 4}, b = {5, 6, 7, 8};
  std::vector<float> c(4, 100.0f);
  gemm_naive(false, false, 2, 2, 2, 1.0f, a.data(), 2, b.data(), 2, 0.0f, c.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{19, 22, 43, 50}));
  // aᵀ @ bᵀ = [[1, 3], [2, 4]] @ [[5, 7], [6, 8]] = [[23, 31], [34, 46]]; then 2 * that - C.
  c = {1, 1, 1, 1};
  gemm_naive(true, true, 2, 2, 2, 2.0f, a.data(), 2, b.data(), 2, -1.0f, c.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{45, 61, 67, 91}));
}

TEST(GemmCpuTest, MatchesNaiveOnEdgeShapesForAllTransposes) {
  const Case cases[] = {
      {1, 1, 1},     {1, 37, 5},    {7, 1, 13},   {5, 3, 1},   {6, 32, 256},
      {7, 33, 257},  {13, 70, 600}, {2, 100, 3},  {31, 17, 64},
      {145, 530, 300},  // more than one tile of C in both directions, two K slices
  };
  for (const Case& s : cases) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) expect_matches_naive(s, ta, tb, 1.0f, 0.0f);
    }
  }
}

TEST(GemmCpuTest, AppliesAlphaAndBeta) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      expect_matches_naive({9, 21, 40}, ta, tb, 0.5f, -2.0f);
      // Two K slices: beta must scale C once, not once per slice.
      expect_matches_naive({150, 40, 270}, ta, tb, -1.5f, 0.5f);
    }
  }
}

TEST(GemmCpuTest, HonoursLeadingDimensionsWiderThanTheMatrix) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) expect_matches_naive({11, 35, 29}, ta, tb, 1.0f, 0.5f, /*pad=*/5);
  }
}

TEST(GemmCpuTest, ZeroDepthScalesC) {
  std::vector<float> c = {1, 2, 3, 4, 5, 6};
  gemm_cpu(false, false, 2, 3, 0, 1.0f, nullptr, 0, nullptr, 3, 3.0f, c.data(), 3);
  EXPECT_EQ(c, (std::vector<float>{3, 6, 9, 12, 15, 18}));
  c.assign(6, std::numeric_limits<float>::quiet_NaN());
  gemm_cpu(false, false, 2, 3, 0, 1.0f, nullptr, 0, nullptr, 3, 0.0f, c.data(), 3);
  EXPECT_EQ(c, std::vector<float>(6, 0.0f));
}

TEST(GemmCpuTest, BetaZeroNeverReadsC) {
  const std::vector<float> a = random_floats(20 * 30, 4), b = random_floats(30 * 40, 5);
  std::vector<float> c(20 * 40, std::numeric_limits<float>::quiet_NaN());
  std::vector<float> expected(20 * 40);
  gemm_cpu(false, false, 20, 40, 30, 1.0f, a.data(), 30, b.data(), 40, 0.0f, c.data(), 40);
  gemm_naive(false, false, 20, 40, 30, 1.0f, a.data(), 30, b.data(), 40, 0.0f, expected.data(), 40);
  for (size_t i = 0; i < c.size(); ++i) ASSERT_NEAR(c[i], expected[i], 1e-4f) << "element " << i;
}

TEST(GemmCpuTest, CallsFromManyThreadsDoNotShareBuffers) {
  // matmul_cpu calls gemm_cpu from every thread of a batch loop at once; each call
  // must pack into its own buffers. Four products, each on its own thread.
  constexpr int kCalls = 4;
  const int64_t M = 150, N = 200, K = 1000;  // several K slices: the buffers are reused
  std::vector<std::vector<float>> a(kCalls), b(kCalls), c(kCalls), expected(kCalls);
  for (int t = 0; t < kCalls; ++t) {
    a[t] = random_floats(M * K, 10 + t);
    b[t] = random_floats(K * N, 20 + t);
    c[t].assign(M * N, 0.0f);
    expected[t].assign(M * N, 0.0f);
    gemm_naive(false, false, M, N, K, 1.0f, a[t].data(), K, b[t].data(), N, 0.0f,
               expected[t].data(), N);
  }
#pragma omp parallel num_threads(kCalls)
  {
#pragma omp barrier  // start together, so the calls overlap
    for (int t = omp_get_thread_num(); t < kCalls; t += omp_get_num_threads()) {
      gemm_cpu(false, false, M, N, K, 1.0f, a[t].data(), K, b[t].data(), N, 0.0f, c[t].data(), N);
    }
  }
  for (int t = 0; t < kCalls; ++t) {
    for (int64_t i = 0; i < M * N; ++i) {
      ASSERT_NEAR(c[t][i], expected[t][i], 1e-3f) << "call " << t << ", element " << i;
    }
  }
}

}  // namespace
}  // namespace zero::ops
