// Flash attention forward on the Tensor Cores: one block per 64-query tile streams the
// keys and values through shared memory with an online softmax, writing the output and
// one logsumexp per query row; nothing of size [Tq, Tk] is stored. The same forward in
// plain FP32, one thread per query row, is attention_reference.cu; Note [Flash
// attention] in attention.cuh explains the tiles and lists the parts this kernel is built
// from. The backward is attention_backward.cu.
#include <cmath>

#include "zero/kernels/cuda/attention.cuh"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {
namespace {

using namespace cuda::flash;

// ---------------------------------------------------------------------------------
// Kernel. grid = (B * H, query tiles), the last tile first; block = kThreads. Warp w
// owns query rows q0 + 16 w ... of the tile; its thread (g, t) holds rows 2g and 2g + 1
// of those (Q is loaded in pair order, Note [Attention dropout squares]).

// Up to kD = 64 a warp keeps its query rows in registers, read once from shared memory,
// and the query tile needs no shared memory of its own after that: four tiles instead
// of five, so three blocks fit on an SM. In TF32 mode the registers allow three blocks
// too, as do the 16-bit products' smaller operands; the split operands of 3xtf32 and
// the FP32 lines need more (ptxas spills at three), so those run two.
template <int kD>
constexpr bool kQueryInRegisters = kD <= 64;
template <int kD, Arith kA>
constexpr int kForwardBlocks =
    kQueryInRegisters<kD> && (kA == Arith::kTf32 || kSixteenBit<kA>) ? 3 : 2;
template <int kD>
constexpr int kForwardTiles = kQueryInRegisters<kD> ? 4 : 5;

template <int kD, Arith kA>
__global__ void __launch_bounds__(kThreads, (kForwardBlocks<kD, kA>)) attention_forward_kernel(
    Src<kA> q, Src<kA> k, Src<kA> v, Dst<kA> out, float* lse, int H, int Tq, int Tk, int D,
    float score_scale, bool causal, bool vectors, AttentionDropout drop) {
  using E = Element<kA>;
  E* const smem = shared_tiles<E>();
  // The key tiles ks(0), ks(1) and the value tiles vs(0), vs(1): one of each pair in
  // use, the other loading. The query tile qs is a fifth tile, or passes through ks(1)
  // on its way to registers.
  constexpr int kSize = kTile * kLd<kD, E>;
  const auto ks = [&](int b) { return smem + b * kSize; };
  const auto vs = [&](int b) { return smem + (2 + b) * kSize; };
  E* qs = kQueryInRegisters<kD> ? ks(1) : smem + 4 * kSize;
  const int64_t bh = blockIdx.x;
  const int q0 = (gridDim.y - 1 - blockIdx.y) * kTile, r0 = threadIdx.x / 32 * 16;
  const int g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
  const int rows[2] = {q0 + r0 + 2 * g, q0 + r0 + 2 * g + 1};  // this thread's two queries
  const auto* kp = k.slice(bh, H);
  const auto* vp = v.slice(bh, H);
  load_tile<kD>(qs, q.slice(bh, H), q.row, q0, Tq, D, vectors, true);
  load_tile<kD>(ks(0), kp, k.row, 0, Tk, D, vectors, false);
  load_tile<kD>(vs(0), vp, v.row, 0, Tk, D, vectors, false);
  commit_tiles();
  // The warp's 16 query rows as A operands, read once and used against every key tile
  // (when kQueryInRegisters): columns kk.. as TF32-layout fragments in qf[kk / 8], or
  // as 16-bit operands in q16[kk / 16].
  constexpr bool kQf = kQueryInRegisters<kD> && !kSixteenBit<kA>;
  constexpr bool kQ16 = kQueryInRegisters<kD> && kSixteenBit<kA>;
  float qf[kQf ? kD / 8 : 1][4];
  Packed16<4> q16[kQ16 ? kD / 16 : 1];
  if constexpr (kQueryInRegisters<kD>) {
    wait_tiles<0>();
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kD; kk += kK<kA>) {
      if constexpr (kQ16) {
        q16[kk / 16] = a_rows16<kD>(qs, r0, kk);
      } else {
        a_rows<kD>(qf[kk / 8], qs, r0, kk);
      }
    }
    __syncthreads();  // every warp has its rows: ks(1) may take the next key tile
  }

