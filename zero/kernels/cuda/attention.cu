// Flash attention forward in plain FP32 CUDA: one block per 64-query tile streams the
// keys and values through shared memory with an online softmax, writing the output and
// one logsumexp per query row; nothing of size [Tq, Tk] is stored. Note [Flash
// attention] in attention.cuh explains the tiles, the thread layout and the strided
// operands; the backward is attention_backward.cu.
#include <cmath>

#include "zero/kernels/cuda/attention.cuh"
#include "zero/kernels/cuda/cuda_ops.h"

namespace zero::ops {
namespace {

using namespace cuda::flash;

// ---------------------------------------------------------------------------------
// Kernel. grid = (B * H, query tiles); block = kThreads.

template <int kD>
__global__ void __launch_bounds__(kThreads) attention_forward_kernel(
    In q, In k, In v, Out out, float* lse, int H, int Tq, int Tk, int D, float scale,
    bool causal, AttentionDropout drop) {
  extern __shared__ float smem[];
  float* qs = smem;                     // (64, kD + 1)
  float* ks = qs + kTile * (kD + 1);    // (64, kD + 1)
  float* vs = ks + kTile * (kD + 1);    // (64, kD + 1)
  float* ps = vs + kTile * (kD + 1);    // (64, 65)
  const int ty = threadIdx.x / 16, tx = threadIdx.x % 16;
  const int64_t bh = blockIdx.x;
  const int q0 = blockIdx.y * kTile;
  const float *qb = q.slice(bh, H), *kb = k.slice(bh, H), *vb = v.slice(bh, H);
  float* ob = out.slice(bh, H);
  load_tile<kD>(qs, qb, q.row, q0, Tq, D);
  // Keys past the tile's last query are masked for every row: skip them.
  const int k_end = causal ? ::min(Tk, q0 + kTile + (Tk - Tq)) : Tk;
  float m[kPerThread], l[kPerThread], o[kPerThread][kD / 16];
  for (int r = 0; r < kPerThread; ++r) {
    m[r] = -INFINITY, l[r] = 0.0f;
    for (int c = 0; c < kD / 16; ++c) o[r][c] = 0.0f;
  }
  for (int k0 = 0; k0 < k_end; k0 += kTile) {
    __syncthreads();  // the previous tile's ks, vs, ps are no longer read
    load_tile<kD>(ks, kb, k.row, k0, Tk, D);
    load_tile<kD>(vs, vb, v.row, k0, Tk, D);
    __syncthreads();
    float s[kPerThread][kPerThread];
    tile_abt<kD>(qs, ks, s, ty, tx);
    for (int r = 0; r < kPerThread; ++r) {
      const int i = q0 + ty + 16 * r;
      float tile_max = -INFINITY;
      for (int c = 0; c < kPerThread; ++c) {
        s[r][c] = visible(i, k0 + tx + 16 * c, Tq, Tk, causal) ? s[r][c] * scale : -INFINITY;
        tile_max = fmaxf(tile_max, s[r][c]);
      }
      const float m_new = fmaxf(m[r], row_max(tile_max));
      // A row with nothing visible yet keeps m = -inf; subtract 0 instead so that
      // exp(-inf - -inf) never makes a NaN (every p and alpha is then 0).
      const float m_use = m_new == -INFINITY ? 0.0f : m_new;
      const float alpha = __expf(m[r] - m_use);
      float sum = 0.0f;
      for (int c = 0; c < kPerThread; ++c) {
        const float p = __expf(s[r][c] - m_use);
        // V is multiplied by the dropped P; the softmax sum takes the undropped P.
        ps[(ty + 16 * r) * kPLd + tx + 16 * c] = p * drop.factor(bh * Tq + i, k0 + tx + 16 * c, Tk);
        sum += p;
      }
      l[r] = l[r] * alpha + row_sum(sum);
      m[r] = m_new;
      for (int c = 0; c < kD / 16; ++c) o[r][c] *= alpha;
    }
    __syncthreads();
    tile_ab<kD>(ps, vs, o, ty, tx);
  }
  for (int r = 0; r < kPerThread; ++r) {
    const int i = q0 + ty + 16 * r;
    if (i >= Tq) continue;
    for (int c = 0; c < kD / 16; ++c) {
      const int d = tx + 16 * c;
      if (d < D) ob[i * out.row + d] = o[r][c] / l[r];
    }
    if (tx == 0) lse[bh * Tq + i] = m[r] + logf(l[r]);
  }
}

// ---------------------------------------------------------------------------------
// Launchers

template <int kD>
void forward(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
             const AttentionDropout& drop, const Tensor& out, const Tensor& lse) {
  const int64_t bh = q.size(0) * q.size(1);
  const int H = static_cast<int>(q.size(1));
  const int Tq = static_cast<int>(q.size(2)), Tk = static_cast<int>(k.size(2));
  const int D = static_cast<int>(q.size(3));
  const size_t smem = smem_bytes<kD>(3, 1, 0);
  ZERO_CUDA_CHECK(cudaFuncSetAttribute(attention_forward_kernel<kD>,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  const dim3 grid(static_cast<unsigned>(bh), tiles(Tq));
  attention_forward_kernel<kD><<<grid, kThreads, smem, cuda::current_stream()>>>(
      in_view(q), in_view(k), in_view(v), out_view(out), lse.data_ptr<float>(), H, Tq, Tk, D,
      1.0f / std::sqrt(static_cast<float>(D)), causal, drop);
  ZERO_CUDA_LAUNCH_CHECK();
}

}  // namespace

void attention_forward_cuda(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                            float dropout_p, uint64_t seed, uint64_t offset, const Tensor& out,
                            const Tensor& lse) {
  cuda::set_device(q);
  if (q.size(0) * q.size(1) * q.size(2) == 0) return;
  const int64_t D = q.size(3);
  const AttentionDropout drop(dropout_p, seed, offset);
  if (D <= 32) return forward<32>(q, k, v, causal, drop, out, lse);
  if (D <= 64) return forward<64>(q, k, v, causal, drop, out, lse);
  forward<128>(q, k, v, causal, drop, out, lse);
}

}  // namespace zero::ops
