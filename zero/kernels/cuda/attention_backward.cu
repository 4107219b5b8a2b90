// Flash attention backward on the Tensor Cores: delta = rowsum(dO * O) first, then one
// kernel per 64-key tile that recomputes the probabilities (and the dropout mask) tile by
// tile from the saved logsumexp and makes dK and dV, and each query tile's share of dQ,
// which the blocks add into one FP32 sum (Note [dQ by atomic additions]); a last pass
// scales and rounds that sum into grad_q. The same gradients in plain FP32, one thread
// per row, are in attention_reference.cu; Note [Flash attention] in attention.cuh has the
// formulas and lists the parts these kernels are built from. The forward is attention.cu.
//
// Note [dQ by atomic additions]
// dQ_i = sum over key tiles j of dS_ij K_j. The dK, dV block of key tile j already holds
// dS_ij (as its transpose, in registers) for every query tile i it visits, so it can
// make dQ's share too: it writes dS_ij to shared memory, where each warp reads 16 query
// rows of it as an A operand, multiplies by K_j (resident in shared memory) and adds the
// 64 x D result into an FP32 sum of dQ with atomicAdd. A separate dQ kernel, one writer
// per query tile, would have to recompute S and dP: two of the seven tile products of
// the backward, which this way does five (FlashAttention-2 does the same). The price:
// the order in which blocks add their shares varies from run to run, so dQ's last bits
// do too (one FP32 rounding per key tile, far below the 16-bit or TF32 products'
// errors), and a [B, H, Tq, kD] FP32 buffer is zeroed before and read once after.
// Where dS goes: see kOwnDsTile below.
#include <cmath>

#include "zero/kernels/cuda/attention.cuh"
#include "zero/kernels/cuda/attention_row_passes.cuh"
#include "zero/kernels/cuda/attention_simt.cuh"
#include "zero/kernels/cuda/attention_wgmma.h"
#include "zero/kernels/cuda/block_reduce.cuh"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {
namespace {

using namespace cuda::flash;

// ---------------------------------------------------------------------------------
// Kernels. grid = (B * H, tiles of the owned operand); block = kThreads. Warp w owns
// rows 16 w ... of the block's tile; its thread (g, t) holds rows 2g and 2g + 1 of
// those (the owned operands are loaded in pair order, Note [Attention dropout squares])
// and, of a 16 x 64 score tile, columns 8j + 2t and 8j + 2t + 1 in s[j].

// s[j] += A B^T and d[j] += C D^T for a warp's 16 rows r0.. of shared tiles A and C
// against all 64 rows of shared tiles B and D: the two score-like products of the
// backward (S and dP, or their transposes).
template <int kD, Arith kA, typename E>
__device__ void two_scores(float (&s)[kSteps][4], float (&d)[kSteps][4], const E* a, const E* b,
                           const E* c, const E* dd, int r0) {
#pragma unroll
  for (int kk = 0; kk < kD; kk += kK<kA>) {
    const Operand<kA, 4> ta = a_rows_operand<kD, kA>(a, r0, kk);
    times_rows<kD, kA>(&s, &ta, b, kk);
    const Operand<kA, 4> tc = a_rows_operand<kD, kA>(c, r0, kk);
    times_rows<kD, kA>(&d, &tc, dd, kk);
  }
}

// The warp's S^T and dP^T of one query tile become Z^T = P^T F and dS^T = P^T (dP^T F -
// delta), in place: P^T = exp_of(S^T score_scale - lse), with each query's lse (an
// exponent of kA's base, Note [Exponentials in base 2]) and delta from `stats`; P^T is 0
// where the causal mask or the ends hide the score (kMasked: only for the tiles that
// have such scores, `tile_masked`); F are the dropout factors (kDropping). Thread (g, t)
// holds keys k0 + r0 + 2g + e / 2 against queries q0 + 8j + 2t + e % 2 in [j][e].
template <Arith kA, bool kMasked, bool kDropping>
__device__ inline void backward_probabilities(float st[kSteps][4], float dpt[kSteps][4],
                                              const float2* stats, int q0,
                                              int k0, int r0, int64_t bh, int Tq, int Tk,
                                              bool causal, float score_scale,
                                              const AttentionDropout& drop) {
  const int g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
#pragma unroll
  for (int j = 0; j < kSteps; ++j) {
    float f[4] = {1.0f, 1.0f, 1.0f, 1.0f};  // the thread's square: f[2 (i % 2) + key % 2]
    if constexpr (kDropping) drop.square(bh, (q0 + 8 * j) / 2 + t, (k0 + r0) / 2 + g, f);
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int key = k0 + r0 + 2 * g + e / 2, c = 8 * j + 2 * t + e % 2;
      const float2 row = stats[c];  // {lse, delta} of query q0 + c
      float p = exp_of<kA>(fmaf(st[j][e], score_scale, -row.x));
      if constexpr (kMasked) p = visible(q0 + c, key, Tq, Tk, causal) ? p : 0.0f;
      if constexpr (kDropping) {
        const float fe = f[2 * (e % 2) + e / 2];
        st[j][e] = p * fe;                         // Z^T
        dpt[j][e] = p * (dpt[j][e] * fe - row.y);  // dS^T
      } else {
        st[j][e] = p;
        dpt[j][e] = p * (dpt[j][e] - row.y);
      }
    }
  }
}

