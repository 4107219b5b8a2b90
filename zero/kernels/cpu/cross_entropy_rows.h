// The row loops shared by the two CPU cross-entropies (cross_entropy_cpu.cpp over a
// whole batch, linear_ce_cpu.cpp over one chunk of rows): checking targets, the
// forward (row logsumexp and summed loss) and the backward (softmax - onehot). They
// differ only in the count they divide by. Private to kernels/cpu/.
//
// The row loops are templated on the logits' element type T (f32, bf16, f16): logits
// are loaded into float, the logsumexp and the loss are computed in double and stored
// in FP32, and each gradient element is rounded once into T.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "zero/core/error.h"
#include "zero/kernels/cpu/parallel.h"

namespace zero::ops::cpu_ce {

// Throws for the first target outside [0, V) that is not ignore_index (before any
// parallel region: an exception must not escape an OpenMP loop); `where` follows the
// row number in the message. Returns how many rows are not ignored.
inline int64_t check_targets(const char* op, const int32_t* targets, int64_t n, int64_t v,
                             int ignore_index, const char* where = "") {
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int32_t t = targets[i];
    if (t == ignore_index) continue;
    ZERO_CHECK(t >= 0 && t < v, op, ": expected targets in [0, ", v, ") (V = ", v,
               ") or equal to ignore_index ", ignore_index, ", got target ", t, " in row ", i,
               where);
    ++count;
  }
  return count;
}

// logsumexp of a row, stably (see Note [Stable softmax] in softmax_cpu.cpp); -inf for
// an empty row.
template <typename T>
inline double row_logsumexp(const T* x, int64_t v) {
  if (v == 0) return -std::numeric_limits<double>::infinity();
  float m = static_cast<float>(x[0]);
  for (int64_t j = 1; j < v; ++j) m = std::max(m, static_cast<float>(x[j]));
  double s = 0.0;
  for (int64_t j = 0; j < v; ++j) {
    s += std::exp(static_cast<double>(static_cast<float>(x[j])) - m);
  }
  return m + std::log(s);
}

// Writes lse[i] for every row and returns the summed loss lse_i - logits[i, t] of the
// rows that are not ignored. Targets must have been checked. Rows are `ld` values apart
// (v when 0).
template <typename T>
inline double forward_rows(const T* logits, const int32_t* targets, int64_t n, int64_t v,
                           int ignore_index, float* lse, int64_t ld = 0) {
  if (ld == 0) ld = v;
  double total = 0.0;
#pragma omp parallel for reduction(+ : total) if (n * v > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) {
    const T* row = logits + i * ld;
    const double row_lse = row_logsumexp(row, v);
    lse[i] = static_cast<float>(row_lse);
    if (targets[i] != ignore_index) total += row_lse - static_cast<float>(row[targets[i]]);
  }
  return total;
}

// grad[i] = scale * (softmax(logits[i]) - onehot(t_i)), zero for ignored rows. `grad`
// may be `logits` itself (the chunked loss turns logits into their gradient in place):
// each element is read before it is written. Rows of both are `ld` values apart (v when 0).
template <typename T>
inline void backward_rows(const T* logits, const int32_t* targets, const float* lse, int64_t n,
                          int64_t v, int ignore_index, float scale, T* grad, int64_t ld = 0) {
  if (ld == 0) ld = v;
#pragma omp parallel for if (n * v > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) {
    T* g = grad + i * ld;
    const int32_t t = targets[i];
    if (t == ignore_index) {
      std::fill(g, g + v, static_cast<T>(0.0f));
      continue;
    }
    const T* row = logits + i * ld;
    const float xt = static_cast<float>(row[t]);
    for (int64_t j = 0; j < v; ++j) {
      g[j] = static_cast<T>(scale * std::exp(static_cast<float>(row[j]) - lse[i]));
    }
    if constexpr (std::is_same_v<T, float>) {
      g[t] -= scale;
    } else {  // from the float, not the rounded value: one rounding of p - 1, not two
      g[t] = static_cast<T>(scale * std::exp(xt - lse[i]) - scale);
    }
  }
}

}  // namespace zero::ops::cpu_ce
