// CPU embedding: the forward gathers rows of the [V, C] table, the backward
// scatter-adds gradient rows back into the rows their ids name. Ids may have any
// shape and strides; they are read (and checked against [0, V)) once, serially,
// before any thread writes, so a bad id throws cleanly and leaves outputs untouched.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "zero/kernels/cpu/parallel.h"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {
namespace {

// "[1, 2]": the multi-index of row-major position `linear` in `sizes`.
std::string index_to_string(int64_t linear, const Shape& sizes) {
  Shape index(sizes.size());
  for (int d = static_cast<int>(sizes.size()) - 1; d >= 0; --d) {
    index[d] = linear % sizes[d];
    linear /= sizes[d];
  }
  return shape_to_string(index);
}

// The ids in row-major order; throws naming the first id outside [0, vocab).
std::vector<int32_t> read_ids(const Tensor& ids, int64_t vocab) {
  const int64_t n = ids.numel();
  const int32_t* p = ids.data_ptr<int32_t>();
  const DimsArg d = DimsArg::Of(ids.meta());
  std::vector<int32_t> out(n);
  for (int64_t i = 0; i < n; ++i) {
    const int32_t id = p[d.Offset(i)];
    ZERO_CHECK(id >= 0 && id < vocab, "embedding: expected every id in [0, V) with V = ", vocab,
               " (the vocabulary size), got id ", id, " at position ",
               index_to_string(i, ids.sizes()), " of ids ", shape_to_string(ids.sizes()));
    out[i] = id;
  }
  return out;
}

void embedding_forward_cpu(const Tensor& weight, const Tensor& ids, const Tensor& out) {
  const int64_t vocab = weight.size(0), c = weight.size(1);
  const std::vector<int32_t> rows = read_ids(ids, vocab);
  const int64_t n = static_cast<int64_t>(rows.size());
  const float* pw = weight.data_ptr<float>();
  float* po = out.data_ptr<float>();
#pragma omp parallel for if (n * c > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(po + i * c, pw + static_cast<int64_t>(rows[i]) * c, c * sizeof(float));
  }
}

// Many positions may name the same row, so a parallel loop over positions would race
// on it. Instead the positions are grouped by id with a counting sort (stable, so each
// group is in position order), and each vocabulary row sums its own group, in double:
// no two threads write one row, and the order of additions never changes.
void embedding_backward_cpu(const Tensor& grad_out, const Tensor& ids, const Tensor& grad_weight) {
  const int64_t vocab = grad_weight.size(0), c = grad_weight.size(1);
  const std::vector<int32_t> rows = read_ids(ids, vocab);
  const int64_t n = static_cast<int64_t>(rows.size());

  // Positions naming row v are order[start[v] .. start[v + 1]).
  std::vector<int64_t> start(vocab + 1, 0);
  for (int32_t v : rows) ++start[v + 1];
  for (int64_t v = 0; v < vocab; ++v) start[v + 1] += start[v];
  std::vector<int64_t> order(n), next(start.begin(), start.end() - 1);
  for (int64_t i = 0; i < n; ++i) order[next[rows[i]]++] = i;

  const float* pg = grad_out.data_ptr<float>();
  float* pgw = grad_weight.data_ptr<float>();
#pragma omp parallel if (vocab * c + n * c > kParallelGrain)
  {
    std::vector<double> acc(c);
#pragma omp for
    for (int64_t v = 0; v < vocab; ++v) {
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t k = start[v]; k < start[v + 1]; ++k) {
        const float* gr = pg + order[k] * c;
        for (int64_t j = 0; j < c; ++j) acc[j] += gr[j];
      }
      float* out = pgw + v * c;
      for (int64_t j = 0; j < c; ++j) out[j] = static_cast<float>(acc[j]);
    }
  }
}

}  // namespace

ZERO_REGISTER_KERNEL(embedding_forward, kCpu, embedding_forward_cpu);
ZERO_REGISTER_KERNEL(embedding_backward, kCpu, embedding_backward_cpu);

}  // namespace zero::ops
