// Single-precision GEMM on the CPU (private to the library, the tests and the
// benchmark): C = alpha * op(A) @ op(B) + beta * C, all row-major.
//
// gemm_cpu is the fast, cache-blocked version behind matmul_cpu (see Note [GEMM
// blocking] in gemm_cpu.cpp); gemm_naive is the textbook triple loop, kept as the
// reference the tests and tools/bench_gemm_cpu.cpp compare it with.
#pragma once

#include <cstdint>

namespace zero::ops {

// op(A) is M x K and op(B) is K x N; C is M x N. Row-major with leading dimensions
// (row strides) lda, ldb, ldc: without transposition A(i, k) = A[i * lda + k]; with
// trans_a the stored matrix is K x M, so A(i, k) = A[k * lda + i] (likewise for B).
// K == 0 gives C = beta * C. When beta == 0, C is not read (it may hold NaNs).
// Parallel with OpenMP over tiles of C, unless called from inside a parallel region.
void gemm_cpu(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
              const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
              int64_t ldc);

// The same contract, computed one dot product at a time in double precision.
void gemm_naive(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
                int64_t ldc);

}  // namespace zero::ops
