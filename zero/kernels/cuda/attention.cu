// Flash attention in plain FP32 CUDA: forward with an online softmax, backward in
// two kernels that recompute the probabilities tile by tile. Nothing of size
// [Tq, Tk] is ever stored. The CPU reference is cpu/attention_cpu.cpp.
//
// Note [Flash attention]
// Scores S = Q K^T * scale are formed a 64 x 64 tile at a time in registers. One
// block of 256 threads owns a tile of 64 query rows (the forward, dQ) or 64 key rows
// (dK, dV) and streams the other operand through shared memory in 64-row tiles:
//
//   forward   block (query tile i):  for each key tile j:  S = Q_i K_j^T
//             m_new = max(m, rowmax S), P = exp(S - m_new), l = l e^(m - m_new) + rowsum P,
//             O = O e^(m - m_new) + P V_j;   at the end O /= l, lse = m + log l
//   dK, dV    block (key tile j):    for each query tile i:  P^T = exp(K_j Q_i^T - lse_i),
//             dP^T = V_j dO_i^T, dS^T = P^T (dP^T - delta_i), dV += P^T dO_i, dK += dS^T Q_i
//   dQ        block (query tile i):  for each key tile j:  P, dP, dS as above, dQ += dS K_j
//
// where delta_i = rowsum(dO_i * O_i) (a small kernel first). dK, dV and dQ each have
// exactly one writer block, so there are no atomics and results are deterministic;
// the price is that dQ's kernel recomputes S and dP (two extra tile products).
//
// Inside a block, thread (ty, tx) = (threadIdx.x / 16, threadIdx.x % 16) owns rows
// ty + 16 r (r < 4) and columns tx + 16 c of every 64 x 64 or 64 x D tile, so its
// values live in registers, the 16 threads of a row share a half-warp (row maxima and
// sums are 4 shuffles), and the shared-memory reads of a warp hit distinct banks:
// tiles are stored row-major with rows padded to D + 1 floats. Causal masking skips
// whole key tiles past a query tile's last row; inside a tile masked scores are -inf
// (probability 0). D is padded up to a compiled width of 32, 64 or 128 (zeros add
// nothing to the dot products), so any D <= 128 works. Shared memory exceeds the
// default 48 KB for D >= 64 and is opted into per kernel (cudaFuncSetAttribute).
//
// Dropout (Note [Attention dropout] in cpu/attention_cpu.cpp): each thread redraws the
// factor F of the (i, j) it owns from the CPU's global index. The forward sums P into l
// but multiplies V by P * F; the backward uses P^T * F for dV and dP * F in dS.
#include <cmath>

#include "zero/kernels/attention_dropout.h"
#include "zero/kernels/cuda/cuda_common.cuh"
#include "zero/kernels/cuda/cuda_ops.h"

