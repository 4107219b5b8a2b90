// CPU pieces of the chunked cross-entropy behind linear_cross_entropy: a count of
// the non-ignored targets, and per chunk of rows the forward (row logsumexp, loss
// summed into the batch mean) and the backward done in place on the recomputed
// logits. The maths is that of cross_entropy_cpu.cpp; only the normalisation
// differs: every chunk divides by the count of the whole batch, not its own.
#include <algorithm>
#include <cmath>
#include <limits>

#include "zero/kernels/cpu/cpu_ops.h"
#include "zero/kernels/cpu/parallel.h"

namespace zero::ops {
namespace {

// Throws for the first target outside [0, V) that is not ignore_index (before any
// parallel region: an exception must not escape an OpenMP loop). `where` follows
// the row number in the message.
void check_targets(const int32_t* targets, int64_t n, int64_t v, int ignore_index,
                   const char* where) {
  for (int64_t i = 0; i < n; ++i) {
    const int32_t t = targets[i];
    ZERO_CHECK(t == ignore_index || (t >= 0 && t < v), "linear_cross_entropy: expected targets ",
               "in [0, ", v, ") (V = ", v, ") or equal to ignore_index ", ignore_index,
               ", got target ", t, " in row ", i, where);
  }
}

double row_logsumexp(const float* x, int64_t v) {
  if (v == 0) return -std::numeric_limits<double>::infinity();
  const float m = *std::max_element(x, x + v);
  double s = 0.0;
  for (int64_t j = 0; j < v; ++j) s += std::exp(static_cast<double>(x[j]) - m);
  return m + std::log(s);
}

}  // namespace

void cross_entropy_count_cpu(const Tensor& targets, int ignore_index, int64_t vocab,
                             const Tensor& count) {
  const int32_t* pt = targets.data_ptr<int32_t>();
  const int64_t n = targets.numel();
  check_targets(pt, n, vocab, ignore_index, "");
  *count.data_ptr<float>() = static_cast<float>(std::count_if(
      pt, pt + n, [ignore_index](int32_t t) { return t != ignore_index; }));
}

void cross_entropy_chunk_forward_cpu(const Tensor& logits, const Tensor& targets, int ignore_index,
                                     const Tensor& count, const Tensor& lse, const Tensor& loss) {
  const int64_t n = logits.size(0), v = logits.size(1);
  const float* px = logits.data_ptr<float>();
  const int32_t* pt = targets.data_ptr<int32_t>();
  float* plse = lse.data_ptr<float>();
  check_targets(pt, n, v, ignore_index, " of a chunk");
  double total = 0.0;
#pragma omp parallel for reduction(+ : total) if (n * v > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) {
    const float* row = px + i * v;
    const double row_lse = row_logsumexp(row, v);
    plse[i] = static_cast<float>(row_lse);
    if (pt[i] != ignore_index) total += row_lse - row[pt[i]];
  }
  // Every row of the batch ignored: the loss is 0 (not 0/0), as in cross_entropy.
  const float c = *count.data_ptr<float>();
  if (c > 0.0f) *loss.data_ptr<float>() += static_cast<float>(total / c);
}

void cross_entropy_chunk_backward_cpu(const Tensor& logits, const Tensor& targets,
                                      const Tensor& lse, const Tensor& grad_loss,
                                      const Tensor& count, int ignore_index) {
  const int64_t n = logits.size(0), v = logits.size(1);
  float* px = logits.data_ptr<float>();
  const int32_t* pt = targets.data_ptr<int32_t>();
  const float* plse = lse.data_ptr<float>();
  check_targets(pt, n, v, ignore_index, " of a chunk");
  const float c = *count.data_ptr<float>();
  const float scale = c > 0.0f ? *grad_loss.data_ptr<float>() / c : 0.0f;
#pragma omp parallel for if (n * v > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) {
    float* row = px + i * v;  // logits in, their gradient out
    const int32_t t = pt[i];
    if (t == ignore_index) {
      std::fill(row, row + v, 0.0f);
      continue;
    }
    for (int64_t j = 0; j < v; ++j) row[j] = scale * std::exp(row[j] - plse[i]);
    row[t] -= scale;
  }
}

}  // namespace zero::ops
