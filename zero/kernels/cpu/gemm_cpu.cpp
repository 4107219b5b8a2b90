// Cache-blocked SGEMM for the CPU, and the naive reference it is tested against.
//
// The structure is the one every fast CPU BLAS shares (Goto's algorithm, as in
// BLIS and OpenBLAS): copy ("pack") blocks of A and B into contiguous buffers sized
// for the caches, then sweep a tiny register-resident "micro-kernel" over them.
// The micro-kernel is plain C++ that GCC vectorises under -march=native; no
// intrinsics. Read Note [GEMM blocking] first. Used by matmul_cpu.cpp.
#include "zero/kernels/cpu/gemm_cpu.h"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <new>

namespace zero::ops {
namespace {

// Note [GEMM blocking]
// C (M x N) += A (M x K) @ B (K x N) does 2MNK flops on only MK + KN + MN numbers,
// so it can run at the FMA units' speed, not memory speed, if every number loaded
// is reused many times while it sits in a fast level of the memory hierarchy:
//
//   registers  a kMR x kNR tile of C (6 x 32 floats = 12 AVX-512 registers) is
//              accumulated over the whole K slice. Each step k loads kNR floats of
//              B (2 vectors) and broadcasts kMR floats of A, then issues kMR * kNR
//              / 16 = 12 FMAs: 8 loads per 12 FMAs, which the core sustains.
//   L1 (48K)   the packed B micro-panel (kKC x kNR = 256 x 32 floats = 32 KiB) is
//              reused by every kMR-row strip of the A block, so it stays in L1
//              while the A micro-panels (6 x 256 floats = 6 KiB) stream past.
//   L2 (2M)    the packed A block (kMC x kKC = 144 x 256 floats = 144 KiB) is
//              reused for every kNR-column micro-panel of the B slice.
//   L3 / RAM   the packed B slice (kKC x kNC = 256 x 512 floats = 512 KiB) is read
//              once per A block.
//
// Packing copies each block into exactly the order the micro-kernel reads it (A in
// strips of kMR rows, B in strips of kNR columns, both k-major), so the kernel walks
// memory linearly whatever the strides or transposition of the original matrices,
// and edge strips are zero-padded so the kernel never needs a remainder case: it
// always computes a full tile and only the valid part is written back.
//
// Parallelism: C is cut into kMC x kNC tiles, which are independent; each OpenMP
// thread takes whole tiles and packs into its own buffers. Packing B again for each
// tile row costs K*N copies per kMC rows, against 2*kMC*K*N flops: under 1%.
#if defined(__AVX512F__)
constexpr int kNR = 32;  // two 16-float registers per row of the tile
#else
constexpr int kNR = 16;  // two 8-float AVX registers (or four SSE ones) per row
#endif
constexpr int kMR = 6;
constexpr int64_t kKC = 256;
constexpr int64_t kMC = 24 * kMR;
constexpr int64_t kNC = 16 * kNR;
// Below this many multiply-adds a parallel region costs more than it saves.
constexpr int64_t kParallelMacs = int64_t{1} << 18;

// A float buffer aligned to a cache line, so packed strips start on one.
struct AlignedFloats {
  explicit AlignedFloats(int64_t count) {
    const size_t bytes = (static_cast<size_t>(count) * sizeof(float) + 63) / 64 * 64;
    data = static_cast<float*>(std::aligned_alloc(64, bytes));
    if (data == nullptr) throw std::bad_alloc();
  }
  ~AlignedFloats() { std::free(data); }
  AlignedFloats(const AlignedFloats&) = delete;
  AlignedFloats& operator=(const AlignedFloats&) = delete;
  float* data;
};

// Packs a rows x depth block, element (r, k) at src[r * row_stride + k * depth_stride],
// into strips of R rows: dst[(r / R) * R * depth + k * R + r % R]. Rows past the
// end of the last strip are zero. The same routine packs A (rows = M) and B
// (rows = N, reading B transposed): only the strides differ.
template <int R>
void pack_strips(const float* src, int64_t row_stride, int64_t depth_stride, int64_t rows,
                 int64_t depth, float* dst) {
  for (int64_t r0 = 0; r0 < rows; r0 += R) {
    const int64_t valid = std::min<int64_t>(R, rows - r0);
    const float* s = src + r0 * row_stride;
    float* d = dst + r0 * depth;
    for (int64_t k = 0; k < depth; ++k) {
      for (int64_t r = 0; r < valid; ++r) d[k * R + r] = s[r * row_stride + k * depth_stride];
      for (int64_t r = valid; r < R; ++r) d[k * R + r] = 0.0f;
    }
  }
}

// The register tile: acc (kMR x kNR) = sum over k of a[k][:] (outer) b[k][:], from
// one packed A strip and one packed B strip; then C[:m, :n] = alpha * acc + beta * C.
// The fixed sizes let the compiler keep acc in vector registers and unroll fully.
inline void micro_kernel(int64_t depth, const float* __restrict a, const float* __restrict b,
                         float alpha, float beta, float* __restrict c, int64_t ldc, int64_t m,
                         int64_t n) {
  float acc[kMR][kNR] = {};
  for (int64_t k = 0; k < depth; ++k) {
    const float* ak = a + k * kMR;
    const float* bk = b + k * kNR;
    for (int i = 0; i < kMR; ++i) {
#pragma omp simd
      for (int j = 0; j < kNR; ++j) acc[i][j] += ak[i] * bk[j];
    }
  }
  for (int64_t i = 0; i < m; ++i) {
    float* ci = c + i * ldc;
    if (beta == 0.0f) {  // C may be uninitialised: never read it
      for (int64_t j = 0; j < n; ++j) ci[j] = alpha * acc[i][j];
    } else {
      for (int64_t j = 0; j < n; ++j) ci[j] = alpha * acc[i][j] + beta * ci[j];
    }
  }
}

// Strides of op(X) for a row-major X: op(X)(i, k) = X[i * rows + k * cols].
struct Strides {
  int64_t rows, cols;
};
Strides op_strides(bool trans, int64_t ld) { return trans ? Strides{1, ld} : Strides{ld, 1}; }

// One kMC x kNC tile of C: for each kKC slice of K, pack the A block and the B
// slice, then run the micro-kernel over every (strip of A, strip of B) pair. Only
// the first slice applies beta; later ones accumulate onto it.
void gemm_tile(int64_t i0, int64_t j0, int64_t mc, int64_t nc, int64_t K, float alpha,
               const float* A, Strides sa, const float* B, Strides sb, float beta, float* C,
               int64_t ldc, float* packed_a, float* packed_b) {
  for (int64_t k0 = 0; k0 < K; k0 += kKC) {
    const int64_t kc = std::min(kKC, K - k0);
    pack_strips<kMR>(A + i0 * sa.rows + k0 * sa.cols, sa.rows, sa.cols, mc, kc, packed_a);
    // B is packed as B^T (N x K) so its strips are kNR columns of B.
    pack_strips<kNR>(B + k0 * sb.rows + j0 * sb.cols, sb.cols, sb.rows, nc, kc, packed_b);
    const float beta_k = k0 == 0 ? beta : 1.0f;
    for (int64_t j = 0; j < nc; j += kNR) {  // B strip stays in L1 across this loop's body
      for (int64_t i = 0; i < mc; i += kMR) {
        micro_kernel(kc, packed_a + i * kc, packed_b + j * kc, alpha, beta_k,
                     C + (i0 + i) * ldc + j0 + j, ldc, std::min<int64_t>(kMR, mc - i),
                     std::min<int64_t>(kNR, nc - j));
      }
    }
  }
}

// C = beta * C, without reading C when beta is 0 (the K == 0 or alpha == 0 case).
void scale_c(int64_t M, int64_t N, float beta, float* C, int64_t ldc) {
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[i * ldc + j];
  }
}

}  // namespace