// Whether dS has a shared tile of its own. The 16-bit products' tiles are small enough
// to spare one (64 KB a block at D = 64, two blocks an SM), and with it the dS of one
// query tile needs no barrier before it is written (the loop's one barrier a tile keeps
// the next tile's dS from overwriting it, Note [One barrier a tile] in
// attention_tiles.cuh). The FP32 arithmetics' tiles are twice the size: a seventh would
// leave room for one block an SM, so they write dS over the dO tile, once a barrier has
// made sure every warp is done reading dO. At D = 32 the tile rows are too short for 64
// keys, so dS has a tile of its own there too.
template <int kD, Arith kA>
constexpr bool kOwnDsTile = kSixteenBit<kA> || kD < 64;

// Row stride parameter of the dS tile: its own has rows long enough for 64 keys.
template <int kD, Arith kA>
constexpr int kDsWidth = kOwnDsTile<kD, kA> ? kTile : kD;

// The column of the dS tile that holds key row m (a row of the K tile) for the products
// of kA: m itself on 16-bit tiles; for the FP32 arithmetics, the place in its 8-column
// group that b_rows_operand pairs with row m (rows 2k and 2k + 1 at columns k and k + 4,
// Note [Tensor-Core fragments]).
template <Arith kA>
__device__ inline int ds_column(int m) {
  if constexpr (kSixteenBit<kA>) {
    return m;
  } else {
    const int b = m % 8;
    return m - b + (b % 2 == 0 ? b / 2 : 4 + b / 2);
  }
}

// p[0], p[1] += x, y, two FP32 sums at an 8-byte aligned address in global memory.
__device__ inline void atomic_add_pair(float* p, float x, float y) {
#if __CUDA_ARCH__ >= 900
  atomicAdd(reinterpret_cast<float2*>(p), make_float2(x, y));  // one vector atomic
#else
  atomicAdd(p, x);
  atomicAdd(p + 1, y);
#endif
}

