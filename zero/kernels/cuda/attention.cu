// Flash attention forward on the Tensor Cores: one block per query tile streams the
// keys and values through shared memory with an online softmax, writing the output and
// one logsumexp per query row; nothing of size [Tq, Tk] is stored. The same forward in
// plain FP32, one thread per query row, is attention_reference.cu; Note [Flash
// attention] in attention.cuh explains the tiles and lists the parts this kernel is built
// from. The backward is attention_backward.cu.
#include <cmath>

#include "zero/kernels/cuda/attention.cuh"
#include "zero/kernels/cuda/attention_simt.cuh"
#include "zero/kernels/cuda/attention_wgmma.h"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {
namespace {

using namespace cuda::flash;

// ---------------------------------------------------------------------------------
// Kernel. grid = (B * H, query tiles of 64 kX rows), the last tile first; block =
// kThreads. Warp w owns kX 16-row blocks of the tile (kX 1 or 2, Note [Two row blocks a
// warp]), rows q0 + 16 (kX w + x) ... for x < kX; its thread (g, t) holds rows
// 2g and 2g + 1 of each (Q is loaded in pair order, Note [Attention dropout squares]).

// Up to kD = 64 a warp keeps its query rows in registers, read once from shared memory,
// and the query tile needs no shared memory of its own after that: four tiles instead
// of five. In TF32 mode the registers allow three blocks an SM; the split operands of
// 3xtf32 and the FP32 lines need more (ptxas spills at three), so those run two.
template <int kD>
constexpr bool kQueryInRegisters = kD <= 64;

// Note [Two row blocks a warp]
// A warp's products read their B operands (K in S = Q K^T, V in P V) from shared memory,
// and with 16 query rows a warp each B fragment feeds one or two mma.sync: the 16-bit
// forward issued about as many shared-memory reads as products, on top of the softmax's
// per-score work. With two 16-row blocks a warp (a 128-query tile over four warps, the
// shape FlashAttention-2 uses at these head sizes) each fragment feeds twice the
// products, the per-tile costs (the copies, the barriers, the loop) are spread over twice
// the scores, and the two blocks' softmax steps are independent work the scheduler can
// interleave. The price is registers: twice the scores and accumulators, 2 blocks an SM
// instead of 3. Only the 16-bit products at kD <= 64 take it (kTwoBlocks): their
// operands are small enough to hold. With dropout, whose Philox rounds need registers of
// their own, the launcher keeps one block a warp (docs/speed_notes.md, item 48).
template <int kD, Arith kA>
constexpr bool kTwoBlocks = kSixteenBit<kA> && kQueryInRegisters<kD>;
template <int kD, Arith kA, int kX>
constexpr int kForwardBlocks =
    kX == 1 && kQueryInRegisters<kD> && (kA == Arith::kTf32 || kSixteenBit<kA>) ? 3 : 2;
template <int kD>
constexpr int kForwardTiles = kQueryInRegisters<kD> ? 4 : 5;

// Two neighbouring elements, stored as one 4- or 8-byte write.
template <typename E>
struct alignas(2 * sizeof(E)) Two {
  E v[2];
};

template <int kD, Arith kA, int kX>
__global__ void __launch_bounds__(kThreads, (kForwardBlocks<kD, kA, kX>)) attention_forward_kernel(
    Src<kA> q, Src<kA> k, Src<kA> v, Dst<kA> out, float* lse, int H, int Tq, int Tk, int D,
    float score_scale, bool causal, bool vectors, bool pairs, AttentionDropout drop) {
  drop = drop.shifted();
  using E = Element<kA>;
  constexpr int kQT = kTile * kX;  // rows a block
  E* const smem = shared_tiles<E>();
  // The key and value tiles of buffers 0 and 1, ks(b) and vs(b): one pair in use, the
  // other loading. The query tile qs (kQT rows) is a fifth tile, or passes through
  // buffer 1 on its way to registers.
  constexpr int kSize = kTile * kLd<kD, E>;
  const auto ks = [&](int b) { return smem + 2 * b * kSize; };
  const auto vs = [&](int b) { return smem + (2 * b + 1) * kSize; };
  E* qs = kQueryInRegisters<kD> ? ks(1) : smem + 4 * kSize;
  const int64_t bh = blockIdx.x;
  const int q0 = (gridDim.y - 1 - blockIdx.y) * kQT, w0 = threadIdx.x / 32 * 16 * kX;
  const int g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
  int rows[kX][2];  // this thread's two queries in each of the warp's blocks
#pragma unroll
  for (int x = 0; x < kX; ++x) rows[x][0] = q0 + w0 + 16 * x + 2 * g, rows[x][1] = rows[x][0] + 1;
  const TileStream<kD, E> keys(k.slice(bh, H), k.row, Tk, D, vectors);
  const TileStream<kD, E> values(v.slice(bh, H), v.row, Tk, D, vectors);
#pragma unroll
  for (int x = 0; x < kX; ++x) {
    load_tile<kD>(qs + x * kSize, q.slice(bh, H), q.row, q0 + x * kTile, Tq, D, vectors, true);
  }
  keys.load(ks(0), 0);
  values.load(vs(0), 0);
  commit_tiles();
  // The warp's query rows as A operands, read once and used against every key tile (when
  // kQueryInRegisters): columns kk.. of block x as TF32-layout fragments in qf[x][kk / 8],
  // or as 16-bit operands in q16[x][kk / 16].
  constexpr bool kQf = kQueryInRegisters<kD> && !kSixteenBit<kA>;
  constexpr bool kQ16 = kQueryInRegisters<kD> && kSixteenBit<kA>;
  float qf[kX][kQf ? kD / 8 : 1][4];
  Packed16<4> q16[kX][kQ16 ? kD / 16 : 1];
  if constexpr (kQueryInRegisters<kD>) {
    wait_tiles<0>();
    __syncthreads();
#pragma unroll
    for (int x = 0; x < kX; ++x) {
#pragma unroll
      for (int kk = 0; kk < kD; kk += kK<kA>) {
        if constexpr (kQ16) {
          q16[x][kk / 16] = a_rows16<kD>(qs, w0 + 16 * x, kk);
        } else {
          a_rows<kD>(qf[x][kk / 8], qs, w0 + 16 * x, kk);
        }
      }
    }
    // Buffer 1 takes the next key tile only after the loop's first barrier: by then every
    // warp has its rows.
  }

  float o[kX][kD / 8][4] = {};  // 16 x kD a block: columns 8n.. in o[x][n]
  // The running maximum and sum of each of the thread's rows.
  float m[kX][2], l[kX][2];
#pragma unroll
  for (int x = 0; x < kX; ++x) m[x][0] = m[x][1] = -INFINITY, l[x][0] = l[x][1] = 0.0f;
  // Keys past the tile's last query are masked for every row: skip them.
  const int k_end = causal ? ::min(Tk, q0 + kQT + (Tk - Tq)) : Tk;
  // One barrier a key tile (Note [One barrier a tile] in attention_tiles.cuh).
  for (int k0 = 0, buf = 0; k0 < k_end; k0 += kTile, buf ^= 1) {
    wait_tiles<0>();
    __syncthreads();  // tile k0 is in for every warp; every warp is done with the last one
    if (k0 + kTile < k_end) {
      keys.load(ks(buf ^ 1), k0 + kTile);
      values.load(vs(buf ^ 1), k0 + kTile);
    }
    commit_tiles();
    // Under the causal mask the tile's first warps may see none of these keys: they
    // skip to the next tile.
    if (!causal || k0 <= q0 + w0 + 16 * kX - 1 + (Tk - Tq)) {
      float s[kX][kSteps][4] = {};  // 16 x 64 raw scores q . k a block: keys k0 + 8j.. in s[x][j]
#pragma unroll
      for (int kk = 0; kk < kD; kk += kK<kA>) {
        Operand<kA, 4> fa[kX];
#pragma unroll
        for (int x = 0; x < kX; ++x) {
          if constexpr (kQ16) {
            fa[x] = q16[x][kk / 16];
          } else if constexpr (kSixteenBit<kA>) {
            fa[x] = a_rows16<kD>(qs, w0 + 16 * x, kk);
          } else {
            float a[4];
            if constexpr (kQf) {
              for (int e = 0; e < 4; ++e) a[e] = qf[x][kk / 8][e];
            } else {
              a_rows<kD>(a, qs, w0 + 16 * x, kk);
            }
            fa[x] = operand<kA>(a);
          }
        }
        times_rows<kD, kA, kX>(s, fa, ks(buf), kk);
      }
      // Online softmax of the thread's rows (s[x][j][e] is row rows[x][e / 2]); the other
      // 48 columns of a row are held by the 3 other threads of its quad (Note [Online
      // softmax in registers]). Then O += P V, P's accumulator used as the A operand as
      // it is (Note [Tensor-Core fragments]).
#pragma unroll
      for (int x = 0; x < kX; ++x) {
        float m_use[2], alpha[2];
        softmax_max_step<kA>(s[x], m[x], m_use, alpha, rows[x], k0, Tq, Tk, causal,
                             tile_masked(q0 + w0 + 16 * x, k0, Tq, Tk, causal, 16),
                             score_scale);
        softmax_sum_step<kA>(s[x], l[x], m_use, alpha, rows[x], k0, bh, score_scale, drop);
        softmax_rescale<kD>(o[x], alpha);
      }
      times_tile<kD, kA, kX>(o, s, vs(buf));
    }
  }
  E* op = out.slice(bh, H);
#pragma unroll
  for (int x = 0; x < kX; ++x) {
#pragma unroll
    for (int n = 0; n < kD / 8; ++n) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {  // row rows[x][h], columns d and d + 1
        const int i = rows[x][h], d = 8 * n + 2 * t;
        if (i >= Tq || d >= D) continue;
        const float a = o[x][n][2 * h] / l[x][h], b = o[x][n][2 * h + 1] / l[x][h];
        E* at = op + i * out.row + d;
        if (pairs) {
          *reinterpret_cast<Two<E>*>(at) = Two<E>{{convert_value<E>(a), convert_value<E>(b)}};
        } else {
          at[0] = convert_value<E>(a);
          if (d + 1 < D) at[1] = convert_value<E>(b);
        }
      }
    }
    if (t == 0) {
      for (int h = 0; h < 2; ++h) {
        if (rows[x][h] < Tq) lse[bh * Tq + rows[x][h]] = natural_lse<kA>(m[x][h], l[x][h]);
      }
    }
  }
}

