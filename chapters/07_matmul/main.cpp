// Chapter 07 · Matrix multiplication on the GPU: the CPU half.
//
// 1. The row-major/column-major trick, worked through on a 2x3 @ 3x2 product with the
//    arguments your exercise (cublas_args.h) computes and a column-major GEMM standing in
//    for cuBLAS. 2. The arithmetic intensity of GEMM and GEMV and the roofline they imply.
// Then, with a GPU, gpu.cu measures FP32 / TF32 / FP16-compute GEMM, Zero against calling
// cuBLAS directly, and batched decode steps. Run: ch07_matmul [--quick].
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "cublas_args.h"  // your exercise: solutions/ or exercises/07_matmul
#include "gpu.h"
#include "zero/core/device.h"
#include "zero/core/error.h"

namespace {

using zero::ex07::GemmArgs;
using zero::ex07::MatrixView;
using zero::ex07::Operand;

// What cuBLAS's sgemm computes, written plainly: C (m x n, column-major) = op(A) op(B),
// where a column-major X holds X(i, j) at x[i + j * ld].
void gemm_column_major(const GemmArgs& g, const float* a, const float* b, float* c) {
  for (int64_t j = 0; j < g.n; ++j) {
    for (int64_t i = 0; i < g.m; ++i) {
      float acc = 0.0f;
      for (int64_t p = 0; p < g.k; ++p) {
        const float av = g.transa ? a[p + i * g.lda] : a[i + p * g.lda];
        const float bv = g.transb ? b[j + p * g.ldb] : b[p + j * g.ldb];
        acc += av * bv;
      }
      c[i + j * g.ldc] = acc;
    }
  }
}

void print_memory(const char* name, const std::vector<float>& v) {
  std::printf("  %-22s [", name);
  for (size_t i = 0; i < v.size(); ++i) std::printf(i ? " %g" : "%g", v[i]);
  std::printf("]\n");
}

// Prints `count` values of memory read as a rows x cols matrix with element (r, c) at
// r * rs + c * cs.
void print_matrix(const char* name, const float* p, int rows, int cols, int rs, int cs) {
  std::printf("  %-22s", name);
  for (int r = 0; r < rows; ++r) {
    std::printf(r ? "  [" : "[");
    for (int c = 0; c < cols; ++c) std::printf(c ? " %4g" : "%4g", p[r * rs + c * cs]);
    std::printf("]");
  }
  std::printf("\n");
}

const char* op_name(bool transpose) { return transpose ? "T" : "N"; }

// Runs one product through the trick and compares with the row-major product. Returns
// true when they agree.
bool trick(const char* title, const std::vector<float>& a_mem, const MatrixView& a,
           const std::vector<float>& b_mem, const MatrixView& b, bool verbose) {
  const int M = static_cast<int>(a.rows), K = static_cast<int>(a.cols),
            N = static_cast<int>(b.cols);
  std::printf("\n%s\n", title);
  std::vector<float> expected(M * N, 0.0f);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j)
      for (int p = 0; p < K; ++p)
        expected[i * N + j] +=
            a_mem[i * a.row_stride + p * a.col_stride] * b_mem[p * b.row_stride + j * b.col_stride];
  print_memory("A's memory:", a_mem);
  print_memory("B's memory:", b_mem);
  print_matrix("A (as Zero sees it):", a_mem.data(), M, K, a.row_stride, a.col_stride);
  print_matrix("B (as Zero sees it):", b_mem.data(), K, N, b.row_stride, b.col_stride);
  print_matrix("C = A B, row-major:", expected.data(), M, N, N, 1);
  const GemmArgs g = zero::ex07::cublas_gemm_args(a, b);
  if (verbose) {
    std::printf("  cuBLAS reads memory column-major: element (i, j) at i + j * ld.\n");
    std::printf("  Read that way with ld = %lld, A's memory is a %dx%d matrix:\n",
                static_cast<long long>(a.row_stride), K, M);
    print_matrix("", a_mem.data(), K, M, 1, static_cast<int>(a.row_stride));
    std::printf("  which is A^T. Likewise B's memory is B^T. So we ask for C^T = B^T A^T:\n");
    std::printf("  B goes first, A second, and m, n swap; C^T written column-major is C.\n");
  }
  std::printf(
      "  cublas_gemm_args: first=%s second=%s transa=%s transb=%s m=%lld n=%lld k=%lld"
      " lda=%lld ldb=%lld ldc=%lld\n",
      g.first == Operand::A ? "A" : "B", g.second == Operand::A ? "A" : "B", op_name(g.transa),
      op_name(g.transb), static_cast<long long>(g.m), static_cast<long long>(g.n),
      static_cast<long long>(g.k), static_cast<long long>(g.lda), static_cast<long long>(g.ldb),
      static_cast<long long>(g.ldc));
  std::vector<float> c(M * N, -1.0f);
  gemm_column_major(g, g.first == Operand::A ? a_mem.data() : b_mem.data(),
                    g.second == Operand::A ? a_mem.data() : b_mem.data(), c.data());
  print_memory("column-major GEMM wrote:", c);
  print_matrix("read row-major:", c.data(), M, N, N, 1);
  const bool ok = c == expected;
  std::printf("  %s\n", ok ? "matches C = A B" : "MISMATCH against C = A B");
  return ok;
}

