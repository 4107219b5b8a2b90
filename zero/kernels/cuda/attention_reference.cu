// Attention in plain CUDA: one thread per query row (the forward, dQ) or key row (dK,
// dV), FP32 arithmetic, no tiles, no shared memory, no Tensor Cores. It computes what the
// fast kernels compute (attention.cu, attention_backward.cu), with the same causal mask,
// the same dropout mask and the same saved lse, so read it first: the formulas below are
// those of Note [Flash attention] (attention.cuh) before tiles and registers rearranged
// them. Nothing in training calls it; tests/kernels/attention_reference_test.cpp runs
// both and compares. The CPU reference (cpu/attention_cpu.cpp) does the same in double.
//
// For slice bh = b H + h and query i, with s_ij = q_i . k_j / sqrt(D) over the keys j
// that i sees (all Tk, or under the causal mask j <= i + Tk - Tq):
//
//   forward    m = max_j s_ij,  l = sum_j exp(s_ij - m),  P_ij = exp(s_ij - m) / l,
//              o_i = sum_j P_ij F_ij v_j,  lse_i = m + log l
//   backward   P_ij = exp(s_ij - lse_i),  delta_i = dO_i . o_i,
//              dS_ij = P_ij ((dO_i . v_j) F_ij - delta_i),
//              dq_i = sum_j dS_ij k_j / sqrt(D),  dk_j = sum_i dS_ij q_i / sqrt(D),
//              dv_j = sum_i P_ij F_ij dO_i
//
// F is the dropout factor (Note [Attention dropout] in cpu/attention_cpu.cpp), 1 when p
// is 0. The fast forward gets m and l in one pass over the keys by rescaling as the
// maximum grows (Note [Online softmax in registers]); this one simply reads the keys
// twice. Each thread owns the rows it writes, so no atomics are needed here either.
#include <cmath>

