// Flash attention backward's dK, dV kernel on Hopper's warpgroup products (Note [Warpgroup
// products] in wgmma.cuh), for 16-bit operands at D = 64, with or without dropout. It replaces
// only the middle kernel of attention_backward.cu: the pass before it (each query's lse
// and delta) and the one after (dQ's FP32 sum scaled and rounded into grad_q) are that
// file's, and so are the formulas (Note [Flash attention] in attention.cuh) and dQ's
// FP32 sum (Note [dQ by atomic additions]), here added to by bulk reductions.
//
// Note [Attention backward on warpgroups]
// A block of two warpgroups owns 128 keys, 64 a group, with K and V resident in shared
// memory, and streams the queries 64 at a time: Q, dO and their (lse, delta) pairs,
// three tiles deep with cp.async. For each query tile a group makes
//
//   S^T  = K_g Q^T    and  dP^T = V_g dO^T     four products each, both operands read
//                                                from shared memory (K-major);
//   P^T  = exp(S^T scale - lse),  dS^T = P^T (dP^T - delta)   on the accumulators;
//   dV_g += P^T dO    and  dK_g += dS^T Q      P^T and dS^T packed to 16 bits in place
//                                                as A operands, dO and Q read as MN-major
//                                                B operands from the same tiles;
//   dQ   += dS K                                 by the first group alone, over all 128
//                                                keys: each group stores dS^T into a tile
//                                                of its own, and the two tiles are read
//                                                back as one MN-major A operand.
//
// The last product needs dS with queries as rows, the transpose of what the accumulators
// hold; the tiles turn it round, as the hardware reads an MN-major operand.
//
// The steps overlap: as soon as step n's dV, dK and dQ products are issued and the
// next query tile is in, the group issues step n + 1's S^T and dP^T, and only then
// waits for step n's products and stores its dQ share. The Tensor Cores work on the
// next scores while the warps store and copy. For that the query tiles are three
// deep (one being read by step n's products, one by n + 1's scores, one loading), the
// dS^T tiles two deep (step n + 1 writes its own while n's dQ product may still read
// n's), and P^T has registers apart from S^T's. Measured on an H100 at GPT-2's shape:
// 0.195 -> 0.179 ms a layer (docs/speed_notes.md item 53).
//
// Note [dQ by bulk reductions]
// The tile's share of dQ, 64 queries x 64 FP32 values, goes into dQ's sum in global
// memory by addition, since other blocks add theirs to the same rows. One atomicAdd a
// pair of values, as the mma.sync kernel does, is 2048 additions a warpgroup a step,
// each a request of its own to L2; at GPT-2's shape they cost 0.06 ms of the kernel's
// 0.211 a layer on an H100 (measured by taking them out: docs/speed_notes.md item 52).
// Here the first group makes the block's whole share on the Tensor Cores, so L2 gets one
// addition a value where it got two, one from each group; each warp stores its 16 rows
// into a shared tile, and 16 of its lanes hand one 256-byte row each to the copy engine
// (cp.reduce.async.bulk ... add.f32), which adds it into L2 as one request. The
// copies run on while the next step's products do: a lane waits only before the same
// tile is written again two steps later (wait_group.read 1), and before the block ends.
//
// Registers: dK and dV (32 floats a thread each) live through the whole kernel, S^T,
// dP^T and P^T (32 each) through a step, so one block an SM with up to 255 registers a
// thread (ptxas: 254, no spills). Shared memory: K, V (16 KB each), Q and dO three times
// (8 KB each), two dS^T tiles a group (8 KB each), three tiles of 64 (lse, delta) pairs,
// and dQ's share twice (18 KB each): 150.5 KB with the alignment.
//
// With dropout K and V are copied in pair order (Note [Attention dropout squares] in
// attention_dropout_squares.cuh), so a thread's two key rows are 2g and 2g + 1 of its
// warp's 16 and its two scores of each 8-query group in each row one 2 x 2 square, read
// transposed: the factor of s[4 j + 2 x + y] is word 2 y + x of square (query pair,
// key pair). The dS^T tiles keep that key order, which is K's in shared memory, so dQ's
// product sums over the same keys. A step's eight squares are drawn into 32 bits before
// it waits for its scores, while the Tensor Cores make them; dV takes P^T times the
// factors and dS^T = P^T (dP^T times the factors - delta), as in attention_backward.cu.
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
// Query tiles in shared memory: one read by products, one by the next scores, one loading.
constexpr int kStages = 3;
// After K, V, Q and dO (kStages each) and the dS^T tiles (two a group, two steps).
constexpr uint32_t kStatsAt = 2 * kKeyTile + (2 * kStages + 4) * kQueryTile;
constexpr uint32_t kStatsTile = kQueries * sizeof(float2);
// The tile's FP32 share of dQ, rows of 64 floats padded to 72 (288 bytes) so that a
// warp's stores of one accumulator pair fill two wavefronts (rows 8 floats apart in
// the banks); two of them, for steps in turn.
constexpr uint32_t kDqRowBytes = 72 * sizeof(float);
constexpr uint32_t kDqTile = kQueries * kDqRowBytes;  // 18 KB
constexpr uint32_t kDqAt = kStatsAt + kStages * kStatsTile;
constexpr int kSmemBytes = kDqAt + 2 * kDqTile + wg::kAtomBytes;

