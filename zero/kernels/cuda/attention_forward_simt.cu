// The exact-FP32 attention forward on register tiles, for heads of up to 64 (Note [FP32
// attention on register tiles] in attention_backward_simt.cu): one block of 256 threads
// per 64 queries streams the keys and values through shared memory with the online
// softmax of Note [Flash attention] (attention.cuh), in base e and FP32 throughout.
//
// S = Q K^T sums over d along rows of both operands: thread (ty, tx) makes queries
// ty + 16i against keys tx + 16j, so a query row's 64 scores lie with the 16 threads of
// one half-warp, whose maximum and sum take four shuffles. O += (P F) V sums over keys,
// down V's rows: the thread makes queries 4ty + r by columns 4tx + c, so P F passes
// through shared memory as [key][query] and each row's rescaling factor beside it.
#include <cmath>

#include "zero/kernels/cuda/attention_simt.cuh"

namespace zero::ops {
namespace {

using namespace cuda::flash;
using namespace cuda::simt;

// The maximum and the sum of x over the 16 threads of this thread's half-warp.
__device__ inline float half_warp_max(float x) {
#pragma unroll
  for (int lane = 1; lane < 16; lane *= 2) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, lane));
  return x;
}
__device__ inline float half_warp_sum(float x) {
#pragma unroll
  for (int lane = 1; lane < 16; lane *= 2) x += __shfl_xor_sync(0xffffffffu, x, lane);
  return x;
}

// grid = (B * H, query tiles, the last first); block = 256 threads. Writes the output
// rows q0.. and their natural logsumexp.
__global__ void __launch_bounds__(kSimtThreads, 2) attention_forward_simt_kernel(
    Src<Arith::kFp32> q, Src<Arith::kFp32> k, Src<Arith::kFp32> v, Dst<Arith::kFp32> out,
    float* lse, int H, int Tq, int Tk, int D, float scale, bool causal, bool vectors,
    AttentionDropout drop) {
  drop = drop.shifted();
  float* const smem = shared_tiles<float>();
  float* const qs = smem;
  const auto ks = [&](int b) { return smem + (1 + 2 * b) * kTileFloats; };
  const auto vs = [&](int b) { return smem + (2 + 2 * b) * kTileFloats; };
  float* const pk = smem + 5 * kTileFloats;     // P F as [key][query]
  float* const alpha_s = smem + 6 * kTileFloats;  // each query's rescaling factor
  float* const l_s = alpha_s + kTile;             // each query's sum, at the end
  const int64_t bh = blockIdx.x;
  const int q0 = (gridDim.y - 1 - blockIdx.y) * kTile;
  const int ty = threadIdx.x / 16, tx = threadIdx.x % 16;
  const float* kp = k.slice(bh, H);
  const float* vp = v.slice(bh, H);
  load_rows(qs, q.slice(bh, H), q.row, q0, Tq, D, vectors);
  // Keys past the tile's last query are masked for every row: skip them.
  const int k_end = causal ? ::min(Tk, q0 + kTile + (Tk - Tq)) : Tk;
  if (k_end > 0) {
    load_rows(ks(0), kp, k.row, 0, Tk, D, vectors);
    load_rows(vs(0), vp, v.row, 0, Tk, D, vectors);
  }
  commit_tiles();
  float o[4][4] = {};  // queries q0 + 4ty + r, columns 4tx + c
  float m[4], l[4];    // queries ty + 16i: the running maximum, this thread's share of the sum
#pragma unroll
  for (int i = 0; i < 4; ++i) m[i] = -INFINITY, l[i] = 0.0f;
  for (int k0 = 0, buf = 0; k0 < k_end; k0 += kTile, buf ^= 1) {
    wait_tiles<0>();
    __syncthreads();  // tile k0 is in; every thread is done with the last tile's products
    if (k0 + kTile < k_end) {
      load_rows(ks(buf ^ 1), kp, k.row, k0 + kTile, Tk, D, vectors);
      load_rows(vs(buf ^ 1), vp, v.row, k0 + kTile, Tk, D, vectors);
    }
    commit_tiles();
    const float* const kt = ks(buf);
    const float* const vt = vs(buf);
    float s[4][4] = {};  // queries ty + 16i, keys tx + 16j
#pragma unroll 1
    for (int d = 0; d < kWidth; d += 4) {
      float4 qr[4], kr[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        qr[i] = row4(qs + (ty + 16 * i) * kRow + d);
        kr[i] = row4(kt + (tx + 16 * i) * kRow + d);
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) {
#pragma unroll
        for (int j = 0; j < 4; ++j) s[i][j] = dot4(qr[i], kr[j], s[i][j]);
      }
    }
    const bool masked = tile_masked(q0, k0, Tq, Tk, causal);
    // Note [Dropout squares shared by four lanes]
    const unsigned kept = drop.p != 0.0f ? kept_bits<true>(drop, bh, q0, k0) : ~0u;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int query = ty + 16 * i;
      float tile_max = -INFINITY;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const bool seen = !masked || visible(q0 + query, k0 + tx + 16 * j, Tq, Tk, causal);
        if (!seen) s[i][j] = -INFINITY;
        tile_max = fmaxf(tile_max, s[i][j]);
      }
      // The scale is positive, so the maximum of the scaled scores is the scaled maximum.
      const float m_new = fmaxf(m[i], half_warp_max(tile_max) * scale);
      const float m_use = m_new == -INFINITY ? 0.0f : m_new;  // a row that has seen no key
      const float alpha = expf(m[i] - m_use);
      m[i] = m_new;
      float sum = 0.0f;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int key = tx + 16 * j;
        const float p = expf(fmaf(s[i][j], scale, -m_use));
        sum += p;  // the sum takes the undropped P; V meets P F
        const float f = drop.p == 0.0f ? 1.0f : (kept >> (4 * j + i) & 1u) ? drop.keep : 0.0f;
        pk[key * kRow + query] = p * f;
      }
      l[i] = l[i] * alpha + sum;
      if (tx == 0) alpha_s[query] = alpha;
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const float alpha = alpha_s[4 * ty + r];
#pragma unroll
      for (int c = 0; c < 4; ++c) o[r][c] *= alpha;
    }