// ---------------------------------------------------------------------------------
// Launcher

template <int kD, Arith kA, int kX>
void forward(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
             const AttentionDropout& drop, const Tensor& out, const Tensor& lse) {
  const int64_t bh = q.size(0) * q.size(1);
  const int H = static_cast<int>(q.size(1));
  const int Tq = static_cast<int>(q.size(2)), Tk = static_cast<int>(k.size(2));
  const int D = static_cast<int>(q.size(3));
  const size_t smem = smem_bytes<kD, kA>(kForwardTiles<kD>, 0);
  const auto kernel = attention_forward_kernel<kD, kA, kX>;
  ZERO_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  constexpr int kQueryTile = kTile * kX;
  const dim3 grid(static_cast<unsigned>(bh), static_cast<unsigned>((Tq + kQueryTile - 1) /
                                                                   kQueryTile));
  using E = Element<kA>;
  kernel<<<grid, kThreads, smem, cuda::current_stream()>>>(
      in_view<E>(q), in_view<E>(k), in_view<E>(v), out_view<E>(out), lse.data_ptr<float>(), H,
      Tq, Tk, D, exponent_scale<kA>(1.0f / std::sqrt(static_cast<float>(D))), causal,
      vectors_ok(D, {&q, &k, &v}), vectors_ok(D, {&out}, 2 * dtype_size(out.dtype())), drop);
  ZERO_CUDA_LAUNCH_CHECK();
}