// grid = (B * H, key tiles of 128); block = two warpgroups. Thread (g, t) of warp w of
// group G holds keys 64 G + 16 w + g and that + 8 of the block's tile (with dropout,
// kDrop: 64 G + 16 w + 2 g and that + 1), against queries 8 j + 2 t + e % 2 of the query
// tile in s[4 j + e] (Note [Warpgroup products]).
template <Arith kA, bool kDrop>
__global__ void __launch_bounds__(kBlockThreads, 1) attention_backward_wgmma_kernel(
    Src<kA> q, Src<kA> k, Src<kA> v, Src<kA> grad_out, const float2* stats, Dst<kA> grad_k,
    Dst<kA> grad_v, float* dq_sum, int H, int Tq, int Tk, float scale, float score_scale,
    bool causal, AttentionDropout drop) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  drop = drop.shifted();
  using E = Element<kA>;
  constexpr bool kBf16 = kA == Arith::kBf16;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const uint32_t raw = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw));
  const uint32_t base = (raw + wg::kAtomBytes - 1) & ~static_cast<uint32_t>(wg::kAtomBytes - 1);
  const auto qt = [&](int b) { return base + 2 * kKeyTile + b * kQueryTile; };
  const auto dot = [&](int b) { return base + 2 * kKeyTile + (kStages + b) * kQueryTile; };
  // dS^T of step n: the groups' two tiles side by side, 128 key rows, at ds_at(n % 2).
  const auto ds_at = [&](int n) {
    return base + 2 * kKeyTile + (2 * kStages + 2 * n) * kQueryTile;
  };
  const auto st = [&](int b) { return base + kStatsAt + b * kStatsTile; };
  const int group = wg::warpgroup(), r0 = threadIdx.x % 128 / 32 * 16;
  const int g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
  const int64_t bh = blockIdx.x;
  const int k0 = blockIdx.y * kKeys, kg = k0 + 64 * group;  // the block's, the group's first key
  const int keys[2] = {kg + r0 + (kDrop ? 2 * g : g), kg + r0 + (kDrop ? 2 * g + 1 : g + 8)};
  const uint64_t k_rows = wg::descriptor(base + 64 * group * wg::kRowBytes);  // the group's keys
  const uint64_t v_rows = wg::descriptor(base + kKeyTile + 64 * group * wg::kRowBytes);
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
  // Step n is the query tile at q_begin + 64 n; the block has a share in every one.
  const int steps = (Tq - q_begin + kQueries - 1) / kQueries;
  wg::copy_tile<kKeys, kBlockThreads, kDrop>(base, k.slice(bh, H), k.row, k0, Tk);
  wg::copy_tile<kKeys, kBlockThreads, kDrop>(base + kKeyTile, v.slice(bh, H), v.row, k0, Tk);
  if (steps > 0) load_queries(0, q_begin);
  commit_tiles();
  if (steps > 1) load_queries(1, q_begin + kQueries);
  commit_tiles();

  float dk[32] = {}, dv[32] = {};  // the group's 64 x 64 dK and dV, laid out as s
  float s[32], dp[32];
  // S^T and dP^T of step n are issued at the end of step n - 1, before that step's dQ
  // is stored, so the Tensor Cores have them while the warps store and copy.
  const auto issue_scores = [&](int b) {
    wg::fence();
    wg::scores_k64<kBf16>(s, k_rows, wg::descriptor(qt(b)));
    wg::commit();
    wg::scores_k64<kBf16>(dp, v_rows, wg::descriptor(dot(b)));
    wg::commit();
  };
  if (steps > 0) {
    wait_tiles<1>();
    wg::fence_proxy_async();
    __syncthreads();  // tile 0 is in
    issue_scores(0);
  }
  int shares = 0;  // the steps whose share of dQ was stored, which alternate between tiles
  for (int n = 0; n < steps; ++n) {
    const int q0 = q_begin + n * kQueries, buf = n % kStages;
    const uint64_t q_rows = wg::descriptor(qt(buf)), do_rows = wg::descriptor(dot(buf));
    const uint32_t ds_tile = ds_at(n % 2) + group * kQueryTile;
    uint32_t p16[4][4], ds16[4][4];
    uint32_t kept = 0;  // bit 4 j + w: word w of the square of query group j (dropout)
    if constexpr (kDrop) {
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        kept |= drop.square_bits(bh, (q0 + 8 * j + 2 * t) / 2, keys[0] / 2) << 4 * j;
      }
    }
    // S^T and dP^T, issued at the end of the step before, are in. (Waiting for S^T
    // alone here, as the compiler cannot follow groups across the loop's back edge,
    // makes it serialize every product: ptxas C7514.)
    wg::wait<0>();
    wg::operands_ready(s);
    wg::operands_ready(dp);
    float p[32], dq[32];  // P^T, apart from S^T so that only products write S^T's registers
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
        p[4 * j + c] = exp_of<kA>(fmaf(s[4 * j + c], score_scale, -pair.x));
        p[4 * j + 2 + c] = exp_of<kA>(fmaf(s[4 * j + 2 + c], score_scale, -pair.x));
      }
    }
    if (q0 + kQueries > Tq || kg + 64 > Tk || (causal && kg + 63 > q0 + shift)) {
#pragma unroll
      for (int i = 0; i < 32; ++i) {
        if (!visible(q0 + i / 4 * 8 + 2 * t + i % 2, keys[i % 4 / 2], Tq, Tk, causal)) p[i] = 0.0f;
      }
    }
    // dS^T = P^T (dP^T - delta); both packed to 16 bits as A operands (p16[kk]: queries
    // 16 kk ..), and dS^T stored into the group's tile, key rows of 64 queries.