#pragma unroll 4
    for (int key = 0; key < kTile; ++key) {
      outer4(o, row4(pk + key * kRow + 4 * ty), row4(vt + key * kRow + 4 * tx));
    }
  }
  // Each row's sum from its 16 threads' shares (each rescaled alike at every tile).
#pragma unroll
  for (int i = 0; i < 4; ++i) l[i] = half_warp_sum(l[i]);
  if (tx == 0) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int query = ty + 16 * i;
      l_s[query] = l[i];
      if (q0 + query < Tq) lse[bh * Tq + q0 + query] = m[i] + logf(l[i]);
    }
  }
  __syncthreads();
  float* const op = out.slice(bh, H);
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int query = 4 * ty + r;
    if (q0 + query >= Tq) continue;
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const int d = 4 * tx + c;
      if (d < D) op[(q0 + query) * out.row + d] = o[r][c] / l_s[query];
    }
  }
}

}  // namespace

bool attention_forward_simt(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                            const AttentionDropout& drop, const Tensor& out, const Tensor& lse) {
  const int D = static_cast<int>(q.size(3));
  if (q.dtype() != DataType::F32 || !cuda::simt::applies(D)) return false;
  const int64_t bh = q.size(0) * q.size(1);
  const int H = static_cast<int>(q.size(1));
  const int Tq = static_cast<int>(q.size(2)), Tk = static_cast<int>(k.size(2));
  const size_t smem = sizeof(float) * (6 * kTileFloats + 2 * kTile);
  ZERO_CUDA_CHECK(cudaFuncSetAttribute(attention_forward_simt_kernel,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  const dim3 grid(static_cast<unsigned>(bh), tiles(Tq));
  attention_forward_simt_kernel<<<grid, kSimtThreads, smem, cuda::current_stream()>>>(
      in_view(q), in_view(k), in_view(v), out_view(out), lse.data_ptr<float>(), H, Tq, Tk, D,
      1.0f / std::sqrt(static_cast<float>(D)), causal, vectors_ok(D, {&q, &k, &v}), drop);
  ZERO_CUDA_LAUNCH_CHECK();
  return true;
}

}  // namespace zero::ops