void attention_forward_cuda(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                            float dropout_p, uint64_t seed, uint64_t offset, const Tensor& out,
                            const Tensor& lse) {
  cuda::set_device(q);
  if (q.size(0) * q.size(1) * q.size(2) == 0) return;
  AttentionDropout drop(dropout_p, seed, offset, q.size(2), k.size(2));
  drop.shift = cuda::philox_shift();
  // On an sm_90 GPU the 16-bit D = 64 forward runs on warpgroup products (Note
  // [Attention on warpgroups] in sm90/attention_forward_wgmma.cu), with dropout too.
  if (attention_forward_wgmma(q, k, v, causal, drop, out, lse)) return;
  // FP32 in the ieee mode, heads of up to 64, on register tiles (Note [FP32 attention on
  // register tiles] in attention_backward_simt.cu).
  if (matmul_precision() == MatmulPrecision::kIeee &&
      attention_forward_simt(q, k, v, causal, drop, out, lse)) {
    return;
  }
  // 16-bit operands go in as they are: the tiles hold them (Note [16-bit fragments]).
  dispatch(q.size(3), q.dtype(), [&](auto width, auto arith) {
    constexpr int kD = decltype(width)::value;
    constexpr Arith kA = decltype(arith)::value;
    if constexpr (kTwoBlocks<kD, kA>) {
      if (drop.p == 0.0f) return forward<kD, kA, 2>(q, k, v, causal, drop, out, lse);
    }
    forward<kD, kA, 1>(q, k, v, causal, drop, out, lse);
  });
}

}  // namespace

ZERO_REGISTER_KERNEL(attention_forward, kCuda, attention_forward_cuda);

}  // namespace zero::ops