  float o[kD / 8][4] = {};  // 16 x kD: columns 8n.. in o[n]
  // The running maximum and sum of each of the thread's two rows.
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  // Keys past the tile's last query are masked for every row: skip them.
  const int k_end = causal ? ::min(Tk, q0 + kTile + (Tk - Tq)) : Tk;
  for (int k0 = 0, buf = 0; k0 < k_end; k0 += kTile, buf ^= 1) {
    // Start loading the next tile into the other buffer, then wait for this one.
    next_key_tiles<kD>(ks(buf ^ 1), vs(buf ^ 1), kp, k.row, vp, v.row, k0 + kTile, k_end, Tk,
                       D, vectors);
    __syncthreads();
    float s[kSteps][4] = {};  // 16 x 64 raw scores q . k: keys k0 + 8j.. in s[j]
#pragma unroll
    for (int kk = 0; kk < kD; kk += kK<kA>) {
      Operand<kA, 4> fa;
      if constexpr (kQ16) {
        fa = q16[kk / 16];
      } else if constexpr (kSixteenBit<kA>) {
        fa = a_rows16<kD>(qs, r0, kk);
      } else {
        float a[4];
        if constexpr (kQf) {
          for (int e = 0; e < 4; ++e) a[e] = qf[kk / 8][e];
        } else {
          a_rows<kD>(a, qs, r0, kk);
        }
        fa = operand<kA>(a);
      }
      times_rows<kD, kA>(s, fa, ks(buf), kk);
    }
    // Online softmax of the thread's two rows (s[j][e] is row rows[e / 2]); the other
    // 48 columns of a row are held by the 3 other threads of its quad (Note [Online
    // softmax in registers]). Then O += P V, P's accumulator used as the A operand as it
    // is (Note [Tensor-Core fragments]).
    float m_use[2], alpha[2];
    softmax_max_step<kA>(s, m, m_use, alpha, rows, k0, Tq, Tk, causal,
                         tile_masked(q0, k0, Tq, Tk, causal), score_scale);
    softmax_sum_step<kA>(s, l, m_use, alpha, rows, k0, bh, score_scale, drop);
    softmax_rescale<kD>(o, alpha);
    times_tile<kD, kA>(o, s, vs(buf));
    __syncthreads();  // every warp is done with ks(buf), vs(buf): the next load may reuse them
  }
  E* op = out.slice(bh, H);
#pragma unroll
  for (int n = 0; n < kD / 8; ++n) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int i = rows[e / 2], d = 8 * n + 2 * t + e % 2;
      if (i < Tq && d < D) op[i * out.row + d] = convert_value<E>(o[n][e] / l[e / 2]);
    }
  }
  if (t == 0) {
    for (int x = 0; x < 2; ++x) {
      if (rows[x] < Tq) lse[bh * Tq + rows[x]] = natural_lse<kA>(m[x], l[x]);
    }
  }
}

// ---------------------------------------------------------------------------------
// Launcher

template <int kD, Arith kA>
void forward(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
             const AttentionDropout& drop, const Tensor& out, const Tensor& lse) {
  const int64_t bh = q.size(0) * q.size(1);
  const int H = static_cast<int>(q.size(1));
  const int Tq = static_cast<int>(q.size(2)), Tk = static_cast<int>(k.size(2));
  const int D = static_cast<int>(q.size(3));
  const size_t smem = smem_bytes<kD, kA>(kForwardTiles<kD>, 0);
  ZERO_CUDA_CHECK(cudaFuncSetAttribute(attention_forward_kernel<kD, kA>,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  const dim3 grid(static_cast<unsigned>(bh), tiles(Tq));
  using E = Element<kA>;
  attention_forward_kernel<kD, kA><<<grid, kThreads, smem, cuda::current_stream()>>>(
      in_view<E>(q), in_view<E>(k), in_view<E>(v), out_view<E>(out), lse.data_ptr<float>(), H,
      Tq, Tk, D, exponent_scale<kA>(1.0f / std::sqrt(static_cast<float>(D))), causal,
      vectors_ok(D, {&q, &k, &v}), drop);
  ZERO_CUDA_LAUNCH_CHECK();
}

void attention_forward_cuda(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                            float dropout_p, uint64_t seed, uint64_t offset, const Tensor& out,
                            const Tensor& lse) {
  cuda::set_device(q);
  if (q.size(0) * q.size(1) * q.size(2) == 0) return;
  const AttentionDropout drop(dropout_p, seed, offset, q.size(2), k.size(2));
  // 16-bit operands go in as they are: the tiles hold them (Note [16-bit fragments]).
  dispatch(q.size(3), q.dtype(), [&](auto width, auto arith) {
    forward<decltype(width)::value, decltype(arith)::value>(q, k, v, causal, drop, out, lse);
  });
}

}  // namespace

ZERO_REGISTER_KERNEL(attention_forward, kCuda, attention_forward_cuda);

}  // namespace zero::ops
