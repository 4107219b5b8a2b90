// The exact-FP32 attention backward on the FP32 units with register tiles, for heads of
// up to 64: the dK, dV kernel of attention_backward.cu (which also adds dQ's shares into
// its FP32 sum), for Arith::kFp32 only. The forward is attention_forward_simt.cu.
//
// Note [FP32 attention on register tiles]
// The Tensor-Core kernels give each thread a 2 x 2 corner of every 8 x 8 product (Note
// [Tensor-Core fragments]). Their kFp32 instance keeps that layout and multiplies with
// FMAs (Note [Tensor Cores in FP32]): each thread then loads one or two shared-memory
// values for every four to eight FMAs, and on an H100 GPT-2's FP32 backward ran at about
// 14 TFLOP/s, a fifth of the FP32 units' peak. This kernel lays the products out as a
// SIMT GEMM does. 256 threads make each 64 x 64 product together, thread (ty, tx) =
// (tid / 16, tid % 16) a 4 x 4 tile of it:
//
//   S^T = K Q^T, dP^T = V dO^T    sums over d, which runs along a row of every operand:
//                                 keys ty + 16i by queries tx + 16j, four d at a time,
//                                 from 16-byte loads of 4 key rows and 4 query rows;
//   dV += Z^T dO, dK += dS^T Q,   sums over queries (keys for dQ), which run down the
//   dQ = dS K                     operands' rows: keys (queries) 4ty.. by columns 4tx..,
//                                 one query (key) at a time, 16-byte loads along a row.
//
// So each thread makes 16 independent sums from 8 loads of 16 bytes (S^T, dP^T: 128
// FMAs a step of four d) or 6 (the three products after: 48 FMAs a query). The first two
// products' layout is not the last three's, so Z^T = P^T F and dS^T pass through shared
// memory, as [query][key] tiles for dV and dK and dS as [key][query] for dQ. With rows
// 68 floats apart a warp's 16 consecutive rows fall on distinct banks two 128-byte
// wavefronts at a time, and the 2 rows its two values of ty name are read once for all
// its lanes. Nine 64 x 68 tiles (K, V, two Q, two dO, the three above) take 157 KB: one
// block of 8 warps an SM. A thread's 16 probabilities lie in 16 different dropout
// squares, which it shares with three other lanes (Note [Dropout squares shared by four
// lanes] in attention_simt.cuh).
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "zero/kernels/cuda/attention_simt.cuh"

