// Flash attention backward's dK, dV kernel on Hopper's warpgroup products (Note [Warpgroup
// products] in wgmma.cuh), for 16-bit operands at D = 64 without dropout. It replaces
// only the middle kernel of attention_backward.cu: the pass before it (each query's lse
// and delta) and the one after (dQ's FP32 sum scaled and rounded into grad_q) are that
// file's, and so are the formulas (Note [Flash attention] in attention.cuh) and dQ's
// atomic additions (Note [dQ by atomic additions]).
//
// Note [Attention backward on warpgroups]
// A block of two warpgroups owns 128 keys, 64 a group, with K and V resident in shared
// memory, and streams the queries 64 at a time: Q, dO and their (lse, delta) pairs,
// double-buffered with cp.async. For each query tile a group makes
//
//   S^T  = K_g Q^T    and  dP^T = V_g dO^T     four products each, both operands read
//                                                from shared memory (K-major);
//   P^T  = exp(S^T scale - lse),  dS^T = P^T (dP^T - delta)   on the accumulators;
//   dV_g += P^T dO    and  dK_g += dS^T Q      P^T and dS^T packed to 16 bits in place
//                                                as A operands, dO and Q read as MN-major
//                                                B operands from the same tiles;
//   dQ   += dS K_g                               dS^T stored into a tile of the group's,
//                                                read back as an MN-major A operand.
//
// The last product needs dS with queries as rows, the transpose of what the accumulators
// hold; the tile turns it round, as the hardware reads an MN-major operand. Each group
// adds its own 64-key share of dQ into the FP32 sum, so the only barrier besides the
// block's one a tile is the group's own (bar.sync 1 + group, 128 threads) between
// storing dS^T and reading it back. S^T waits alone while dP^T is still running, so the
// exponentials overlap the second product.
//
// Registers: dK and dV (32 floats a thread each) live through the whole kernel, S^T and
// dP^T (32 each) through a step, so one block an SM with up to 255 registers a thread.
// Shared memory: K, V (16 KB each), Q and dO twice (8 KB each), a dS^T tile a group
// (8 KB), and two tiles of 64 (lse, delta) pairs: 81 KB with the alignment.
#include "zero/kernels/cuda/attention.cuh"
#include "zero/kernels/cuda/attention_wgmma.h"
#include "zero/kernels/cuda/sm90/wgmma.cuh"

