// The row loops shared by the two CPU cross-entropies (cross_entropy_cpu.cpp over a
// whole batch, linear_ce_cpu.cpp over one chunk of rows): checking targets, the
// forward (row logsumexp and summed loss) and the backward (softmax - onehot). They
// differ only in the count they divide by. Private to kernels/cpu/.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

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
inline double row_logsumexp(const float* x, int64_t v) {
  if (v == 0) return -std::numeric_limits<double>::infinity();
  const float m = *std::max_element(x, x + v);
  double s = 0.0;
  for (int64_t j = 0; j < v; ++j) s += std::exp(static_cast<double>(x[j]) - m);
  return m + std::log(s);
}

// Writes lse[i] for every row and returns the summed loss lse_i - logits[i, t] of the
// rows that are not ignored. Targets must have been checked.
inline double forward_rows(const float* logits, const int32_t* targets, int64_t n, int64_t v,
                           int ignore_index, float* lse) {
  double total = 0.0;
#pragma omp parallel for reduction(+ : total) if (n * v > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) {
    const float* row = logits + i * v;
    const double row_lse = row_logsumexp(row, v);
    lse[i] = static_cast<float>(row_lse);
    if (targets[i] != ignore_index) total += row_lse - row[targets[i]];
  }
  return total;
}

// grad[i] = scale * (softmax(logits[i]) - onehot(t_i)), zero for ignored rows. `grad`
// may be `logits` itself (the chunked loss turns logits into their gradient in place):
// each element is read before it is written.
inline void backward_rows(const float* logits, const int32_t* targets, const float* lse,
                          int64_t n, int64_t v, int ignore_index, float scale, float* grad) {
#pragma omp parallel for if (n * v > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) {
    float* g = grad + i * v;
    const int32_t t = targets[i];
    if (t == ignore_index) {
      std::fill(g, g + v, 0.0f);
      continue;
    }
    const float* row = logits + i * v;
    for (int64_t j = 0; j < v; ++j) g[j] = scale * std::exp(row[j] - lse[i]);
    g[t] -= scale;
  }
}

}  // namespace zero::ops::cpu_ce