void roofline_model() {
  std::printf("\n== 2. Arithmetic intensity and the roofline (model, datasheet figures)\n");
  std::printf(
      "A GEMM [M,K] @ [K,N] does 2MNK flops and must move at least 4(MK + KN + MN)\n"
      "bytes (FP32). Assumed H200 peaks (datasheet, not measured): FP32 %.0f TFLOP/s,\n"
      "HBM %.1f TB/s, so a kernel needs %.0f flop/byte to be compute-bound (the ridge).\n",
      ch07::kPeakFp32Tflops, ch07::kPeakHbmTBps, ch07::kPeakFp32Tflops / ch07::kPeakHbmTBps);
  std::printf(
      "\nDecode step: B sequences x [B,4096] @ W [4096,4096]. W is read once per step\n"
      "whatever B is, so flops grow with B and bytes hardly do:\n");
  std::printf("  %6s %14s %12s %22s\n", "batch", "flops/byte", "bound", "roofline TFLOP/s (FP32)");
  const double K = 4096, N = 4096;
  for (int batch = 1; batch <= 64; batch *= 2) {
    const double flops = 2.0 * batch * K * N, bytes = 4.0 * (K * N + batch * K + batch * N);
    const double intensity = flops / bytes;
    const double roof = std::min(ch07::kPeakFp32Tflops, intensity * ch07::kPeakHbmTBps);
    std::printf("  %6d %14.2f %12s %22.1f\n", batch, intensity,
                roof < ch07::kPeakFp32Tflops ? "memory" : "compute", roof);
  }
  const double big = 4096;
  std::printf("A square 4096^3 GEMM: %.0f flop/byte, far past the ridge: compute-bound.\n",
              2 * big * big * big / (4 * 3 * big * big));
}

}  // namespace

int main(int argc, char** argv) {
  ch07::Options options;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) {
      options.quick = true;
    } else {
      std::fprintf(stderr, "usage: %s [--quick]\n", argv[0]);
      return 2;
    }
  }
  std::printf("07 · Matrix multiplication on the GPU%s\n", options.quick ? " (quick)" : "");
  int failures = 0;
  try {
    std::printf("\n== 1. A row-major product through a column-major library\n");
    const std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {7, 8, 9, 10, 11, 12};
    failures += !trick("C = A B with A [2,3] and B [3,2], both contiguous:", a, {2, 3, 3, 1}, b,
                       {3, 2, 2, 1}, true);
    // The same memory of A, viewed transposed (as x.Transpose(0, 1) would give): a 3x2
    // matrix with strides (1, 3). Only a transpose flag changes; nothing is copied.
    failures += !trick(
        "C = A B with A a transposed view [3,2] of the same memory "
        "(strides (1, 3)), B [2,3]:",
        a, {3, 2, 1, 3}, b, {2, 3, 3, 1}, false);
    roofline_model();
#ifdef ZERO_CHAPTER_HAS_CUDA
    if (zero::cuda_available()) {
      failures += ch07::run_gpu_part(options);
    } else {
      std::printf("\n[skipped] GPU part: no CUDA device visible (this machine has none)\n");
    }
#else
    std::printf("\n[skipped] GPU part: Zero was built without CUDA\n");
#endif
  } catch (const zero::Error& e) {
    std::printf("error: %s\n", e.what());
    return 1;
  }
  if (failures != 0) {
    std::printf("\nFAILED: %d result(s) did not match their reference\n", failures);
    return 1;
  }
  return 0;
}
