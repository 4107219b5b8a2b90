// Flash attention backward in plain FP32 CUDA: delta = rowsum(dO * O) first, then one
// kernel per 64-key tile for dK and dV and one per 64-query tile for dQ, each
// recomputing the probabilities (and the dropout mask) tile by tile from the saved
// logsumexp. Note [Flash attention] in attention.cuh has the formulas, the thread
// layout and the strided operands; the forward is attention.cu.
#include <cmath>

#include "zero/kernels/cuda/attention.cuh"
#include "zero/kernels/cuda/cuda_ops.h"

namespace zero::ops {
namespace {

using namespace cuda::flash;

// ---------------------------------------------------------------------------------
// Kernels. grid = (B * H, tiles of the owned operand); block = kThreads.

// delta[row] = sum_d dO[row][d] * O[row][d] for row = bh * Tq + i, one warp per row.
__global__ void attention_delta_kernel(In grad_out, In out, float* delta, int64_t rows, int H,
                                       int Tq, int D) {
  const int64_t row = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  if (row >= rows) return;
  const int64_t bh = row / Tq, i = row % Tq;
  const float* grad_row = grad_out.slice(bh, H) + i * grad_out.row;
  const float* out_row = out.slice(bh, H) + i * out.row;
  float s = 0.0f;
  for (int d = threadIdx.x % 32; d < D; d += 32) s += grad_row[d] * out_row[d];
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (threadIdx.x % 32 == 0) delta[row] = s;
}

template <int kD>
__global__ void __launch_bounds__(kThreads) attention_backward_dkdv_kernel(
    In q, In k, In v, In grad_out, const float* lse, const float* delta, Out grad_k,
    Out grad_v, int H, int Tq, int Tk, int D, float scale, bool causal, AttentionDropout drop) {
  extern __shared__ float smem[];
  float* ks = smem;                     // (64, kD + 1) resident
  float* vs = ks + kTile * (kD + 1);    // (64, kD + 1) resident
  float* qs = vs + kTile * (kD + 1);    // (64, kD + 1)
  float* dos = qs + kTile * (kD + 1);   // (64, kD + 1)
  float* pts = dos + kTile * (kD + 1);  // (64, 65) P^T
  float* dsts = pts + kTile * kPLd;     // (64, 65) dS^T
  float* lse_s = dsts + kTile * kPLd;   // (64)
  float* delta_s = lse_s + kTile;       // (64)
  const int ty = threadIdx.x / 16, tx = threadIdx.x % 16;
  const int64_t bh = blockIdx.x;
  const int k0 = blockIdx.y * kTile;
  const float *qb = q.slice(bh, H), *dob = grad_out.slice(bh, H);
  lse += bh * Tq, delta += bh * Tq;
  load_tile<kD>(ks, k.slice(bh, H), k.row, k0, Tk, D);
  load_tile<kD>(vs, v.slice(bh, H), v.row, k0, Tk, D);
  float dk[kPerThread][kD / 16] = {}, dv[kPerThread][kD / 16] = {};
  // Queries before k0 - (Tk - Tq) see none of these keys under the causal mask.
  const int q_begin = causal ? ::max(0, k0 - (Tk - Tq)) : 0;
  for (int q0 = q_begin; q0 < Tq; q0 += kTile) {
    __syncthreads();  // the previous tile's qs, dos, pts, dsts are no longer read
    load_tile<kD>(qs, qb, q.row, q0, Tq, D);
    load_tile<kD>(dos, dob, grad_out.row, q0, Tq, D);
    if (threadIdx.x < kTile) {
      const int i = q0 + threadIdx.x;
      lse_s[threadIdx.x] = i < Tq ? lse[i] : 0.0f;
      delta_s[threadIdx.x] = i < Tq ? delta[i] : 0.0f;
    }
    __syncthreads();
    float st[kPerThread][kPerThread], dpt[kPerThread][kPerThread];
    tile_abt<kD>(ks, qs, st, ty, tx);   // S^T[j][i] = K_j . Q_i
    tile_abt<kD>(vs, dos, dpt, ty, tx); // dP^T[j][i] = V_j . dO_i
    for (int r = 0; r < kPerThread; ++r) {
      for (int c = 0; c < kPerThread; ++c) {
        const int j = k0 + ty + 16 * r, ic = tx + 16 * c;
        const bool seen = visible(q0 + ic, j, Tq, Tk, causal);
        const float p = seen ? __expf(st[r][c] * scale - lse_s[ic]) : 0.0f;
        const float f = seen ? drop.factor(bh * Tq + q0 + ic, j, Tk) : 1.0f;
        pts[(ty + 16 * r) * kPLd + ic] = p * f;                             // Z^T
        dsts[(ty + 16 * r) * kPLd + ic] = p * (dpt[r][c] * f - delta_s[ic]);
      }
    }
    __syncthreads();
    tile_ab<kD>(pts, dos, dv, ty, tx);   // dV += P^T dO
    tile_ab<kD>(dsts, qs, dk, ty, tx);   // dK += dS^T Q
  }
  store_rows<kD>(grad_k.slice(bh, H), grad_k.row, dk, scale, k0, Tk, D, ty, tx);
  store_rows<kD>(grad_v.slice(bh, H), grad_v.row, dv, 1.0f, k0, Tk, D, ty, tx);
}

template <int kD>
__global__ void __launch_bounds__(kThreads) attention_backward_dq_kernel(
    In q, In k, In v, In grad_out, const float* lse, const float* delta, Out grad_q, int H,
    int Tq, int Tk, int D, float scale, bool causal, AttentionDropout drop) {
  extern __shared__ float smem[];
  float* qs = smem;                     // (64, kD + 1) resident
  float* dos = qs + kTile * (kD + 1);   // (64, kD + 1) resident
  float* ks = dos + kTile * (kD + 1);   // (64, kD + 1)
  float* vs = ks + kTile * (kD + 1);    // (64, kD + 1)
  float* dss = vs + kTile * (kD + 1);   // (64, 65) dS
  const int ty = threadIdx.x / 16, tx = threadIdx.x % 16;
  const int64_t bh = blockIdx.x;
  const int q0 = blockIdx.y * kTile;
  const float *kb = k.slice(bh, H), *vb = v.slice(bh, H);
  lse += bh * Tq, delta += bh * Tq;
  load_tile<kD>(qs, q.slice(bh, H), q.row, q0, Tq, D);
  load_tile<kD>(dos, grad_out.slice(bh, H), grad_out.row, q0, Tq, D);
  float row_lse[kPerThread], row_delta[kPerThread];
  for (int r = 0; r < kPerThread; ++r) {
    const int i = q0 + ty + 16 * r;
    row_lse[r] = i < Tq ? lse[i] : 0.0f;
    row_delta[r] = i < Tq ? delta[i] : 0.0f;
  }
  float dq[kPerThread][kD / 16] = {};
  const int k_end = causal ? ::min(Tk, q0 + kTile + (Tk - Tq)) : Tk;
  for (int k0 = 0; k0 < k_end; k0 += kTile) {
    __syncthreads();  // the previous tile's ks, vs, dss are no longer read
    load_tile<kD>(ks, kb, k.row, k0, Tk, D);
    load_tile<kD>(vs, vb, v.row, k0, Tk, D);
    __syncthreads();
    float s[kPerThread][kPerThread], dp[kPerThread][kPerThread];
    tile_abt<kD>(qs, ks, s, ty, tx);    // S[i][j] = Q_i . K_j
    tile_abt<kD>(dos, vs, dp, ty, tx);  // dP[i][j] = dO_i . V_j
    for (int r = 0; r < kPerThread; ++r) {
      for (int c = 0; c < kPerThread; ++c) {
        const int i = q0 + ty + 16 * r, jc = tx + 16 * c;
        const bool seen = visible(i, k0 + jc, Tq, Tk, causal);
        const float p = seen ? __expf(s[r][c] * scale - row_lse[r]) : 0.0f;
        const float f = seen ? drop.factor(bh * Tq + i, k0 + jc, Tk) : 1.0f;
        dss[(ty + 16 * r) * kPLd + jc] = p * (dp[r][c] * f - row_delta[r]);
      }
    }
    __syncthreads();
    tile_ab<kD>(dss, ks, dq, ty, tx);  // dQ += dS K
  }
  store_rows<kD>(grad_q.slice(bh, H), grad_q.row, dq, scale, q0, Tq, D, ty, tx);
}

// ---------------------------------------------------------------------------------
// Launchers

template <int kD>
void backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
              const Tensor& lse, const Tensor& grad_out, bool causal, const AttentionDropout& drop,
              const Tensor& grad_q, const Tensor& grad_k, const Tensor& grad_v) {
  const int64_t bh = q.size(0) * q.size(1);
  const int H = static_cast<int>(q.size(1));
  const int Tq = static_cast<int>(q.size(2)), Tk = static_cast<int>(k.size(2));
  const int D = static_cast<int>(q.size(3));
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  Tensor delta = Tensor::Empty({bh * Tq}, q.options());  // (B * H * Tq)
  if (bh * Tq > 0) {
    constexpr int kRowsPerBlock = kThreads / 32;
    const unsigned blocks = static_cast<unsigned>((bh * Tq + kRowsPerBlock - 1) / kRowsPerBlock);
    attention_delta_kernel<<<blocks, kThreads, 0, cuda::current_stream()>>>(
        in_view(grad_out), in_view(out), delta.data_ptr<float>(), bh * Tq, H, Tq, D);
    ZERO_CUDA_LAUNCH_CHECK();
  }
  const size_t smem_kv = smem_bytes<kD>(4, 2, 2);
  ZERO_CUDA_CHECK(cudaFuncSetAttribute(attention_backward_dkdv_kernel<kD>,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem_kv));
  const dim3 key_grid(static_cast<unsigned>(bh), tiles(Tk));
  attention_backward_dkdv_kernel<kD><<<key_grid, kThreads, smem_kv, cuda::current_stream()>>>(
      in_view(q), in_view(k), in_view(v), in_view(grad_out), lse.data_ptr<float>(),
      delta.data_ptr<float>(), out_view(grad_k), out_view(grad_v), H, Tq, Tk, D, scale, causal,
      drop);
  ZERO_CUDA_LAUNCH_CHECK();
  if (Tq == 0) return;
  const size_t smem_q = smem_bytes<kD>(4, 1, 0);
  ZERO_CUDA_CHECK(cudaFuncSetAttribute(attention_backward_dq_kernel<kD>,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem_q));
  const dim3 query_grid(static_cast<unsigned>(bh), tiles(Tq));
  attention_backward_dq_kernel<kD><<<query_grid, kThreads, smem_q, cuda::current_stream()>>>(
      in_view(q), in_view(k), in_view(v), in_view(grad_out), lse.data_ptr<float>(),
      delta.data_ptr<float>(), out_view(grad_q), H, Tq, Tk, D, scale, causal, drop);
  ZERO_CUDA_LAUNCH_CHECK();
}

}  // namespace

void attention_backward_cuda(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                             const Tensor& lse, const Tensor& grad_out, bool causal,
                             float dropout_p, uint64_t seed, uint64_t offset,
                             const Tensor& grad_q, const Tensor& grad_k, const Tensor& grad_v) {
  cuda::set_device(q);
  if (q.size(0) * q.size(1) == 0 || k.size(2) == 0) return;
  const int64_t D = q.size(3);
  const AttentionDropout drop(dropout_p, seed, offset);
  if (D <= 32)
    return backward<32>(q, k, v, out, lse, grad_out, causal, drop, grad_q, grad_k, grad_v);
  if (D <= 64)
    return backward<64>(q, k, v, out, lse, grad_out, causal, drop, grad_q, grad_k, grad_v);
  backward<128>(q, k, v, out, lse, grad_out, causal, drop, grad_q, grad_k, grad_v);
}

}  // namespace zero::ops
