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
#include <new>

namespace zero::ops {
namespace {

// Note [GEMM blocking]
// C (M x N) += A (M x K) @ B (K x N) does 2MNK flops on only MK + KN + MN numbers,
// so it can run at the speed of the FMA units rather than of memory, provided each
// number loaded is reused many times while it sits in a fast level of the memory
// hierarchy. The loops, outermost first, that each thread runs over its own rows of C
// (Note [GEMM threads without barriers]), and what each keeps where (sizes for
// AVX-512 and 48 KiB L1 / 2 MiB L2 per core; without AVX-512 kNR is 16):
//
//   for each kNC-column block of B and C       (j0)
//     for each kKC-deep slice of K              (k0)
//       pack op(B)[k0 slice, j0 block] -> kKC x kNC = 256 x 512 floats = 512 KiB  (L2/L3)
//       for each kMC-row block of A
//         pack op(A)[block rows, k0 slice] -> strips of kMR rows, kMC x kKC floats
//         for each kNR-column strip of B: kKC x kNR = 256 x 32 floats = 32 KiB    (L1)
//           for each kMR-row strip of the block (kMR x kKC = 6 KiB, from L2)
//             micro-kernel: a kMR x kNR tile of C in registers
//
//   registers  the 6 x 32 tile of C is 12 AVX-512 registers, accumulated over the
//              whole K slice. Each step k loads 2 vectors of B and broadcasts 6
//              floats of A for 12 FMAs, a ratio of loads to FMAs the core sustains.
//   L1 (48K)   the B strip (32 KiB) is reused by every kMR-row strip of the A block.
//   L2 (2M)    the A block (kMC x kKC = 144 x 256 floats = 144 KiB) is reused by
//              every B strip of the slice.
//   L3 / RAM   the packed B slice is read once per A block; each B element is
//              packed once per thread, each A element once per kNC columns of C.
//
// Packing copies each block into exactly the order the micro-kernel reads it (A in
// strips of kMR rows, B in strips of kNR columns, both k-major), so the kernel walks
// memory linearly whatever the strides or transposition of the original matrices.
// The last strip of each is padded with zeros: the kernel always computes a full
// tile and writes back only the valid part, and zeros keep the unused lanes free of
// stray NaNs or denormals that could slow it down.
//
// Note [GEMM threads without barriers]
// Threads split the rows of C, in whole strips of kMR rows, and each packs its own copy
// of every B slice: nothing is shared, so nothing waits on anything until the loop ends.
// An earlier version shared the packed slices (packed together, then a barrier, then
// the tiles split between the threads), two barriers per K slice. The training step
// of a small model is hundreds of small GEMMs, and on a 2-core machine shared with
// other work those barriers were where the second thread lost its time: whenever the
// other thread was not running, the one that reached the barrier waited for it. Packing
// B twice costs K x N copies per thread against (M / threads) x N x K multiply-adds, so
// a few percent at most.
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

// A cache-line-aligned float buffer that only grows, so that after the first calls
// gemm_cpu allocates nothing (one per thread: see gemm_cpu).
class PackBuffer {
 public:
  PackBuffer() = default;
  PackBuffer(const PackBuffer&) = delete;
  PackBuffer& operator=(const PackBuffer&) = delete;
  ~PackBuffer() { std::free(data_); }

  float* Get(int64_t count) {
    if (count > capacity_) {
      std::free(data_);
      const size_t bytes = (static_cast<size_t>(count) * sizeof(float) + 63) / 64 * 64;
      data_ = static_cast<float*>(std::aligned_alloc(64, bytes));
      if (data_ == nullptr) throw std::bad_alloc();
      capacity_ = count;
    }
    return data_;
  }

 private:
  float* data_ = nullptr;
  int64_t capacity_ = 0;
};

// Packs one strip of `valid` <= R rows and `depth` columns, element (r, k) at
// src[r * row_stride + k * depth_stride], k-major: dst[k * R + r]; rows from `valid`
// to R are zero. A strip of A is kMR rows of op(A); a strip of B is kNR columns of
// op(B), packed as rows of op(B) transposed: only the strides differ.
template <int R>
void pack_strip(const float* src, int64_t row_stride, int64_t depth_stride, int64_t valid,
                int64_t depth, float* __restrict dst) {
  for (int64_t k = 0; k < depth; ++k) {
    for (int64_t r = 0; r < valid; ++r) dst[k * R + r] = src[r * row_stride + k * depth_stride];
    for (int64_t r = valid; r < R; ++r) dst[k * R + r] = 0.0f;
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
  const int64_t a_strips = (M + kMR - 1) / kMR;
  const bool parallel = M * N * K > kParallelMacs && !omp_in_parallel();
#pragma omp parallel if (parallel)
  {
    // This thread's strips of rows of C (Note [GEMM threads without barriers]), and its
    // own packing buffers. A caller that is itself one of many OpenMP threads (matmul_cpu
    // over a batch) runs this with a team of one.
    const int64_t threads = omp_get_num_threads(), me = omp_get_thread_num();
    const int64_t row_begin = a_strips * me / threads * kMR;
    const int64_t row_end = std::min(M, a_strips * (me + 1) / threads * kMR);
    thread_local PackBuffer a_buffer, b_buffer;
    float* const packed_a = a_buffer.Get(kMC * kKC);
    float* const packed_b = b_buffer.Get(kKC * kNC);
    for (int64_t j0 = 0; j0 < N && row_begin < row_end; j0 += kNC) {
      const int64_t nc = std::min(kNC, N - j0);
      const int64_t n_strips = (nc + kNR - 1) / kNR;
      for (int64_t k0 = 0; k0 < K; k0 += kKC) {
        const int64_t kc = std::min(kKC, K - k0);
        for (int64_t j = 0; j < nc; j += kNR) {
          pack_strip<kNR>(B + k0 * sb.rows + (j0 + j) * sb.cols, sb.cols, sb.rows,
                          std::min<int64_t>(kNR, nc - j), kc, packed_b + j * kc);
        }
        const float beta_k = k0 == 0 ? beta : 1.0f;  // later slices accumulate onto C
        for (int64_t i0 = row_begin; i0 < row_end; i0 += kMC) {
          const int64_t i_end = std::min(row_end, i0 + kMC);
          for (int64_t i = i0; i < i_end; i += kMR) {
            pack_strip<kMR>(A + i * sa.rows + k0 * sa.cols, sa.rows, sa.cols,
                            std::min<int64_t>(kMR, M - i), kc, packed_a + (i - i0) * kc);
          }
          for (int64_t strip = 0; strip < n_strips; ++strip) {
            const int64_t j = strip * kNR;
            for (int64_t i = i0; i < i_end; i += kMR) {
              micro_kernel(kc, packed_a + (i - i0) * kc, packed_b + j * kc, alpha, beta_k,
                           C + i * ldc + j0 + j, ldc, std::min<int64_t>(kMR, M - i),
                           std::min<int64_t>(kNR, nc - j));
            }
          }
        }
      }
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