namespace zero::ops {
namespace {

constexpr int kTile = 64;       // query rows and key rows per tile
constexpr int kThreads = 256;   // 16 x 16
constexpr int kPerThread = 4;   // kTile / 16 rows (or columns) per thread
constexpr int kPLd = kTile + 1; // row stride of a 64 x 64 probability tile in shared memory

// ---------------------------------------------------------------------------------
// Device helpers

// Copies rows [row0, row0 + 64) of a [rows, D] matrix into a shared tile with row
// stride kD + 1, writing zeros past the last row and past column D.
template <int kD>
__device__ void load_tile(float* tile, const float* src, int row0, int rows, int D) {
  for (int e = threadIdx.x; e < kTile * kD; e += kThreads) {
    const int r = e / kD, d = e % kD;
    tile[r * (kD + 1) + d] = row0 + r < rows && d < D ? src[(int64_t)(row0 + r) * D + d] : 0.0f;
  }
}

// acc[r][c] = sum_d a[ty + 16 r][d] * b[tx + 16 c][d]: a 64 x 64 tile of A B^T.
template <int kD>
__device__ void tile_abt(const float* a, const float* b, float acc[kPerThread][kPerThread],
                         int ty, int tx) {
  for (int r = 0; r < kPerThread; ++r)
    for (int c = 0; c < kPerThread; ++c) acc[r][c] = 0.0f;
#pragma unroll 8
  for (int d = 0; d < kD; ++d) {
    float av[kPerThread], bv[kPerThread];
    for (int i = 0; i < kPerThread; ++i) {
      av[i] = a[(ty + 16 * i) * (kD + 1) + d];
      bv[i] = b[(tx + 16 * i) * (kD + 1) + d];
    }
    for (int r = 0; r < kPerThread; ++r)
      for (int c = 0; c < kPerThread; ++c) acc[r][c] += av[r] * bv[c];
  }
}

// acc[r][c] += sum_j p[ty + 16 r][j] * b[j][tx + 16 c]: P (64 x 64) times B (64 x kD).
template <int kD>
__device__ void tile_ab(const float* p, const float* b, float acc[kPerThread][kD / 16], int ty,
                        int tx) {
#pragma unroll 4
  for (int j = 0; j < kTile; ++j) {
    float pv[kPerThread];
    for (int r = 0; r < kPerThread; ++r) pv[r] = p[(ty + 16 * r) * kPLd + j];
    for (int c = 0; c < kD / 16; ++c) {
      const float bv = b[j * (kD + 1) + tx + 16 * c];
      for (int r = 0; r < kPerThread; ++r) acc[r][c] += pv[r] * bv;
    }
  }
}

// Reductions over the 16 threads of one row (a half-warp).
__device__ float row_max(float v) {
  for (int o = 8; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ float row_sum(float v) {
  for (int o = 8; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Whether query i may see key j; the causal mask is aligned to the end of the keys.
__device__ bool visible(int i, int j, int Tq, int Tk, bool causal) {
  return i < Tq && j < Tk && (!causal || j <= i + (Tk - Tq));
}

// Writes acc[r][c] * scale to rows [row0, ...) of a [rows, D] matrix.
template <int kD>
__device__ void store_rows(float* dst, const float acc[kPerThread][kD / 16], float scale,
                           int row0, int rows, int D, int ty, int tx) {
  for (int r = 0; r < kPerThread; ++r) {
    const int row = row0 + ty + 16 * r;
    for (int c = 0; c < kD / 16; ++c) {
      const int d = tx + 16 * c;
      if (row < rows && d < D) dst[(int64_t)row * D + d] = acc[r][c] * scale;
    }
  }
}

// ---------------------------------------------------------------------------------
// Kernels. grid = (B * H, tiles of the owned operand); block = kThreads.

template <int kD>
__global__ void __launch_bounds__(kThreads) attention_forward_kernel(
    const float* q, const float* k, const float* v, float* out, float* lse, int Tq, int Tk,
    int D, float scale, bool causal, AttentionDropout drop) {
  extern __shared__ float smem[];
  float* qs = smem;                     // (64, kD + 1)
  float* ks = qs + kTile * (kD + 1);    // (64, kD + 1)
  float* vs = ks + kTile * (kD + 1);    // (64, kD + 1)
  float* ps = vs + kTile * (kD + 1);    // (64, 65)
  const int ty = threadIdx.x / 16, tx = threadIdx.x % 16;
  const int64_t bh = blockIdx.x;
  const int q0 = blockIdx.y * kTile;
  q += bh * Tq * D, k += bh * Tk * D, v += bh * Tk * D;
  load_tile<kD>(qs, q, q0, Tq, D);
  // Keys past the tile's last query are masked for every row: skip them.
  const int k_end = causal ? ::min(Tk, q0 + kTile + (Tk - Tq)) : Tk;
  float m[kPerThread], l[kPerThread], o[kPerThread][kD / 16];
  for (int r = 0; r < kPerThread; ++r) {
    m[r] = -INFINITY, l[r] = 0.0f;
    for (int c = 0; c < kD / 16; ++c) o[r][c] = 0.0f;
  }
  for (int k0 = 0; k0 < k_end; k0 += kTile) {
    __syncthreads();  // the previous tile's ks, vs, ps are no longer read
    load_tile<kD>(ks, k, k0, Tk, D);
    load_tile<kD>(vs, v, k0, Tk, D);
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
      if (d < D) out[(bh * Tq + i) * D + d] = o[r][c] / l[r];
    }
    if (tx == 0) lse[bh * Tq + i] = m[r] + logf(l[r]);
  }
}

// delta[row] = sum_d dO[row][d] * O[row][d], one warp per row.
__global__ void attention_delta_kernel(const float* grad_out, const float* out, float* delta,
                                       int64_t rows, int D) {
  const int64_t row = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  if (row >= rows) return;
  float s = 0.0f;
  for (int d = threadIdx.x % 32; d < D; d += 32) s += grad_out[row * D + d] * out[row * D + d];
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (threadIdx.x % 32 == 0) delta[row] = s;
}

template <int kD>
__global__ void __launch_bounds__(kThreads) attention_backward_dkdv_kernel(
    const float* q, const float* k, const float* v, const float* grad_out, const float* lse,
    const float* delta, float* grad_k, float* grad_v, int Tq, int Tk, int D, float scale,
    bool causal, AttentionDropout drop) {
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
  q += bh * Tq * D, k += bh * Tk * D, v += bh * Tk * D, grad_out += bh * Tq * D;
  lse += bh * Tq, delta += bh * Tq;
  load_tile<kD>(ks, k, k0, Tk, D);
  load_tile<kD>(vs, v, k0, Tk, D);
  float dk[kPerThread][kD / 16] = {}, dv[kPerThread][kD / 16] = {};
  // Queries before k0 - (Tk - Tq) see none of these keys under the causal mask.
  const int q_begin = causal ? ::max(0, k0 - (Tk - Tq)) : 0;
  for (int q0 = q_begin; q0 < Tq; q0 += kTile) {
    __syncthreads();  // the previous tile's qs, dos, pts, dsts are no longer read
    load_tile<kD>(qs, q, q0, Tq, D);
    load_tile<kD>(dos, grad_out, q0, Tq, D);
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
  store_rows<kD>(grad_k + bh * Tk * D, dk, scale, k0, Tk, D, ty, tx);
  store_rows<kD>(grad_v + bh * Tk * D, dv, 1.0f, k0, Tk, D, ty, tx);
}

template <int kD>
__global__ void __launch_bounds__(kThreads) attention_backward_dq_kernel(
    const float* q, const float* k, const float* v, const float* grad_out, const float* lse,
    const float* delta, float* grad_q, int Tq, int Tk, int D, float scale, bool causal,
    AttentionDropout drop) {
  extern __shared__ float smem[];
  float* qs = smem;                     // (64, kD + 1) resident
  float* dos = qs + kTile * (kD + 1);   // (64, kD + 1) resident
  float* ks = dos + kTile * (kD + 1);   // (64, kD + 1)
  float* vs = ks + kTile * (kD + 1);    // (64, kD + 1)
  float* dss = vs + kTile * (kD + 1);   // (64, 65) dS
  const int ty = threadIdx.x / 16, tx = threadIdx.x % 16;
  const int64_t bh = blockIdx.x;
  const int q0 = blockIdx.y * kTile;
  q += bh * Tq * D, k += bh * Tk * D, v += bh * Tk * D, grad_out += bh * Tq * D;
  lse += bh * Tq, delta += bh * Tq;
  load_tile<kD>(qs, q, q0, Tq, D);
  load_tile<kD>(dos, grad_out, q0, Tq, D);
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
    load_tile<kD>(ks, k, k0, Tk, D);
    load_tile<kD>(vs, v, k0, Tk, D);
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
  store_rows<kD>(grad_q + bh * Tq * D, dq, scale, q0, Tq, D, ty, tx);
}

// ---------------------------------------------------------------------------------
// Launchers

int tiles(int64_t rows) { return static_cast<int>((rows + kTile - 1) / kTile); }

// Shared bytes of a kernel holding `big` (64, kD + 1) tiles, `small` (64, 65) tiles
// and `vectors` 64-float vectors.
template <int kD>
size_t smem_bytes(int big, int small, int vectors) {
  return sizeof(float) * (big * kTile * (kD + 1) + small * kTile * kPLd + vectors * kTile);
}

template <int kD>
void forward(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
             const AttentionDropout& drop, const Tensor& out, const Tensor& lse) {
  const int64_t bh = q.size(0) * q.size(1);
  const int Tq = static_cast<int>(q.size(2)), Tk = static_cast<int>(k.size(2));
  const int D = static_cast<int>(q.size(3));
  const size_t smem = smem_bytes<kD>(3, 1, 0);
  ZERO_CUDA_CHECK(cudaFuncSetAttribute(attention_forward_kernel<kD>,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  const dim3 grid(static_cast<unsigned>(bh), tiles(Tq));
  attention_forward_kernel<kD><<<grid, kThreads, smem, cuda::current_stream()>>>(
      q.data_ptr<float>(), k.data_ptr<float>(), v.data_ptr<float>(), out.data_ptr<float>(),
      lse.data_ptr<float>(), Tq, Tk, D, 1.0f / std::sqrt(static_cast<float>(D)), causal, drop);
  ZERO_CUDA_LAUNCH_CHECK();
}

template <int kD>
void backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
              const Tensor& lse, const Tensor& grad_out, bool causal, const AttentionDropout& drop,
              const Tensor& grad_q, const Tensor& grad_k, const Tensor& grad_v) {
  const int64_t bh = q.size(0) * q.size(1);
  const int Tq = static_cast<int>(q.size(2)), Tk = static_cast<int>(k.size(2));
  const int D = static_cast<int>(q.size(3));
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  Tensor delta = Tensor::Empty({bh * Tq}, q.options());  // (B * H * Tq)
  if (bh * Tq > 0) {
    constexpr int kRowsPerBlock = kThreads / 32;
    const unsigned blocks = static_cast<unsigned>((bh * Tq + kRowsPerBlock - 1) / kRowsPerBlock);
    attention_delta_kernel<<<blocks, kThreads, 0, cuda::current_stream()>>>(
        grad_out.data_ptr<float>(), out.data_ptr<float>(), delta.data_ptr<float>(), bh * Tq, D);
    ZERO_CUDA_LAUNCH_CHECK();
  }
  const size_t smem_kv = smem_bytes<kD>(4, 2, 2);
  ZERO_CUDA_CHECK(cudaFuncSetAttribute(attention_backward_dkdv_kernel<kD>,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem_kv));
  const dim3 key_grid(static_cast<unsigned>(bh), tiles(Tk));
  attention_backward_dkdv_kernel<kD><<<key_grid, kThreads, smem_kv, cuda::current_stream()>>>(
      q.data_ptr<float>(), k.data_ptr<float>(), v.data_ptr<float>(), grad_out.data_ptr<float>(),
      lse.data_ptr<float>(), delta.data_ptr<float>(), grad_k.data_ptr<float>(),
      grad_v.data_ptr<float>(), Tq, Tk, D, scale, causal, drop);
  ZERO_CUDA_LAUNCH_CHECK();
  if (Tq == 0) return;
  const size_t smem_q = smem_bytes<kD>(4, 1, 0);
  ZERO_CUDA_CHECK(cudaFuncSetAttribute(attention_backward_dq_kernel<kD>,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem_q));
  const dim3 query_grid(static_cast<unsigned>(bh), tiles(Tq));
  attention_backward_dq_kernel<kD><<<query_grid, kThreads, smem_q, cuda::current_stream()>>>(
      q.data_ptr<float>(), k.data_ptr<float>(), v.data_ptr<float>(), grad_out.data_ptr<float>(),
      lse.data_ptr<float>(), delta.data_ptr<float>(), grad_q.data_ptr<float>(), Tq, Tk, D, scale,
      causal, drop);
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
