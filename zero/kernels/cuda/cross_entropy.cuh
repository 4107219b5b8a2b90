// The row steps shared by the cross-entropy kernels (cross_entropy.cu, linear_ce.cu):
// one block computes logsumexp of a row of logits and that row's loss, or the row's
// gradient. Private.
#pragma once

#include <cstdint>

#include "zero/kernels/cuda/block_reduce.cuh"
#include "zero/kernels/cuda/cuda_common.cuh"

namespace zero::ops::cuda {

// Whether a row of V elements T at `row` can be read in 16-byte groups (Pack<T>).
template <typename T>
__device__ inline bool packed_row(const T* row, int64_t V) {
  return V % kPack<T> == 0 && reinterpret_cast<uintptr_t>(row) % 16 == 0;
}

// Block-wide: lse = logsumexp(row); loss = lse - row[t], 0 when t == ignore_index,
// NaN when t is outside [0, V) (see Note [Bad indices on the GPU]). Thread 0 writes both.
//
// One read of the row: each thread keeps the largest value m it has seen and the sum s
// of exp(x - m) so far, rescaling s when m grows (the online softmax of flash
// attention). A GPT-2 row is 50304 floats, too long to stay in cache between a pass for
// the maximum and a pass for the sum, so this halves the kernel's memory traffic. The
// row is read 16 bytes a thread at a time where it can be: 2-byte loads of a BF16 row
// would move a warp's 64 bytes per instruction, half a cache line. Each thread loads
// kRowUnroll such packs before it uses any, and folds them into (m, s) as one group: one
// rescale a group instead of a branch a value, and four loads in flight instead of one
// (a GPT-2 BF16 row went from 60 to 42 ns; docs/speed_notes.md, item 42).
// The row may be f32, bf16 or f16: every value is loaded into float, and m, s, lse and
// the loss are FP32. A NaN in the row makes the sum, so lse and the loss, NaN.
constexpr int kRowUnroll = 4;

// Note [Exponentials without subnormal results]
// __expf(z) is ex2.approx.f32 of z log2(e). Without flushing, the GPU cannot make a
// subnormal result in that instruction, so the compiler wraps it in a test and two
// multiplications that scale tiny results: about five instructions an exponential
// where the .ftz form takes two. exp_approx<true> is that form, with the same
// multiplication, so its result has __expf's bits wherever it is at least 2^-126 and
// is 0 below: probabilities under 1e-38, which add nothing to a sum of at least 1. The
// head's one-pass kernel (linear_ce.cu) takes two exponentials a value and moved 1.8
// TB/s of an H100's 3.35; with this, a lighter one-hot test and the GPU's own
// conversions (core/half.h) its chunk went from 223 to 188 us (docs/speed_notes.md,
// item 68).
template <bool kFlushTiny = false>
__device__ inline float exp_approx(float z) {
  if constexpr (kFlushTiny) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(z * 1.44269504f));
    return y;
  } else {
    return __expf(z);
  }
}

// Folds `count` values x into the running (m, s). While every value so far is -inf
// (m = -inf), the exponentials are taken against 0 and add nothing.
template <bool kFlushTiny = false>
__device__ inline void fold_group(const float* x, int count, float& m, float& s) {
  float group_max = -INFINITY;
  for (int k = 0; k < count; ++k) group_max = fmaxf(group_max, x[k]);
  const float m_new = fmaxf(m, group_max);
  const float base = m_new == -INFINITY ? 0.0f : m_new;
  float add = 0.0f;
  for (int k = 0; k < count; ++k) add += exp_approx<kFlushTiny>(x[k] - base);
  s = s * exp_approx<kFlushTiny>(m - base) + add;
  m = m_new;
}

// Block-wide: the logsumexp of a row from each thread's running (m, s), for every
// thread. `scratch` holds 2 x 32 floats.
__device__ inline float row_logsumexp(float m, float s, float (*scratch)[32]) {
  const float row_max = block_max(m, scratch[0]);
  s = m > -INFINITY ? s * __expf(m - row_max) : s;  // s is 0 here unless it is NaN
  s = block_sum(s, scratch[1]);
  return row_max + __logf(s);
}

template <typename T>
__device__ inline void cross_entropy_row(const T* row, int32_t t, int ignore_index, int64_t V,
                                         float* lse, float* loss) {
  __shared__ float scratch[2][32];
  float m = -INFINITY, s = 0.0f;
  constexpr int N = kPack<T>;
  const int64_t step = static_cast<int64_t>(blockDim.x);
  if (packed_row(row, V)) {
    const Pack<T>* packs = reinterpret_cast<const Pack<T>*>(row);
    const int64_t count = V / N;
    for (int64_t i = threadIdx.x; i < count; i += kRowUnroll * step) {
      float x[kRowUnroll * N];
#pragma unroll
      for (int u = 0; u < kRowUnroll; ++u) {
        Pack<T> p;
        const bool in = i + u * step < count;
        if (in) p = packs[i + u * step];
#pragma unroll
        for (int e = 0; e < N; ++e) x[u * N + e] = in ? static_cast<float>(p.v[e]) : -INFINITY;
      }
      fold_group(x, kRowUnroll * N, m, s);
    }
  } else {
    for (int64_t i = threadIdx.x; i < V; i += step) {
      const float x = static_cast<float>(row[i]);
      fold_group(&x, 1, m, s);
    }
  }
  const float l = row_logsumexp(m, s, scratch);
  if (threadIdx.x == 0) {
    *lse = l;
    const bool valid = t >= 0 && t < V;
    *loss = t == ignore_index ? 0.0f : (valid ? l - static_cast<float>(row[t]) : NAN);
  }
}

// Block-wide: grad[j] = scale * (exp(row[j] - lse) - (j == t)), the gradient of a row's
// loss times `scale`, each value rounded once to T. `grad` may be `row` itself (in place).
// 16 bytes a thread at a time where both rows allow it, kRowUnroll packs loaded at
// once, as cross_entropy_row.
template <typename T>
__device__ inline void cross_entropy_grad_row(const T* row, T* grad, int32_t t, float lse,
                                              float scale, int64_t V) {
  const auto value = [&](float x, int64_t j) {
    return static_cast<T>(scale * (__expf(x - lse) - (j == t ? 1.0f : 0.0f)));
  };
  if (packed_row(row, V) && packed_row<T>(grad, V)) {
    const Pack<T>* in = reinterpret_cast<const Pack<T>*>(row);
    Pack<T>* out = reinterpret_cast<Pack<T>*>(grad);
    const int64_t count = V / kPack<T>, step = static_cast<int64_t>(blockDim.x);
    for (int64_t i = threadIdx.x; i < count; i += kRowUnroll * step) {
      Pack<T> p[kRowUnroll];  // all loads first, as in cross_entropy_row
#pragma unroll
      for (int u = 0; u < kRowUnroll; ++u) {
        if (i + u * step < count) p[u] = in[i + u * step];
      }
#pragma unroll
      for (int u = 0; u < kRowUnroll; ++u) {
        const int64_t k = i + u * step;
        if (k >= count) break;
#pragma unroll
        for (int e = 0; e < kPack<T>; ++e) {
          p[u].v[e] = value(static_cast<float>(p[u].v[e]), k * kPack<T> + e);
        }
        out[k] = p[u];
      }
    }
    return;
  }
  for (int64_t j = threadIdx.x; j < V; j += blockDim.x) {
    grad[j] = value(static_cast<float>(row[j]), j);
  }
}

}  // namespace zero::ops::cuda