// The A operand (16 x 16) of dS for queries [r0, r0 + 16) and keys [k0, k0 + 16), read
// from a 16-bit tile that holds dS^T (a row a key) with ldmatrix.trans: lane l gives key
// row k0 + l % 8 + 8 (l / 16) at query column r0 + 8 (l / 8 % 2), so blocks 0..3 are
// (queries r0.., keys k0..), (r0 + 8.., k0..), (r0.., k0 + 8..), (r0 + 8.., k0 + 8..),
// and thread (g, t) gets queries g of each block against keys 2t, 2t + 1: the layout of
// a_rows16 (Note [16-bit fragments]).
template <int kW, typename E>
__device__ inline Packed16<4> a_rows16_of_transposed(const E* tile_t, int r0, int k0) {
  const int lane = threadIdx.x % 32;
  const E* p = tile_t + (k0 + lane % 8 + lane / 16 * 8) * kLd<kW, E> + r0 + lane / 8 % 2 * 8;
  Packed16<4> a;
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(a.r[0]), "=r"(a.r[1]), "=r"(a.r[2]), "=r"(a.r[3])
               : "r"(shared_address(p)));
  return a;
}

// dQ's share of one query tile (Note [dQ by atomic additions]): writes the warp's dS^T
// (ds_t, its 16 keys of rows r0.. of the K tile against the tile's 64 queries) into the
// shared tile ds, waits for every warp, then adds dS K for the warp's 16 queries
// q0 + r0.. into dq_sum [Tq, kD]. The caller has made sure no warp still reads ds. On
// 16-bit tiles ds holds dS^T as the accumulators have it, a key a row: each thread
// stores its two neighbouring queries as one 4-byte pair, and ldmatrix.trans reads dS
// back as the A operand (16 stores a thread a tile instead of 64, and 16 conversions,
// two values each). The FP32 arithmetics store dS itself, a query a row, in the key
// order that b_rows_operand pairs with (ds_column).
template <int kD, Arith kA, typename E>
__device__ void add_dq_share(float* dq_sum, E* ds, const float ds_t[kSteps][4], const E* ks,
                             int q0, int r0, int Tq) {
  constexpr int kLds = kLd<kDsWidth<kD, kA>, E>;
  const int g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
#pragma unroll
  for (int j = 0; j < kSteps; ++j) {
    if constexpr (kSixteenBit<kA>) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {  // key row r0 + g + 8h of ks, queries 8j + 2t and + 1
        *reinterpret_cast<uint32_t*>(ds + (r0 + g + 8 * h) * kLds + 8 * j + 2 * t) =
            pack16<kA>(ds_t[j][2 * h], ds_t[j][2 * h + 1]);
      }
    } else {
#pragma unroll
      for (int e = 0; e < 4; ++e) {  // key row r0 + g + 8 (e / 2) of ks, query 8j + 2t + e % 2
        ds[(8 * j + 2 * t + e % 2) * kLds + ds_column<kA>(r0 + g + 8 * (e / 2))] =
            convert_value<E>(ds_t[j][e]);
      }
    }
  }
  __syncthreads();
  // 64 columns of dQ at a time keep the accumulators within the registers that the
  // scores' product has just left free.
  constexpr int kCols = kD > 64 ? 64 : kD;
#pragma unroll
  for (int c0 = 0; c0 < kD; c0 += kCols) {
    float acc[kCols / 8][4] = {};
#pragma unroll
    for (int kk = 0; kk < kTile; kk += kK<kA>) {
      Operand<kA, 4> a;
      if constexpr (kSixteenBit<kA>) {
        a = a_rows16_of_transposed<kDsWidth<kD, kA>>(ds, r0, kk);
      } else {
        a = a_rows_operand<kDsWidth<kD, kA>, kA>(ds, r0, kk);
      }
#pragma unroll
      for (int n = 0; n < kCols / 8; n += kSixteenBit<kA> ? 2 : 1) {
        if constexpr (kSixteenBit<kA>) {
          uint32_t b[4];
          b_rows16<kD>(b, ks, kk, c0 + 8 * n);
          mma_16bit<kA == Arith::kBf16>(acc[n], a.r, b);
          mma_16bit<kA == Arith::kBf16>(acc[n + 1], a.r, b + 2);
        } else {
          mma<kA>(acc[n], a, b_rows_operand<kD, kA>(ks, kk, c0 + 8 * n));
        }
      }
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {  // the A operand's rows: g and g + 8
      const int i = q0 + r0 + g + 8 * h;
      if (i >= Tq) continue;
#pragma unroll
      for (int n = 0; n < kCols / 8; ++n) {
        atomic_add_pair(dq_sum + (int64_t)i * kD + c0 + 8 * n + 2 * t, acc[n][2 * h],
                        acc[n][2 * h + 1]);
      }
    }
  }
}

