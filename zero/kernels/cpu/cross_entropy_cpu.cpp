// CPU cross-entropy fused with log-softmax, over contiguous logits [N, V].
//
// Row i's loss is -log_softmax(logits[i])[t] = lse_i - logits[i, t], where
// lse_i = logsumexp(logits[i]) is computed stably (see Note [Stable softmax] in
// softmax_cpu.cpp) and saved, so the backward needs only exp(logits - lse) for the
// softmax: d loss / d logits[i] = (softmax(logits[i]) - onehot(t)) / count.
// Rows whose target is ignore_index contribute nothing and count for nothing.
#include <algorithm>
#include <cmath>
#include <limits>

#include "zero/kernels/cpu/cpu_ops.h"
#include "zero/kernels/cpu/parallel.h"

namespace zero::ops {
namespace {

// Throws for the first target outside [0, V) that is not ignore_index (before any
// parallel region: an exception must not escape an OpenMP loop). Returns how many
// rows are not ignored.
int64_t check_targets(const int32_t* targets, int64_t n, int64_t v, int ignore_index) {
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int32_t t = targets[i];
    if (t == ignore_index) continue;
    ZERO_CHECK(t >= 0 && t < v, "cross_entropy: expected targets in [0, ", v, ") (V = ", v,
               ") or equal to ignore_index ", ignore_index, ", got target ", t, " in row ", i);
    ++count;
  }
  return count;
}

double row_logsumexp(const float* x, int64_t v) {
  const float m = *std::max_element(x, x + v);
  double s = 0.0;
  for (int64_t j = 0; j < v; ++j) s += std::exp(static_cast<double>(x[j]) - m);
  return m + std::log(s);
}

}  // namespace

void cross_entropy_forward_cpu(const Tensor& logits, const Tensor& targets, int ignore_index,
                               const Tensor& loss, const Tensor& lse) {
  const int64_t n = logits.size(0), v = logits.size(1);
  const float* px = logits.data_ptr<float>();
  const int32_t* pt = targets.data_ptr<int32_t>();
  float* plse = lse.data_ptr<float>();
  const int64_t count = check_targets(pt, n, v, ignore_index);
  double total = 0.0;
  if (v > 0) {
#pragma omp parallel for reduction(+ : total) if (n * v > kParallelGrain)
    for (int64_t i = 0; i < n; ++i) {
      const float* row = px + i * v;
      const double row_lse = row_logsumexp(row, v);
      plse[i] = static_cast<float>(row_lse);
      if (pt[i] != ignore_index) total += row_lse - row[pt[i]];
    }
  } else {
    // logsumexp of an empty row (every row must be ignored here, or check_targets threw).
    std::fill(plse, plse + n, -std::numeric_limits<float>::infinity());
  }
  // Every row ignored: define the loss as 0 (not 0/0), so a batch of padding is harmless.
  *loss.data_ptr<float>() = count > 0 ? static_cast<float>(total / count) : 0.0f;
}

void cross_entropy_backward_cpu(const Tensor& logits, const Tensor& targets, const Tensor& lse,
                                const Tensor& grad_loss, int ignore_index,
                                const Tensor& grad_logits) {
  const int64_t n = logits.size(0), v = logits.size(1);
  const float* px = logits.data_ptr<float>();
  const int32_t* pt = targets.data_ptr<int32_t>();
  const float* plse = lse.data_ptr<float>();
  float* pg = grad_logits.data_ptr<float>();
  const int64_t count = check_targets(pt, n, v, ignore_index);
  const float scale = count > 0 ? *grad_loss.data_ptr<float>() / static_cast<float>(count) : 0.0f;
#pragma omp parallel for if (n * v > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) {
    float* g = pg + i * v;
    const int32_t t = pt[i];
    if (t == ignore_index) {
      std::fill(g, g + v, 0.0f);
      continue;
    }
    const float* row = px + i * v;
    for (int64_t j = 0; j < v; ++j) g[j] = scale * std::exp(row[j] - plse[i]);
    g[t] -= scale;
  }
}

}  // namespace zero::ops