#pragma unroll
    for (int i = 0; i < 32; i += 2) {
      float f0 = 1.0f, f1 = 1.0f;  // the factors of s[i] (query 2 t) and s[i + 1]
      if constexpr (kDrop) {
        const int at = 4 * (i / 4) + i % 4 / 2;
        f0 = (kept >> at & 1u) != 0 ? drop.keep : 0.0f;
        f1 = (kept >> (at + 2) & 1u) != 0 ? drop.keep : 0.0f;
      }
      const float d0 = p[i] * (dp[i] * f0 - delta[i / 4 * 2]);
      const float d1 = p[i + 1] * (dp[i + 1] * f1 - delta[i / 4 * 2 + 1]);
      p16[i / 8][i % 8 / 2] = pack16<kA>(p[i] * f0, p[i + 1] * f1);
      ds16[i / 8][i % 8 / 2] = pack16<kA>(d0, d1);
    }
    // dV and dK start on the Tensor Cores while dS^T goes into its tile.
    wg::fence();
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      const uint64_t step = kk * wg::kNextKOfMnMajor;  // 16 rows: queries, or keys
      wg::product_n64_rs<kBf16, 1>(dv, p16[kk], do_rows + step);
      wg::product_n64_rs<kBf16, 1>(dk, ds16[kk], q_rows + step);
    }
    wg::commit();
#pragma unroll
    for (int i = 0; i < 32; i += 2) {
      const int row = r0 + g + 8 * (i % 4 / 2);
      asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(ds_tile + wg::swizzled(row, i / 4) + 4 * t),
                   "r"(ds16[i / 8][i % 8 / 2]));
    }
    wg::fence_proxy_async();
    asm volatile("bar.sync 1, 256;\n" ::: "memory");  // both dS^T tiles are in

    // The first group makes dQ = dS K over all 128 keys: the two dS^T tiles, and K,
    // are 128 rows in a row, so the k-steps past 64 go on into the second's.
    const uint64_t ds_rows = wg::descriptor(ds_at(n % 2));
    if (group == 0) {
      wg::fence();
#pragma unroll
      for (int kk = 0; kk < 8; ++kk) {
        const uint64_t step = kk * wg::kNextKOfMnMajor;
        wg::product_n64_ss<kBf16, 1, 1>(dq, ds_rows + step, k_rows + step, kk > 0);
      }
    }
    wg::commit();  // empty in the second group, so both count the same groups
    if (n + 1 < steps) {
      wait_tiles<0>();
      wg::fence_proxy_async();
      // Tile n + 1 is in, and every product of step n - 1 is done: its buffer, which
      // step n + 2's tile goes into, and its dS^T tiles, which step n + 1 writes, are free.
      __syncthreads();
      if (n + 2 < steps) load_queries((n + 2) % kStages, q0 + 2 * kQueries);
      commit_tiles();
      issue_scores((n + 1) % kStages);
      wg::wait<2>();  // dV, dK and dQ of step n are done; S^T and dP^T of n + 1 run on
    } else {
      wg::wait<0>();
    }
    wg::operands_ready(dq);
    wg::operands_ready(dk);
    wg::operands_ready(dv);
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      wg::hold(p16[kk]);
      wg::hold(ds16[kk]);
    }
    if (group != 0) continue;
    // The share of dQ into the FP32 sum (rows 64 floats apart) by bulk reductions
    // (Note [dQ by bulk reductions]): the warp stores its 16 rows into this step's
    // tile, once the copies of two steps ago have read it.
    const uint32_t dq_tile = base + kDqAt + shares % 2 * kDqTile;
    const int lane = threadIdx.x % 32;
    if (lane < 16) asm volatile("cp.async.bulk.wait_group.read 1;\n" ::: "memory");
    __syncwarp();