namespace zero::ops {

bool cuda::simt::applies(int64_t D) {
  static const bool wanted = [] {
    const char* value = std::getenv("ZERO_ATTENTION_SIMT");
    return value == nullptr || std::strcmp(value, "0") != 0;
  }();
  return wanted && D <= kWidth;
}

namespace {

using namespace cuda::flash;
using namespace cuda::simt;

// p[0..3] += v, an FP32 sum in global memory, 16-byte aligned.
__device__ inline void atomic_add4(float* p, float4 v) {
#if __CUDA_ARCH__ >= 900
  atomicAdd(reinterpret_cast<float4*>(p), v);  // one vector atomic
#else
  atomicAdd(p, v.x), atomicAdd(p + 1, v.y), atomicAdd(p + 2, v.z), atomicAdd(p + 3, v.w);
#endif
}

// grid = (B * H, key tiles); block = 256 threads. Writes dK (times `scale`) and dV of
// keys k0.. and adds dQ's shares into dq_sum (rows dq_ld floats apart, columns past
// dq_ld not written). stats holds each query's {lse, delta}.
__global__ void __launch_bounds__(kSimtThreads, 1) attention_backward_simt_kernel(
    Src<Arith::kFp32> q, Src<Arith::kFp32> k, Src<Arith::kFp32> v, Src<Arith::kFp32> grad_out,
    const float2* stats, Dst<Arith::kFp32> grad_k, Dst<Arith::kFp32> grad_v, float* dq_sum,
    int dq_ld, int H, int Tq, int Tk, int D, float scale, bool causal, bool vectors,
    AttentionDropout drop) {
  drop = drop.shifted();
  float* const smem = shared_tiles<float>();
  float* const ks = smem;
  float* const vs = smem + kTileFloats;
  const auto qs = [&](int b) { return smem + (2 + b) * kTileFloats; };
  const auto dos = [&](int b) { return smem + (4 + b) * kTileFloats; };
  float* const zq = smem + 6 * kTileFloats;  // Z^T as [query][key]
  float* const sq = smem + 7 * kTileFloats;  // dS^T as [query][key]
  float* const sk = smem + 8 * kTileFloats;  // dS^T as [key][query]
  const auto stats_s = [&](int b) {
    return reinterpret_cast<float2*>(smem + 9 * kTileFloats) + b * kTile;
  };
  const int64_t bh = blockIdx.x;
  const int k0 = blockIdx.y * kTile, ty = threadIdx.x / 16, tx = threadIdx.x % 16;
  const float* qp = q.slice(bh, H);
  const float* gp = grad_out.slice(bh, H);
  stats += bh * Tq, dq_sum += bh * Tq * dq_ld;
  const auto load_queries = [&](int q0, int b) {
    load_rows(qs(b), qp, q.row, q0, Tq, D, vectors);
    load_rows(dos(b), gp, grad_out.row, q0, Tq, D, vectors);
    if (threadIdx.x < kTile) {
      const int i = q0 + threadIdx.x;
      // As in load_rows: a source size of 0 fills the 8 bytes with zeros.
      asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(
                       shared_address(stats_s(b) + threadIdx.x)),
                   "l"(stats + (i < Tq ? i : 0)), "r"(i < Tq ? 8 : 0));
    }
  };
  // Queries before k0 - (Tk - Tq) see none of these keys under the causal mask. The start
  // is rounded down to an even row, so that the tiles' dropout squares are whole (Note
  // [Dropout squares shared by four lanes]); the extra row is masked.
  const int q_begin = causal ? ::max(0, k0 - (Tk - Tq)) & ~1 : 0;
  load_rows(ks, k.slice(bh, H), k.row, k0, Tk, D, vectors);
  load_rows(vs, v.slice(bh, H), v.row, k0, Tk, D, vectors);
  if (q_begin < Tq) load_queries(q_begin, 0);
  commit_tiles();
  float dk[4][4] = {}, dv[4][4] = {};  // keys k0 + 4ty + r, columns 4tx + c
  // One barrier a query tile besides dS's (Note [One barrier a tile] in attention_tiles.cuh).
  for (int q0 = q_begin, buf = 0; q0 < Tq; q0 += kTile, buf ^= 1) {
    wait_tiles<0>();
    __syncthreads();  // tile q0 is in; every thread is done with the last tile's products
    if (q0 + kTile < Tq) load_queries(q0 + kTile, buf ^ 1);
    commit_tiles();
    const float* const qt = qs(buf);
    const float* const dot = dos(buf);
    // S^T and dP^T for keys ty + 16i, queries tx + 16j.
    float st[4][4] = {}, dpt[4][4] = {};
#pragma unroll 2
    for (int d = 0; d < kWidth; d += 4) {
      float4 kr[4], vr[4], qr[4], gr[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        kr[i] = row4(ks + (ty + 16 * i) * kRow + d);
        vr[i] = row4(vs + (ty + 16 * i) * kRow + d);
        qr[i] = row4(qt + (tx + 16 * i) * kRow + d);
        gr[i] = row4(dot + (tx + 16 * i) * kRow + d);
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) {
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          st[i][j] = dot4(kr[i], qr[j], st[i][j]);
          dpt[i][j] = dot4(vr[i], gr[j], dpt[i][j]);
        }
      }
    }
    // Z^T = P^T F and dS^T = P^T (dP^T F - delta), P^T = exp(S^T scale - lse), 0 where
    // the mask or the ends hide the score; into shared memory for the products after.
    const bool masked = tile_masked(q0, k0, Tq, Tk, causal);
    const unsigned kept = drop.p != 0.0f ? kept_bits<false>(drop, bh, k0, q0) : ~0u;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int key = ty + 16 * i, query = tx + 16 * j;
        const float2 row = stats_s(buf)[query];  // {lse, delta}
        float p = expf(fmaf(st[i][j], scale, -row.x));
        if (masked && !visible(q0 + query, k0 + key, Tq, Tk, causal)) p = 0.0f;
        const float f = drop.p == 0.0f ? 1.0f : (kept >> (4 * j + i) & 1u) ? drop.keep : 0.0f;
        const float ds = p * (dpt[i][j] * f - row.y);
        zq[query * kRow + key] = p * f;
        sq[query * kRow + key] = ds;
        sk[key * kRow + query] = ds;
      }
    }
    __syncthreads();
    // dV += Z^T dO, dK += dS^T Q (keys 4ty + r), dQ = dS K (queries 4ty + r); columns 4tx + c.
    float dq[4][4] = {};