// Blocks of the dK, dV kernel an SM holds at once, which caps its registers at 65536 /
// (128 x blocks). Three blocks (170 registers) were faster for the 16-bit products when
// the kernel had more instructions to hide (0.425 -> 0.381 ms on GPT-2's shape,
// docs/speed_notes.md, item 36); with the leaner tile step of item 40 the spills that
// cap forced cost more than the third block gave (0.322 against 0.307 ms), so every
// instance runs two blocks of 255 registers.
template <int kD, Arith kA>
constexpr int kBackwardBlocks = 2;

template <int kD, Arith kA>
__global__ void __launch_bounds__(kThreads, (kBackwardBlocks<kD, kA>)) attention_backward_dkdv_kernel(
    Src<kA> q, Src<kA> k, Src<kA> v, Src<kA> grad_out, const float2* stats,
    Dst<kA> grad_k, Dst<kA> grad_v, float* dq_sum, int H, int Tq, int Tk, int D, float scale,
    float score_scale, bool causal, bool vectors, AttentionDropout drop) {
  drop = drop.shifted();
  using E = Element<kA>;
  E* const smem = shared_tiles<E>();
  // ks, vs (64, kLd) resident; then two sets of qs, dos (64, kLd) and the rows' stats
  // (64 float2) for the query tiles: one in use, the other loading; then the dS tile.
  constexpr int kSize = kTile * kLd<kD, E>;
  E* ks = smem;
  E* vs = smem + kSize;
  const auto qs = [&](int b) { return smem + (2 + b) * kSize; };
  const auto dos = [&](int b) { return smem + (4 + b) * kSize; };
  float* const vectors_s = reinterpret_cast<float*>(smem + 6 * kSize);
  const auto stats_s = [&](int b) { return reinterpret_cast<float2*>(vectors_s) + b * kTile; };
  const auto ds_tile = [&](int b) {
    return kOwnDsTile<kD, kA> ? reinterpret_cast<E*>(vectors_s + 4 * kTile) : dos(b);
  };
  const int64_t bh = blockIdx.x;
  const int k0 = blockIdx.y * kTile, r0 = threadIdx.x / 32 * 16;
  const auto* qp = q.slice(bh, H);
  const auto* gp = grad_out.slice(bh, H);
  stats += bh * Tq, dq_sum += bh * Tq * kD;
  // Queries before k0 - (Tk - Tq) see none of these keys under the causal mask. The
  // start is rounded down to an even row: the dropout factors come in squares of two
  // queries by two keys (Note [Attention dropout]), read below as pairs from q0, and an
  // odd q0 would pair each row with the wrong neighbour. The extra row is masked.
  const int q_begin = causal ? ::max(0, k0 - (Tk - Tq)) & ~1 : 0;
  // Starts loading query tile q0 into buffer b: Q and dO rows, and their stats.
  const TileStream<kD, E> queries(qp, q.row, Tq, D, vectors);
  const TileStream<kD, E> grads(gp, grad_out.row, Tq, D, vectors);
  const auto load_queries = [&](int q0, int b) {
    queries.load(qs(b), q0);
    grads.load(dos(b), q0);
    if (threadIdx.x < kTile) {
      const int i = q0 + threadIdx.x;
      const unsigned to = shared_address(stats_s(b) + threadIdx.x);
      // As in load_tile: a source size of 0 fills the 8 bytes with zeros.
      asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(to),
                   "l"(stats + (i < Tq ? i : 0)), "r"(i < Tq ? 8 : 0));
    }
  };
  load_tile<kD>(ks, k.slice(bh, H), k.row, k0, Tk, D, vectors, true);
  load_tile<kD>(vs, v.slice(bh, H), v.row, k0, Tk, D, vectors, true);
  if (q_begin < Tq) load_queries(q_begin, 0);
  commit_tiles();
  float dk[kD / 8][4] = {}, dv[kD / 8][4] = {};
  // One barrier a query tile besides dS's (Note [One barrier a tile] in attention_tiles.cuh).
  for (int q0 = q_begin, buf = 0; q0 < Tq; q0 += kTile, buf ^= 1) {
    wait_tiles<0>();
    __syncthreads();  // tile q0 is in for every warp; every warp is done with the last tile
    if (q0 + kTile < Tq) load_queries(q0 + kTile, buf ^ 1);
    commit_tiles();
    float st[kSteps][4] = {}, dpt[kSteps][4] = {};  // S^T = K Q^T, dP^T = V dO^T
    two_scores<kD, kA>(st, dpt, ks, qs(buf), vs, dos(buf), r0);
    const bool masked = tile_masked(q0, k0, Tq, Tk, causal);
    const auto probabilities = [&](auto kMasked, auto kDropping) {
      backward_probabilities<kA, decltype(kMasked)::value, decltype(kDropping)::value>(
          st, dpt, stats_s(buf), q0, k0, r0, bh, Tq, Tk, causal, score_scale, drop);
    };
    using Yes = std::true_type;
    using No = std::false_type;
    // Three instances, not four: with dropout every tile takes the masked one. A fourth
    // instance made ptxas spill more (three blocks an SM, bf16, D = 64, the char model's
    // backward: 0.204 ms with three instances, 0.210 with four).
    if (drop.p != 0.0f) {
      probabilities(Yes{}, Yes{});
    } else if (masked) {
      probabilities(Yes{}, No{});
    } else {
      probabilities(No{}, No{});
    }
    times_tile<kD, kA>(&dv, &st, dos(buf));   // dV += Z^T dO
    times_tile<kD, kA>(&dk, &dpt, qs(buf));   // dK += dS^T Q
    if constexpr (!kOwnDsTile<kD, kA>) __syncthreads();  // every warp is done with dO
    add_dq_share<kD, kA>(dq_sum, ds_tile(buf), dpt, ks, q0, r0, Tq);
  }
  store_acc<kD>(grad_k.slice(bh, H), grad_k.row, dk, scale, k0 + r0, Tk, D);
  store_acc<kD>(grad_v.slice(bh, H), grad_v.row, dv, 1.0f, k0 + r0, Tk, D);
}