void gemm_cpu(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
              const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
              int64_t ldc) {
  if (M == 0 || N == 0) return;
  if (K == 0 || alpha == 0.0f) return scale_c(M, N, beta, C, ldc);
  const Strides sa = op_strides(trans_a, lda);
  const Strides sb = op_strides(trans_b, ldb);
  const int64_t m_tiles = (M + kMC - 1) / kMC;
  const int64_t n_tiles = (N + kNC - 1) / kNC;
  const int64_t tiles = m_tiles * n_tiles;
  const bool parallel = tiles > 1 && M * N * K > kParallelMacs && !omp_in_parallel();
#pragma omp parallel if (parallel)
  {
    // Sized for a full tile, whatever the matrix, and kept for the thread's lifetime
    // (OpenMP reuses its threads), so no call pays to allocate and fault in pages.
    thread_local AlignedFloats packed_a(kMC * kKC);
    thread_local AlignedFloats packed_b(kKC * kNC);
#pragma omp for schedule(dynamic, 1)
    for (int64_t t = 0; t < tiles; ++t) {
      const int64_t i0 = (t / n_tiles) * kMC;
      const int64_t j0 = (t % n_tiles) * kNC;
      gemm_tile(i0, j0, std::min(kMC, M - i0), std::min(kNC, N - j0), K, alpha, A, sa, B, sb,
                beta, C, ldc, packed_a.data, packed_b.data);
    }
  }
}

void gemm_naive(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
                int64_t ldc) {
  const Strides sa = op_strides(trans_a, lda);
  const Strides sb = op_strides(trans_b, ldb);
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0.0;
      for (int64_t k = 0; k < K; ++k) {
        acc += static_cast<double>(A[i * sa.rows + k * sa.cols]) * B[k * sb.rows + j * sb.cols];
      }
      float& c = C[i * ldc + j];
      c = static_cast<float>(alpha * acc + (beta == 0.0f ? 0.0 : static_cast<double>(beta) * c));
    }
  }
}

}  // namespace zero::ops