#include "zero/kernels/attention_dropout.h"
#include "zero/kernels/attention_widen.h"
#include "zero/kernels/cuda/attention_views.cuh"
#include "zero/kernels/cuda/cuda_common.cuh"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {
namespace {

using cuda::flash::In;
using cuda::flash::Out;
using cuda::flash::in_view;
using cuda::flash::out_view;

// ---------------------------------------------------------------------------------
// Device helpers

__device__ float row_dot(const float* a, const float* b, int D) {
  float s = 0.0f;
  for (int d = 0; d < D; ++d) s += a[d] * b[d];
  return s;
}

// The keys query i sees: 0 .. n - 1, n = Tk, or Tk - Tq + i + 1 under the causal mask
// (aligned to the end of the keys: the queries are the last Tq positions).
__device__ int visible_keys(int i, int Tq, int Tk, bool causal) {
  return causal ? Tk - Tq + i + 1 : Tk;
}

// The sizes every kernel needs, and 1 / sqrt(D).
struct Sizes {
  int H, Tq, Tk, D;
  float scale;
};

// ---------------------------------------------------------------------------------
// Kernels. One thread per row: grid_for(rows) blocks of kBlock threads.

// out and lse; thread r = bh * Tq + i computes query i of slice bh.
__global__ void reference_forward_kernel(In q, In k, In v, Out out, float* lse, int64_t rows,
                                         Sizes n, bool causal, AttentionDropout drop) {
  drop = drop.shifted();
  const int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const int64_t bh = r / n.Tq;
  const int i = static_cast<int>(r % n.Tq);
  const float* qi = q.slice(bh, n.H) + i * q.row;
  const float* kb = k.slice(bh, n.H);
  const float* vb = v.slice(bh, n.H);
  float* oi = out.slice(bh, n.H) + i * out.row;
  const int keys = visible_keys(i, n.Tq, n.Tk, causal);
  // First pass: the largest score, subtracted below so that no exp overflows.
  float m = -INFINITY;
  for (int j = 0; j < keys; ++j) m = fmaxf(m, n.scale * row_dot(qi, kb + j * k.row, n.D));
  // Second pass: l and the unnormalised output, summed straight into out's row.
  for (int d = 0; d < n.D; ++d) oi[d] = 0.0f;
  float l = 0.0f;
  for (int j = 0; j < keys; ++j) {
    const float p = expf(n.scale * row_dot(qi, kb + j * k.row, n.D) - m);
    l += p;  // the softmax sums the undropped probabilities
    const float z = p * drop.factor(bh, i, j);
    const float* vj = vb + j * v.row;
    for (int d = 0; d < n.D; ++d) oi[d] += z * vj[d];
  }
  for (int d = 0; d < n.D; ++d) oi[d] /= l;
  lse[r] = m + logf(l);  // lse is a contiguous [B, H, Tq]: row r
}

// grad_q; thread r = bh * Tq + i computes row i of slice bh, a sum over the keys i sees.
__global__ void reference_backward_dq_kernel(In q, In k, In v, In out, const float* lse,
                                             In grad_out, Out grad_q, int64_t rows, Sizes n,
                                             bool causal, AttentionDropout drop) {
  drop = drop.shifted();
  const int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const int64_t bh = r / n.Tq;
  const int i = static_cast<int>(r % n.Tq);
  const float* qi = q.slice(bh, n.H) + i * q.row;
  const float* doi = grad_out.slice(bh, n.H) + i * grad_out.row;
  const float* kb = k.slice(bh, n.H);
  const float* vb = v.slice(bh, n.H);
  float* dqi = grad_q.slice(bh, n.H) + i * grad_q.row;
  // delta_i = sum_j P_ij dP_ij, which equals dO_i . o_i (Note [Attention dropout]).
  const float delta = row_dot(doi, out.slice(bh, n.H) + i * out.row, n.D);
  for (int d = 0; d < n.D; ++d) dqi[d] = 0.0f;
  for (int j = 0, keys = visible_keys(i, n.Tq, n.Tk, causal); j < keys; ++j) {
    const float* kj = kb + j * k.row;
    const float p = expf(n.scale * row_dot(qi, kj, n.D) - lse[r]);
    const float dp = row_dot(doi, vb + j * v.row, n.D) * drop.factor(bh, i, j);
    const float ds = p * (dp - delta);
    for (int d = 0; d < n.D; ++d) dqi[d] += ds * kj[d];
  }
  for (int d = 0; d < n.D; ++d) dqi[d] *= n.scale;
}

// grad_k and grad_v; thread r = bh * Tk + j computes rows j of slice bh, sums over the
// queries that see key j.
__global__ void reference_backward_dkdv_kernel(In q, In k, In v, In out, const float* lse,
                                               In grad_out, Out grad_k, Out grad_v,
                                               int64_t rows, Sizes n, bool causal,
                                               AttentionDropout drop) {
  drop = drop.shifted();
  const int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const int64_t bh = r / n.Tk;
  const int j = static_cast<int>(r % n.Tk);
  const float* kj = k.slice(bh, n.H) + j * k.row;
  const float* vj = v.slice(bh, n.H) + j * v.row;
  float* dkj = grad_k.slice(bh, n.H) + j * grad_k.row;
  float* dvj = grad_v.slice(bh, n.H) + j * grad_v.row;
  for (int d = 0; d < n.D; ++d) dkj[d] = dvj[d] = 0.0f;
  // Under the causal mask, query i sees key j when j <= i + Tk - Tq.
  for (int i = causal ? ::max(0, j - (n.Tk - n.Tq)) : 0; i < n.Tq; ++i) {
    const float* qi = q.slice(bh, n.H) + i * q.row;
    const float* doi = grad_out.slice(bh, n.H) + i * grad_out.row;
    const float p = expf(n.scale * row_dot(qi, kj, n.D) - lse[bh * n.Tq + i]);
    const float f = drop.factor(bh, i, j);
    const float delta = row_dot(doi, out.slice(bh, n.H) + i * out.row, n.D);
    const float ds = p * (row_dot(doi, vj, n.D) * f - delta);
    for (int d = 0; d < n.D; ++d) {
      dvj[d] += p * f * doi[d];
      dkj[d] += ds * qi[d];
    }
  }
  for (int d = 0; d < n.D; ++d) dkj[d] *= n.scale;
}

// ---------------------------------------------------------------------------------
// Launchers

Sizes sizes_of(const Tensor& q, const Tensor& k) {
  const int D = static_cast<int>(q.size(3));
  return {static_cast<int>(q.size(1)), static_cast<int>(q.size(2)), static_cast<int>(k.size(2)),
          D, 1.0f / std::sqrt(static_cast<float>(D))};
}

void attention_reference_forward_cuda(const Tensor& q, const Tensor& k, const Tensor& v,
                                      bool causal, float dropout_p, uint64_t seed,
                                      uint64_t offset, const Tensor& out, const Tensor& lse) {
  cuda::set_device(q);
  const int64_t rows = q.size(0) * q.size(1) * q.size(2);  // B * H * Tq
  if (rows == 0) return;
  AttentionDropout drop(dropout_p, seed, offset, q.size(2), k.size(2));
  drop.shift = cuda::philox_shift();
  const Tensor out32 = wide_output(out);  // Note [16-bit attention through the FP32 kernels]
  reference_forward_kernel<<<cuda::grid_for(rows), cuda::kBlock, 0, cuda::current_stream()>>>(
      in_view(widened(q)), in_view(widened(k)), in_view(widened(v)), out_view(out32),
      lse.data_ptr<float>(), rows, sizes_of(q, k), causal, drop);
  ZERO_CUDA_LAUNCH_CHECK();
  rounded(out32, out);
}

void attention_reference_backward_cuda(const Tensor& q, const Tensor& k, const Tensor& v,
                                       const Tensor& out, const Tensor& lse,
                                       const Tensor& grad_out, bool causal, float dropout_p,
                                       uint64_t seed, uint64_t offset, const Tensor& grad_q,
                                       const Tensor& grad_k, const Tensor& grad_v) {
  cuda::set_device(q);
  AttentionDropout drop(dropout_p, seed, offset, q.size(2), k.size(2));
  drop.shift = cuda::philox_shift();
  const Sizes n = sizes_of(q, k);
  const int64_t query_rows = q.size(0) * q.size(1) * q.size(2);  // B * H * Tq
  const int64_t key_rows = k.size(0) * k.size(1) * k.size(2);    // B * H * Tk
  // 16-bit operands: Note [16-bit attention through the FP32 kernels].
  const Tensor q32 = widened(q), k32 = widened(k), v32 = widened(v), out32 = widened(out);
  const Tensor go32 = widened(grad_out);
  const Tensor gq = wide_output(grad_q), gk = wide_output(grad_k), gv = wide_output(grad_v);
  if (query_rows > 0) {
    reference_backward_dq_kernel<<<cuda::grid_for(query_rows), cuda::kBlock, 0,
                                   cuda::current_stream()>>>(
        in_view(q32), in_view(k32), in_view(v32), in_view(out32), lse.data_ptr<float>(),
        in_view(go32), out_view(gq), query_rows, n, causal, drop);
    ZERO_CUDA_LAUNCH_CHECK();
  }
  if (key_rows > 0) {
    reference_backward_dkdv_kernel<<<cuda::grid_for(key_rows), cuda::kBlock, 0,
                                     cuda::current_stream()>>>(
        in_view(q32), in_view(k32), in_view(v32), in_view(out32), lse.data_ptr<float>(),
        in_view(go32), out_view(gk), out_view(gv), key_rows, n, causal, drop);
    ZERO_CUDA_LAUNCH_CHECK();
  }
  rounded(gq, grad_q);
  rounded(gk, grad_k);
  rounded(gv, grad_v);
}

}  // namespace

ZERO_REGISTER_KERNEL(attention_reference_forward, kCuda, attention_reference_forward_cuda);
ZERO_REGISTER_KERNEL(attention_reference_backward, kCuda, attention_reference_backward_cuda);

}  // namespace zero::ops