// ---------------------------------------------------------------------------------
// Launchers

template <typename Kernel>
void allow_smem(Kernel kernel, size_t bytes) {
  ZERO_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
}

template <int kD, Arith kA>
void backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
              const Tensor& lse, const Tensor& grad_out, bool causal, const AttentionDropout& drop,
              const Tensor& grad_q, const Tensor& grad_k, const Tensor& grad_v) {
  const int64_t bh = q.size(0) * q.size(1);
  const int H = static_cast<int>(q.size(1));
  const int Tq = static_cast<int>(q.size(2)), Tk = static_cast<int>(k.size(2));
  const int D = static_cast<int>(q.size(3));
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  using E = Element<kA>;
  Tensor stats = Tensor::Empty({bh * Tq, 2}, lse.options());  // (B * H * Tq, {lse, delta})
  float2* const stats_p = reinterpret_cast<float2*>(stats.data_ptr<float>());
  if (bh * Tq > 0) {
    constexpr int kRowsPerBlock = kThreads / 8;
    const unsigned blocks = static_cast<unsigned>((bh * Tq + kRowsPerBlock - 1) / kRowsPerBlock);
    attention_delta_kernel<kA><<<blocks, kThreads, 0, cuda::current_stream()>>>(
        in_view<E>(grad_out), in_view<E>(out), lse.data_ptr<float>(), stats_p, bh * Tq, H, Tq, D,
        vectors_ok(D, {&grad_out, &out}));
    ZERO_CUDA_LAUNCH_CHECK();
  }
  const bool vectors = vectors_ok(D, {&q, &k, &v, &grad_out});
  // dQ's FP32 sum, rows kD floats apart so that every pair a thread adds is aligned.
  Tensor dq_sum = Tensor::Zeros({bh * Tq * kD}, lse.options());
  // On an sm_90 GPU the 16-bit D = 64 backward makes dK, dV and dQ's sum on warpgroup
  // products (Note [Attention backward on warpgroups]); FP32 in the ieee mode, up to
  // D = 64, on register tiles (Note [FP32 attention on register tiles]).
  bool done = false;
  if constexpr (kA == Arith::kFp32) {
    done = attention_backward_simt(q, k, v, grad_out, stats.data_ptr<float>(),
                                   dq_sum.data_ptr<float>(), kD, causal, drop, grad_k, grad_v);
  }
  if (!done && !attention_backward_wgmma(q, k, v, grad_out, stats.data_ptr<float>(),
                                         dq_sum.data_ptr<float>(), causal, drop, grad_k,
                                         grad_v)) {
    const size_t smem_kv =
        smem_bytes<kD, kA>(6, 4) + (kOwnDsTile<kD, kA> ? sizeof(E) * kTile * kLd<kTile, E> : 0);
    allow_smem(attention_backward_dkdv_kernel<kD, kA>, smem_kv);
    const dim3 key_grid(static_cast<unsigned>(bh), tiles(Tk));
    attention_backward_dkdv_kernel<kD, kA>
        <<<key_grid, kThreads, smem_kv, cuda::current_stream()>>>(
            in_view<E>(q), in_view<E>(k), in_view<E>(v), in_view<E>(grad_out),
            stats_p, out_view<E>(grad_k),
            out_view<E>(grad_v), dq_sum.data_ptr<float>(), H, Tq, Tk, D, scale,
            exponent_scale<kA>(scale), causal, vectors, drop);
    ZERO_CUDA_LAUNCH_CHECK();
  }
  if (Tq == 0) return;
  const int64_t threads = bh * Tq * ((D + 7) / 8);
  attention_dq_store_kernel<kD, E>
      <<<static_cast<unsigned>((threads + 255) / 256), 256, 0, cuda::current_stream()>>>(
          dq_sum.data_ptr<float>(), out_view<E>(grad_q), bh * Tq, H, Tq, D, scale,
          vectors_ok(D, {&grad_q}));
  ZERO_CUDA_LAUNCH_CHECK();
}

void attention_backward_cuda(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                             const Tensor& lse, const Tensor& grad_out, bool causal,
                             float dropout_p, uint64_t seed, uint64_t offset,
                             const Tensor& grad_q, const Tensor& grad_k, const Tensor& grad_v) {
  cuda::set_device(q);
  if (q.size(0) * q.size(1) == 0 || k.size(2) == 0) return;
  AttentionDropout drop(dropout_p, seed, offset, q.size(2), k.size(2));
  drop.shift = cuda::philox_shift();
  // 16-bit operands go in as they are: the tiles hold them (Note [16-bit fragments]).
  dispatch(q.size(3), q.dtype(), [&](auto width, auto arith) {
    backward<decltype(width)::value, decltype(arith)::value>(q, k, v, out, lse, grad_out, causal,
                                                            drop, grad_q, grad_k, grad_v);
  });
}

}  // namespace

ZERO_REGISTER_KERNEL(attention_backward, kCuda, attention_backward_cuda);

}  // namespace zero::ops