namespace zero::ops {
namespace {

using namespace cuda::flash;
namespace wg = cuda::wgmma;

constexpr int kKeys = 128;     // keys a block, 64 a warpgroup
constexpr int kQueries = 64;   // queries a step
constexpr int kBlockThreads = 256;
constexpr uint32_t kKeyTile = kKeys * wg::kRowBytes;        // 16 KB
constexpr uint32_t kQueryTile = kQueries * wg::kRowBytes;   // 8 KB
constexpr uint32_t kStatsAt = 2 * kKeyTile + 6 * kQueryTile; // after K, V, Q x 2, dO x 2, dS^T x 2
constexpr uint32_t kStatsTile = kQueries * sizeof(float2);
constexpr int kSmemBytes = kStatsAt + 2 * kStatsTile + wg::kAtomBytes;

// grid = (B * H, key tiles of 128); block = two warpgroups. Thread (g, t) of warp w of
// group G holds keys 64 G + 16 w + g and that + 8 of the block's tile, against queries
// 8 j + 2 t + e % 2 of the query tile in s[4 j + e] (Note [Warpgroup products]).
template <Arith kA>
__global__ void __launch_bounds__(kBlockThreads, 1) attention_backward_wgmma_kernel(
    Src<kA> q, Src<kA> k, Src<kA> v, Src<kA> grad_out, const float2* stats, Dst<kA> grad_k,
    Dst<kA> grad_v, float* dq_sum, int H, int Tq, int Tk, float scale, float score_scale,
    bool causal) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using E = Element<kA>;
  constexpr bool kBf16 = kA == Arith::kBf16;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const uint32_t raw = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw));
  const uint32_t base = (raw + wg::kAtomBytes - 1) & ~static_cast<uint32_t>(wg::kAtomBytes - 1);
  const auto qt = [&](int b) { return base + 2 * kKeyTile + b * kQueryTile; };
  const auto dot = [&](int b) { return base + 2 * kKeyTile + (2 + b) * kQueryTile; };
  const auto st = [&](int b) { return base + kStatsAt + b * kStatsTile; };
  const int group = wg::warpgroup(), r0 = threadIdx.x % 128 / 32 * 16;
  const int g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
  const uint32_t ds_tile = base + 2 * kKeyTile + (4 + group) * kQueryTile;
  const int64_t bh = blockIdx.x;
  const int k0 = blockIdx.y * kKeys, kg = k0 + 64 * group;  // the block's, the group's first key
  const int keys[2] = {kg + r0 + g, kg + r0 + g + 8};
  const uint64_t k_rows = wg::descriptor(base + 64 * group * wg::kRowBytes);  // the group's keys
  const uint64_t v_rows = wg::descriptor(base + kKeyTile + 64 * group * wg::kRowBytes);
  const uint64_t ds_rows = wg::descriptor(ds_tile);
  const int shift = Tk - Tq;  // query i sees keys up to i + shift (causal)
  // The first query tile with a query that sees one of the block's keys.
  const int q_begin = causal ? ::max(0, k0 - shift) / kQueries * kQueries : 0;
  const E* qp = q.slice(bh, H);
  const E* gp = grad_out.slice(bh, H);
  const float2* sp = stats + bh * Tq;
  const auto load_queries = [&](int b, int q0) {
    wg::copy_tile<kQueries, kBlockThreads>(qt(b), qp, q.row, q0, Tq);
    wg::copy_tile<kQueries, kBlockThreads>(dot(b), gp, grad_out.row, q0, Tq);
    if (threadIdx.x < kQueries) {  // one (lse, delta) pair a thread, zeros past Tq
      const int i = q0 + threadIdx.x;
      asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(
                       st(b) + threadIdx.x * static_cast<uint32_t>(sizeof(float2))),
                   "l"(sp + (i < Tq ? i : 0)), "r"(i < Tq ? 8 : 0));
    }
  };
  wg::copy_tile<kKeys, kBlockThreads>(base, k.slice(bh, H), k.row, k0, Tk);
  wg::copy_tile<kKeys, kBlockThreads>(base + kKeyTile, v.slice(bh, H), v.row, k0, Tk);
  load_queries(0, q_begin);
  commit_tiles();

  float dk[32] = {}, dv[32] = {};  // the group's 64 x 64 dK and dV, laid out as s
  for (int q0 = q_begin, buf = 0; q0 < Tq; q0 += kQueries, buf ^= 1) {
    wait_tiles<0>();
    wg::fence_proxy_async();
    __syncthreads();  // the tiles of q0 are in; both groups are done with the other buffer
    if (q0 + kQueries < Tq) load_queries(buf ^ 1, q0 + kQueries);
    commit_tiles();
    // A group past Tk, or one whose first key no query of the tile sees, has no share.
    if (kg >= Tk || (causal && q0 + kQueries - 1 + shift < kg)) continue;

    const uint64_t q_rows = wg::descriptor(qt(buf)), do_rows = wg::descriptor(dot(buf));
    float s[32], dp[32];
    wg::fence();
    wg::scores_k64<kBf16>(s, k_rows, q_rows);
    wg::commit();
    wg::scores_k64<kBf16>(dp, v_rows, do_rows);
    wg::commit();
    wg::wait<1>();  // S^T is in; dP^T may still be running
    wg::operands_ready(s);

    // P^T = exp_of(S^T score_scale - lse), each query's pair read once; then 0 where
    // masked, in a pass of its own that only the tiles with masked scores take.
    const float2* pairs = reinterpret_cast<const float2*>(smem_raw + (st(buf) - raw));
    float delta[16];
#pragma unroll
    for (int j = 0; j < 8; ++j) {
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const float2 pair = pairs[8 * j + 2 * t + c];
        delta[2 * j + c] = pair.y;
        s[4 * j + c] = exp_of<kA>(fmaf(s[4 * j + c], score_scale, -pair.x));
        s[4 * j + 2 + c] = exp_of<kA>(fmaf(s[4 * j + 2 + c], score_scale, -pair.x));
      }
    }
    if (q0 + kQueries > Tq || kg + 64 > Tk || (causal && kg + 63 > q0 + shift)) {
#pragma unroll
      for (int i = 0; i < 32; ++i) {
        if (!visible(q0 + i / 4 * 8 + 2 * t + i % 2, keys[i % 4 / 2], Tq, Tk, causal)) s[i] = 0.0f;
      }
    }
    wg::wait<0>();
    wg::operands_ready(dp);
    // dS^T = P^T (dP^T - delta); both packed to 16 bits as A operands (p16[kk]: queries
    // 16 kk ..), and dS^T stored into the group's tile, key rows of 64 queries.
    uint32_t p16[4][4], ds16[4][4];