#pragma unroll
    for (int i = 0; i < 32; i += 2) {
      const int row = r0 + g + 8 * (i % 4 / 2), d = i / 4 * 8 + 2 * t;
      asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n" ::"r"(dq_tile + row * kDqRowBytes + 4 * d),
                   "f"(dq[i]), "f"(dq[i + 1]));
    }
    wg::fence_proxy_async();
    __syncwarp();
    if (lane < 16 && q0 + r0 + lane < Tq) {
      asm volatile(
          "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], 256;\n" ::"l"(
              dq_sum + (bh * Tq + q0 + r0 + lane) * 64),
          "r"(dq_tile + (r0 + lane) * kDqRowBytes)
          : "memory");
    }
    if (lane < 16) asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
    ++shares;
  }
  wg::wait<0>();  // on every path out of the loop, as the compiler can tell
  wg::operands_ready(s);
  wg::operands_ready(dp);
  wg::operands_ready(dk);
  wg::operands_ready(dv);
  // The copies must have read their rows before the block's shared memory goes.
  if (threadIdx.x % 32 < 16) asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");

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

template <Arith kA, bool kDrop>
void launch(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& grad_out,
            const float* stats, float* dq_sum, bool causal, const AttentionDropout& drop,
            const Tensor& grad_k, const Tensor& grad_v) {
  using E = Element<kA>;
  const auto kernel = attention_backward_wgmma_kernel<kA, kDrop>;
  ZERO_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
  const dim3 grid(static_cast<unsigned>(q.size(0) * q.size(1)),
                  static_cast<unsigned>((k.size(2) + kKeys - 1) / kKeys));
  const float scale = 0.125f;  // 1 / sqrt(64)
  kernel<<<grid, kBlockThreads, kSmemBytes, cuda::current_stream()>>>(
      in_view<E>(q), in_view<E>(k), in_view<E>(v), in_view<E>(grad_out),
      reinterpret_cast<const float2*>(stats), out_view<E>(grad_k), out_view<E>(grad_v), dq_sum,
      static_cast<int>(q.size(1)), static_cast<int>(q.size(2)), static_cast<int>(k.size(2)),
      scale, exponent_scale<kA>(scale), causal, drop);
  ZERO_CUDA_LAUNCH_CHECK();
}

}  // namespace

bool attention_backward_wgmma(const Tensor& q, const Tensor& k, const Tensor& v,
                              const Tensor& grad_out, const float* stats, float* dq_sum,
                              bool causal, const AttentionDropout& drop, const Tensor& grad_k,
                              const Tensor& grad_v) {
  if (!attention_wgmma_applies(q, {&k, &v, &grad_out}, {&grad_k, &grad_v})) return false;
  const bool bf16 = q.dtype() == DataType::BF16, dropping = drop.p > 0.0f;
  if (bf16 && dropping) {
    launch<Arith::kBf16, true>(q, k, v, grad_out, stats, dq_sum, causal, drop, grad_k, grad_v);
  } else if (bf16) {
    launch<Arith::kBf16, false>(q, k, v, grad_out, stats, dq_sum, causal, drop, grad_k, grad_v);
  } else if (dropping) {
    launch<Arith::kF16, true>(q, k, v, grad_out, stats, dq_sum, causal, drop, grad_k, grad_v);
  } else {
    launch<Arith::kF16, false>(q, k, v, grad_out, stats, dq_sum, causal, drop, grad_k, grad_v);
  }
  return true;
}

}  // namespace zero::ops