#pragma unroll 4
    for (int c = 0; c < kTile; ++c) {
      const int a = c * kRow + 4 * ty, b = c * kRow + 4 * tx;
      outer4(dv, row4(zq + a), row4(dot + b));
      outer4(dk, row4(sq + a), row4(qt + b));
      outer4(dq, row4(sk + a), row4(ks + b));
    }
    if (4 * tx < dq_ld) {
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const int i = q0 + 4 * ty + r;
        if (i >= Tq) continue;
        atomic_add4(dq_sum + (int64_t)i * dq_ld + 4 * tx,
                    make_float4(dq[r][0], dq[r][1], dq[r][2], dq[r][3]));
      }
    }
  }
  float* const gk = grad_k.slice(bh, H);
  float* const gv = grad_v.slice(bh, H);
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int key = k0 + 4 * ty + r;
    if (key >= Tk) continue;
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const int d = 4 * tx + c;
      if (d >= D) continue;
      gk[key * grad_k.row + d] = dk[r][c] * scale;
      gv[key * grad_v.row + d] = dv[r][c];
    }
  }
}

}  // namespace

bool attention_backward_simt(const Tensor& q, const Tensor& k, const Tensor& v,
                             const Tensor& grad_out, const float* stats, float* dq_sum, int dq_ld,
                             bool causal, const AttentionDropout& drop, const Tensor& grad_k,
                             const Tensor& grad_v) {
  const int D = static_cast<int>(q.size(3));
  if (q.dtype() != DataType::F32 || !cuda::simt::applies(D) || dq_ld % 4 != 0) return false;
  const int64_t bh = q.size(0) * q.size(1);
  const int H = static_cast<int>(q.size(1));
  const int Tq = static_cast<int>(q.size(2)), Tk = static_cast<int>(k.size(2));
  const size_t smem = sizeof(float) * (9 * kTileFloats + 2 * 2 * kTile);
  ZERO_CUDA_CHECK(cudaFuncSetAttribute(attention_backward_simt_kernel,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  const dim3 grid(static_cast<unsigned>(bh), tiles(Tk));
  attention_backward_simt_kernel<<<grid, kSimtThreads, smem, cuda::current_stream()>>>(
      in_view(q), in_view(k), in_view(v), in_view(grad_out),
      reinterpret_cast<const float2*>(stats), out_view(grad_k), out_view(grad_v), dq_sum, dq_ld,
      H, Tq, Tk, D, 1.0f / std::sqrt(static_cast<float>(D)), causal,
      vectors_ok(D, {&q, &k, &v, &grad_out}), drop);
  ZERO_CUDA_LAUNCH_CHECK();
  return true;
}

}  // namespace zero::ops