#pragma unroll
    for (int i = 0; i < 32; i += 2) {
      const float d0 = s[i] * (dp[i] - delta[i / 4 * 2]);
      const float d1 = s[i + 1] * (dp[i + 1] - delta[i / 4 * 2 + 1]);
      p16[i / 8][i % 8 / 2] = pack16<kA>(s[i], s[i + 1]);
      ds16[i / 8][i % 8 / 2] = pack16<kA>(d0, d1);
      const int row = r0 + g + 8 * (i % 4 / 2);
      asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(ds_tile + wg::swizzled(row, i / 4) + 4 * t),
                   "r"(ds16[i / 8][i % 8 / 2]));
    }
    wg::fence_proxy_async();
    asm volatile("bar.sync %0, 128;\n" ::"r"(1 + group) : "memory");

    float dq[32];
    wg::fence();
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      const uint64_t step = kk * wg::kNextKOfMnMajor;  // 16 rows: queries, or keys
      wg::product_n64_rs<kBf16, 1>(dv, p16[kk], do_rows + step);
      wg::product_n64_rs<kBf16, 1>(dk, ds16[kk], q_rows + step);
      wg::product_n64_ss<kBf16, 1, 1>(dq, ds_rows + step, k_rows + step, kk > 0);
    }
    wg::commit();
    wg::wait<0>();
    wg::operands_ready(dq);
    wg::operands_ready(dk);
    wg::operands_ready(dv);
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      wg::hold(p16[kk]);
      wg::hold(ds16[kk]);
    }
    // The group's share of dQ (queries r0 + g + 8 x of the tile against d = 8 j + 2 t ..)
    // into the FP32 sum, whose rows are 64 floats apart.
#pragma unroll
    for (int i = 0; i < 32; i += 2) {
      const int query = q0 + r0 + g + 8 * (i % 4 / 2), d = i / 4 * 8 + 2 * t;
      if (query < Tq) {
        atomicAdd(reinterpret_cast<float2*>(dq_sum + (bh * Tq + query) * 64 + d),
                  make_float2(dq[i], dq[i + 1]));
      }
    }
  }

  E* kout = grad_k.slice(bh, H);
  E* vout = grad_v.slice(bh, H);
#pragma unroll
  for (int i = 0; i < 32; i += 2) {
    const int key = keys[i % 4 / 2], d = i / 4 * 8 + 2 * t;
    if (key < Tk) {
      *reinterpret_cast<uint32_t*>(kout + key * grad_k.row + d) =
          pack16<kA>(dk[i] * scale, dk[i + 1] * scale);
      *reinterpret_cast<uint32_t*>(vout + key * grad_v.row + d) = pack16<kA>(dv[i], dv[i + 1]);
    }
  }
#elif defined(__CUDA_ARCH__)
  __trap();  // no wgmma in this architecture's code: a launch fails loudly, not silently
#endif
}

template <Arith kA>
void launch(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& grad_out,
            const float* stats, float* dq_sum, bool causal, const Tensor& grad_k,
            const Tensor& grad_v) {
  using E = Element<kA>;
  const auto kernel = attention_backward_wgmma_kernel<kA>;
  ZERO_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
  const dim3 grid(static_cast<unsigned>(q.size(0) * q.size(1)),
                  static_cast<unsigned>((k.size(2) + kKeys - 1) / kKeys));
  const float scale = 0.125f;  // 1 / sqrt(64)
  kernel<<<grid, kBlockThreads, kSmemBytes, cuda::current_stream()>>>(
      in_view<E>(q), in_view<E>(k), in_view<E>(v), in_view<E>(grad_out),
      reinterpret_cast<const float2*>(stats), out_view<E>(grad_k), out_view<E>(grad_v), dq_sum,
      static_cast<int>(q.size(1)), static_cast<int>(q.size(2)), static_cast<int>(k.size(2)),
      scale, exponent_scale<kA>(scale), causal);
  ZERO_CUDA_LAUNCH_CHECK();
}

}  // namespace

bool attention_backward_wgmma(const Tensor& q, const Tensor& k, const Tensor& v,
                              const Tensor& grad_out, const float* stats, float* dq_sum,
                              bool causal, const Tensor& grad_k, const Tensor& grad_v) {
  if (!attention_wgmma_applies(q, {&k, &v, &grad_out}, {&grad_k, &grad_v})) return false;
  if (q.dtype() == DataType::BF16) {
    launch<Arith::kBf16>(q, k, v, grad_out, stats, dq_sum, causal, grad_k, grad_v);
  } else {
    launch<Arith::kF16>(q, k, v, grad_out, stats, dq_sum, causal, grad_k, grad_v);
  }
  return true;
}

}  // namespace zero::ops
