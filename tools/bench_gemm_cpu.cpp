// bench_gemm_cpu: how fast is Zero's CPU SGEMM (zero/kernels/cpu/gemm_cpu.cpp)?
//
// For square sizes (default 256, 512, 1024; or the sizes given as arguments) it
// prints GFLOP/s of the naive triple loop, of gemm_cpu on one thread and on all
// OpenMP threads, and of single-threaded OpenBLAS when it was found at configure
// time, with the ratio of Zero's one-thread speed to OpenBLAS's. Each result is
// validated against the double-precision naive loop before anything is timed; a
// mismatch exits with status 1. Times are medians of several runs.
//   OMP_NUM_THREADS=2 ./build/tools/bench_gemm_cpu [sizes...]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <vector>

#include "zero/kernels/cpu/gemm_cpu.h"

#if defined(ZERO_HAVE_OPENBLAS)
#include <cblas.h>
#endif

namespace {

using zero::ops::gemm_cpu;
using zero::ops::gemm_naive;

constexpr double kNaiveBudgetSeconds = 5.0;  // skip the naive loop above this estimate
constexpr int kRuns = 5;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Median wall time of at least `runs` calls of f (more for fast calls, so a
// measurement spans about 0.2 s), after warming up for 0.1 s: the first calls pay
// for page faults, cold caches and the core's switch to wide-vector clocks. Slow
// calls (the naive loop) skip the warm-up, which they do not need.
double median_seconds(const std::function<void()>& f, int runs, bool warm_up = true) {
  if (warm_up) {
    const auto warm_start = std::chrono::steady_clock::now();
    int warm_calls = 0;
    do {
      f();
      ++warm_calls;
    } while (seconds_since(warm_start) < 0.1);
    const double per_call = seconds_since(warm_start) / warm_calls;
    runs = std::max(runs, std::min(100, static_cast<int>(0.2 / per_call)));
  }
  std::vector<double> times;
  for (int r = 0; r < runs; ++r) {
    const auto start = std::chrono::steady_clock::now();
    f();
    times.push_back(seconds_since(start));
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

double gflops(int64_t n, double seconds) { return 2.0 * n * n * n / seconds * 1e-9; }

// Compares `c` with the naive double-precision product on 32 rows spread over the
// matrix (all of them would take longer than the benchmark at 1024). Returns true
// when every compared element is within a tolerance that grows with K.
bool validate(const char* name, int64_t n, const std::vector<float>& a,
              const std::vector<float>& b, const std::vector<float>& c) {
  const double tol = 1e-5 + 2e-6 * n;  // inputs in [-1, 1]: rounding grows about linearly in K
  std::vector<float> ref(n);
  const int64_t step = std::max<int64_t>(1, n / 32);
  for (int64_t i = 0; i < n; i += step) {
    gemm_naive(false, false, 1, n, n, 1.0f, &a[i * n], n, b.data(), n, 0.0f, ref.data(), n);
    for (int64_t j = 0; j < n; ++j) {
      if (std::fabs(c[i * n + j] - ref[j]) > tol) {
        std::printf("MISMATCH in %s at n=%lld: C[%lld][%lld] = %.6f, reference %.6f\n", name,
                    static_cast<long long>(n), static_cast<long long>(i),
                    static_cast<long long>(j), c[i * n + j], ref[j]);
        return false;
      }
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int64_t> sizes = {256, 512, 1024};
  if (argc > 1) {
    sizes.clear();
    for (int i = 1; i < argc; ++i) sizes.push_back(std::atoll(argv[i]));
  }
  const int all_threads = omp_get_max_threads();
  std::printf("CPU SGEMM, C = A @ B, square float32 matrices, GFLOP/s (median of >= %d runs)\n",
              kRuns);
#if defined(ZERO_HAVE_OPENBLAS)
  openblas_set_num_threads(1);
  // OpenBLAS picks its kernel for the CPU at start-up; an older release may not know
  // a new CPU and fall back to a slow generic one (0.3.21 picks "Prescott", SSE3
  // only, on Sapphire Rapids). OPENBLAS_CORETYPE=SkylakeX (or Haswell) overrides it.
  std::printf("Reference:%skernel %s, single-threaded (override with OPENBLAS_CORETYPE)\n",
              OPENBLAS_VERSION, openblas_get_corename());
#else
  std::printf("OpenBLAS was not found when configuring; its columns are empty\n");
#endif
  // The last column is Zero's one-thread speed over OpenBLAS's (1.00x: as fast).
  std::printf("\n%6s %10s %12s %12s %15s %16s\n", "n", "naive", "zero 1 thr", "zero all",
              "openblas 1 thr", "zero/openblas");

  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  bool skipped_naive = false;
  bool ok = true;
  for (const int64_t n : sizes) {
    std::vector<float> a(n * n), b(n * n), c(n * n);
    for (float& x : a) x = dist(rng);
    for (float& x : b) x = dist(rng);
    auto run_zero = [&] {
      gemm_cpu(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    };

    // Validate first: a fast wrong answer is worth nothing.
    omp_set_num_threads(all_threads);
    run_zero();
    ok = validate("zero gemm_cpu", n, a, b, c) && ok;
#if defined(ZERO_HAVE_OPENBLAS)
    auto run_openblas = [&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n,
                  b.data(), n, 0.0f, c.data(), n);
    };
    run_openblas();
    ok = validate("openblas", n, a, b, c) && ok;
#endif
    if (!ok) break;

    // The naive loop walks B down its columns, so its speed falls off a cliff once B
    // outgrows the caches; time a few of its rows to estimate a whole run honestly.
    char naive_text[32] = "skipped";
    const int64_t probe_rows = std::min<int64_t>(n, 8);
    const double estimate = median_seconds([&] {
      gemm_naive(false, false, probe_rows, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    }, 1, false) * n / probe_rows;
    if (estimate <= kNaiveBudgetSeconds) {
      const double t = median_seconds([&] {
        gemm_naive(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
      }, estimate > 1.0 ? 1 : 3, estimate < 0.5);
      std::snprintf(naive_text, sizeof naive_text, "%.2f", gflops(n, t));
    } else {
      skipped_naive = true;
    }
    omp_set_num_threads(1);
    const double zero_1 = gflops(n, median_seconds(run_zero, kRuns));
    omp_set_num_threads(all_threads);
    const double zero_all = gflops(n, median_seconds(run_zero, kRuns));
    std::printf("%6lld %10s %12.2f %12.2f", static_cast<long long>(n), naive_text, zero_1,
                zero_all);
#if defined(ZERO_HAVE_OPENBLAS)
    const double blas_1 = gflops(n, median_seconds(run_openblas, kRuns));
    std::printf(" %15.2f %15.2fx\n", blas_1, zero_1 / blas_1);
#else
    std::printf(" %15s %16s\n", "-", "-");
#endif
    std::fflush(stdout);
  }
  std::printf("\n'zero all' uses %d OpenMP thread(s) (set OMP_NUM_THREADS to change it).\n",
              all_threads);
  if (skipped_naive) {
    std::printf("'skipped': the naive loop would take over %.0f s per run at that size.\n",
                kNaiveBudgetSeconds);
  }
  if (!ok) {
    std::printf("FAILED: a result did not match the naive reference\n");
    return 1;
  }
  return 0;
}
