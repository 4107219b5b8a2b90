// The timed choice of a cuBLASLt algorithm for each GEMM shape (Note [Choosing a GEMM
// algorithm] in blas_lt.cu): the choices remembered, the timing of the candidates, and
// choices handed in from another process (Note [GEMM choices handed in]). For
// blas_lt.cu alone.
#pragma once

#include <cublasLt.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <tuple>

#include "zero/kernels/cuda/cuda_common.cuh"

namespace zero::ops::cuda {

constexpr int kCandidates = 16;
constexpr int kTimedRuns = 3;

// trans_a, trans_b, m, n, k, epilogue, compute type, A and B's type, D's type, the
// bias's type, and whether a C operand (or D itself) is added (beta = 1).
using GemmShape = std::tuple<bool, bool, int64_t, int64_t, int64_t, int, int, int, int, int, bool>;

struct AlgoKey {
  int device;
  GemmShape shape;
  bool operator<(const AlgoKey& o) const {
    return std::tie(device, shape) < std::tie(o.device, o.shape);
  }
};

// Note [GEMM choices handed in]
// A profiler attached to the process (Nsight Compute, even while it records nothing)
// delays every launch in its own way, so candidates timed under it can rank otherwise
// than in a plain run, and the profile then shows GEMMs a plain step never runs
// (docs/speed_notes.md, item 68). So a choice can be handed in. ZERO_GEMM_TUNE_LOG=1
// prints each candidate's time a run and then the choice, as
//   gemm choice TA TB M N K EPILOGUE COMPUTE AB D BIAS C = INDEX
// (the shape's fields, INDEX the heuristic's rank of the fastest); a process started
// with ZERO_GEMM_CHOICES set to such lines' text after "choice", separated by ';', takes
// candidate INDEX for each shape named and times the others. The heuristic ranks the
// same candidates for the same shape, GPU and cuBLAS, so the kernels are those of the
// plain run. tools/profile_step.py hands its profiled run the choices of a plain one.
inline void print_shape(const GemmShape& s) {
  const auto& [ta, tb, m, n, k, epilogue, compute, ab, d, bias, c] = s;
  std::fprintf(stderr, "%d %d %lld %lld %lld %d %d %d %d %d %d", ta, tb,
               static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k),
               epilogue, compute, ab, d, bias, c);
}

// ZERO_GEMM_CHOICES, read once. An item that does not parse stops the process with its
// text: a profile made with other choices than asked is what this exists to prevent.
inline const std::map<GemmShape, int>& handed_in_choices() {
  static const std::map<GemmShape, int> choices = [] {
    std::map<GemmShape, int> out;
    const char* p = std::getenv("ZERO_GEMM_CHOICES");
    while (p != nullptr && *p != '\0') {
      int ta, tb, epilogue, compute, ab, d, bias, c, index, used = 0;
      long long m, n, k;
      if (std::sscanf(p, " %d %d %lld %lld %lld %d %d %d %d %d %d = %d %n", &ta, &tb, &m, &n,
                      &k, &epilogue, &compute, &ab, &d, &bias, &c, &index, &used) != 12 ||
          used == 0 || index < 0 || (p[used] != ';' && p[used] != '\0')) {
        std::fprintf(stderr, "ZERO_GEMM_CHOICES: cannot read '%s'\n", p);
        std::exit(2);
      }
      out[GemmShape{ta != 0, tb != 0, m, n, k, epilogue, compute, ab, d, bias, c != 0}] = index;
      p += used + (p[used] == ';' ? 1 : 0);
    }
    return out;
  }();
  return choices;
}

inline std::mutex& tuned_mutex() {
  static std::mutex mutex;
  return mutex;
}
inline std::map<AlgoKey, cublasLtMatmulAlgo_t>& tuned() {
  static std::map<AlgoKey, cublasLtMatmulAlgo_t> algos;
  return algos;
}

// The remembered algorithm of `key`, or null on its first call.
inline const cublasLtMatmulAlgo_t* tuned_algo(const AlgoKey& key) {
  std::lock_guard<std::mutex> lock(tuned_mutex());
  auto it = tuned().find(key);
  return it == tuned().end() ? nullptr : &it->second;
}

// Times each of the `count` candidates with `run` (a warm-up call, then kTimedRuns timed
// calls) and remembers the fastest that succeeds, or takes the candidate handed in for
// the shape; null if none succeeds. With ZERO_GEMM_TUNE_LOG set, prints each candidate's
// time a run in the heuristic's order (the order of its kernels in a profile of the
// first step, which names them) and the choice.
template <typename Run>
const cublasLtMatmulAlgo_t* remember_fastest(const AlgoKey& key,
                                             const cublasLtMatmulHeuristicResult_t* candidates,
                                             int count, const Run& run) {
  static const bool log = std::getenv("ZERO_GEMM_TUNE_LOG") != nullptr;
  int best = -1;
  const auto handed = handed_in_choices().find(key.shape);
  if (handed != handed_in_choices().end() && handed->second < count &&
      run(candidates[handed->second].algo) == CUBLAS_STATUS_SUCCESS) {
    best = handed->second;
  } else {
    cudaEvent_t start, stop;
    ZERO_CUDA_CHECK(cudaEventCreate(&start));
    ZERO_CUDA_CHECK(cudaEventCreate(&stop));
    float best_ms = 0.0f;
    for (int i = 0; i < count; ++i) {
      if (run(candidates[i].algo) != CUBLAS_STATUS_SUCCESS) continue;
      ZERO_CUDA_CHECK(cudaEventRecord(start, current_stream()));
      for (int r = 0; r < kTimedRuns; ++r) (void)run(candidates[i].algo);  // it ran above
      ZERO_CUDA_CHECK(cudaEventRecord(stop, current_stream()));
      ZERO_CUDA_CHECK(cudaEventSynchronize(stop));
      float ms = 0.0f;
      ZERO_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
      if (best < 0 || ms < best_ms) best = i, best_ms = ms;
      if (log) {
        std::fprintf(stderr, "gemm ");
        print_shape(key.shape);
        std::fprintf(stderr, ": candidate %d %.1f us\n", i, 1000.0f * ms / kTimedRuns);
      }
    }
    ZERO_CUDA_CHECK(cudaEventDestroy(start));
    ZERO_CUDA_CHECK(cudaEventDestroy(stop));
  }
  if (best < 0) return nullptr;
  if (log) {
    std::fprintf(stderr, "gemm choice ");
    print_shape(key.shape);
    std::fprintf(stderr, " = %d\n", best);
  }
  std::lock_guard<std::mutex> lock(tuned_mutex());
  return &(tuned()[key] = candidates[best].algo);  // std::map nodes never move
}

}  // namespace zero::ops::cuda
