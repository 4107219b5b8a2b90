// CPU embedding: the forward gathers rows of the [V, C] table, the backward
// scatter-adds gradient rows back into the rows their ids name. Ids may have any
// shape and strides; they are read (and checked against [0, V)) once, serially,
// before any thread writes, so a bad id throws cleanly and leaves outputs untouched.
// Both are templated on the element type (f32, bf16, f16); the backward sums in double
// whatever it is, and rounds once into grad_weight's dtype.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "zero/kernels/cpu/parallel.h"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/dtype_dispatch.h"
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

template <typename T>
void gather_rows(const Tensor& weight, const std::vector<int32_t>& rows, const Tensor& out) {
  const int64_t c = weight.size(1), n = static_cast<int64_t>(rows.size());
  const T* pw = weight.data_ptr<T>();
  T* po = out.data_ptr<T>();
#pragma omp parallel for if (n * c > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(po + i * c, pw + static_cast<int64_t>(rows[i]) * c, c * sizeof(T));
  }
}

void embedding_forward_cpu(const Tensor& weight, const Tensor& ids, const Tensor& out) {
  const std::vector<int32_t> rows = read_ids(ids, weight.size(0));
  dispatch_dtype<FloatTypes>(weight.dtype(), "embedding", [&](auto tag) {
    gather_rows<typename decltype(tag)::type>(weight, rows, out);
  });
}

// Many positions may name the same row, so a parallel loop over positions would race
// on it. Instead the positions are grouped by id with a counting sort (stable, so each
// group is in position order), and each vocabulary row sums its own group, in double:
// no two threads write one row, and the order of additions never changes.
//
// sum_groups adds the rows of grad_out (T) that `order` groups by id into grad_weight (G):
// each row's sum rounded to float, then stored, or with `accumulate` added to the row
// already there (the bits of a separate sum of the two gradients).
template <typename T, typename G>
void sum_groups(const Tensor& grad_out, const std::vector<int64_t>& start,
                const std::vector<int64_t>& order, const Tensor& grad_weight, bool accumulate) {
  const int64_t vocab = grad_weight.size(0), c = grad_weight.size(1);
  const int64_t n = static_cast<int64_t>(order.size());
  const T* pg = grad_out.data_ptr<T>();
  G* pgw = grad_weight.data_ptr<G>();
#pragma omp parallel if (vocab * c + n * c > kParallelGrain)
  {
    std::vector<double> acc(c);
#pragma omp for
    for (int64_t v = 0; v < vocab; ++v) {
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t k = start[v]; k < start[v + 1]; ++k) {
        const T* gr = pg + order[k] * c;
        for (int64_t j = 0; j < c; ++j) acc[j] += static_cast<float>(gr[j]);
      }
      G* out = pgw + v * c;
      for (int64_t j = 0; j < c; ++j) {
        const float sum = static_cast<float>(acc[j]);
        out[j] = static_cast<G>(accumulate ? static_cast<float>(out[j]) + sum : sum);
      }
    }
  }
}

void embedding_backward_cpu(const Tensor& grad_out, const Tensor& ids, const Tensor& grad_weight,
                            bool accumulate) {
  const int64_t vocab = grad_weight.size(0);
  const std::vector<int32_t> rows = read_ids(ids, vocab);
  const int64_t n = static_cast<int64_t>(rows.size());

  // Positions naming row v are order[start[v] .. start[v + 1]).
  std::vector<int64_t> start(vocab + 1, 0);
  for (int32_t v : rows) ++start[v + 1];
  for (int64_t v = 0; v < vocab; ++v) start[v + 1] += start[v];
  std::vector<int64_t> order(n), next(start.begin(), start.end() - 1);
  for (int64_t i = 0; i < n; ++i) order[next[rows[i]]++] = i;

  dispatch_dtype<FloatTypes>(grad_out.dtype(), "embedding backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (grad_weight.dtype() == DataType::F32) {
      sum_groups<T, float>(grad_out, start, order, grad_weight, accumulate);
    } else {
      sum_groups<T, T>(grad_out, start, order, grad_weight, accumulate);
    }
  });
}

}  // namespace

ZERO_REGISTER_KERNEL(embedding_forward, kCpu, embedding_forward_cpu);
ZERO_REGISTER_KERNEL(embedding_backward, kCpu, embedding_backward_cpu);

}  // namespace zero::ops
