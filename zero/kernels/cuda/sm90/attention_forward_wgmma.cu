// Flash attention forward on Hopper's warpgroup products (Note [Warpgroup products] in
// wgmma.cuh), for the shape GPT training runs most: 16-bit operands, D = 64, with or
// without dropout.
// The computation is attention.cu's (Note [Flash attention] in attention.cuh): the same
// online softmax in base 2, the same causal mask, the same output and logsumexp; only
// the tiles and the product instruction differ. Everything else goes to attention.cu.
//
// Note [Attention on warpgroups]
// A block of two warpgroups owns 128 query rows, 64 a group, and streams keys and values
// through shared memory 128 rows at a time, double-buffered with cp.async. A group takes
// a tile in two steps of 64 keys. A step's 64 x 64 scores are four products (K = 16 of
// D each) whose operands, the group's Q rows and 64 rows of the K tile, are both read
// from shared memory: no fragment loads at all. The softmax runs on the accumulators as
// in attention.cu; the probabilities, packed to 16 bits in place, are the A operand of
// four products O += P V (K = 16 keys each) that read V from shared memory as an
// MN-major operand. Eight instructions a step, where mma.sync needed 64 a warp plus the
// loads of their operands.
//
// Why 64-key steps in 128-key tiles: 128 x 128 scores a block make each K and V row
// fetched once for 128 queries (half the traffic from L2 of 64-query blocks) and one
// barrier serve 128 keys; 64-key steps keep a thread's live accumulators at 32 scores
// and 32 outputs, which fits the 128 registers that two blocks an SM allow (128-key
// steps needed more, and ptxas then serialised the products and spilled). Under the
// causal mask the first group skips the second step of the diagonal tile, all of whose
// keys come after its queries.
//
// Shared memory: Q, two K and two V tiles of 16 KB each (80 KB plus 1 KB to align the
// swizzle's atoms), so two blocks, four warpgroups, fit an SM: while one group waits on
// its products another does its softmax. One barrier a tile: after it, every thread's
// copies of the tile are visible and both groups are done with the other buffer, which
// then takes the next tile's copies.
//
// With dropout the Q tile is copied in pair order (Note [Attention dropout squares] in
// attention_dropout_squares.cuh): the shared row of a thread's accumulator rows g and
// g + 8 then holds the queries 2g and 2g + 1 of its warp's 16, so the thread's two
// scores of each 8-key group in each row are one 2 x 2 square, whose four factors one
// Philox block gives. The rows of O and lse follow. The sum l takes the undropped
// probabilities and P V the dropped ones, as in attention.cu.
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "zero/kernels/cuda/attention.cuh"
#include "zero/kernels/cuda/attention_wgmma.h"
#include "zero/kernels/cuda/sm90/wgmma.cuh"

namespace zero::ops {
namespace {

using namespace cuda::flash;
namespace wg = cuda::wgmma;

constexpr int kRows = 128;                     // query rows a block; keys a tile
constexpr int kGroupThreads = 128;             // a warpgroup; 64 query rows
constexpr int kBlockThreads = 2 * kGroupThreads;
constexpr uint32_t kTileBytes = kRows * wg::kRowBytes;
constexpr int kSmemBytes = 5 * kTileBytes + wg::kAtomBytes;

// grid = (B * H, query tiles of 128), the last tile first; block = two warpgroups.
// Thread (g, t) of warp w of group G holds query rows 64 G + 16 w + g and that + 8, or
// with dropout (kDrop) 64 G + 16 w + 2 g and that + 1.
template <Arith kA, bool kDrop>
__global__ void __launch_bounds__(kBlockThreads, 2)
    attention_forward_wgmma_kernel(Src<kA> q, Src<kA> k, Src<kA> v, Dst<kA> out, float* lse,
                                   int H, int Tq, int Tk, float score_scale, bool causal,
                                   AttentionDropout drop) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  drop = drop.shifted();
  using E = Element<kA>;
  constexpr bool kBf16 = kA == Arith::kBf16;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const uint32_t base =
      (static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw)) + wg::kAtomBytes - 1) &
      ~static_cast<uint32_t>(wg::kAtomBytes - 1);
  const auto ks = [&](int b) { return base + (1 + b) * kTileBytes; };
  const auto vs = [&](int b) { return base + (3 + b) * kTileBytes; };
  const int64_t bh = blockIdx.x;
  const int q0 = (gridDim.y - 1 - blockIdx.y) * kRows, group = wg::warpgroup();
  const int r0 = 64 * group + threadIdx.x % kGroupThreads / 32 * 16;  // the warp's first row
  const int g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
  const int rows[2] = {q0 + r0 + (kDrop ? 2 * g : g), q0 + r0 + (kDrop ? 2 * g + 1 : g + 8)};
  const uint64_t q_rows = wg::descriptor(base + 64 * group * wg::kRowBytes);  // the group's Q
  const E* kp = k.slice(bh, H);
  const E* vp = v.slice(bh, H);
  wg::copy_tile<kRows, kBlockThreads, kDrop>(base, q.slice(bh, H), q.row, q0, Tq);
  wg::copy_tile<kRows, kBlockThreads>(ks(0), kp, k.row, 0, Tk);
  wg::copy_tile<kRows, kBlockThreads>(vs(0), vp, v.row, 0, Tk);
  commit_tiles();

  float o[32] = {};  // 64 x 64 a group: o[4 j + e] is row rows[e / 2], column 8 j + 2 t + e % 2
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  // Keys past the block's (the group's) last query are masked for all of its rows.
  const int k_end = causal ? ::min(Tk, q0 + kRows + (Tk - Tq)) : Tk;
  const int g0 = q0 + 64 * group;  // the group's first query
  const int group_end = causal ? ::min(Tk, g0 + 64 + (Tk - Tq)) : Tk;
  for (int k0 = 0, buf = 0; k0 < k_end; k0 += kRows, buf ^= 1) {
    wait_tiles<0>();
    wg::fence_proxy_async();
    __syncthreads();
    if (k0 + kRows < k_end) {
      wg::copy_tile<kRows, kBlockThreads>(ks(buf ^ 1), kp, k.row, k0 + kRows, Tk);
      wg::copy_tile<kRows, kBlockThreads>(vs(buf ^ 1), vp, v.row, k0 + kRows, Tk);
    }
    commit_tiles();
#pragma unroll 1
    for (int kb = k0; kb < ::min(k0 + kRows, group_end); kb += 64) {
      const uint64_t k_rows = wg::descriptor(ks(buf) + (kb - k0) * wg::kRowBytes);  // keys kb..
      const uint64_t v_rows = wg::descriptor(vs(buf) + (kb - k0) * wg::kRowBytes);
      float s[32];  // raw scores: s[4 j + e] is row rows[e / 2], key kb + 8 j + 2 t + e % 2
      wg::fence();
      wg::scores_k64<kBf16>(s, q_rows, k_rows);
      wg::commit();
      wg::wait<0>();
      wg::operands_ready(s);

      // The online softmax of Note [Online softmax in registers] on the step's 64 keys.
      if (kb + 64 > Tk || g0 + 64 > Tq || (causal && kb + 63 > g0 + (Tk - Tq))) {
#pragma unroll
        for (int i = 0; i < 32; ++i) {
          const int key = kb + i / 4 * 8 + 2 * t + i % 2;
          if (!visible(rows[i % 4 / 2], key, Tq, Tk, causal)) s[i] = -INFINITY;
        }
      }
      float tile_max[2] = {-INFINITY, -INFINITY}, m_use[2], alpha[2], sum[2] = {0.0f, 0.0f};
#pragma unroll
      for (int i = 0; i < 32; ++i) tile_max[i % 4 / 2] = fmaxf(tile_max[i % 4 / 2], s[i]);
#pragma unroll
      for (int x = 0; x < 2; ++x) {
        const float m_new = fmaxf(m[x], quad_max(tile_max[x]) * score_scale);
        m_use[x] = m_new == -INFINITY ? 0.0f : m_new;
        alpha[x] = exp_of<kA>(m[x] - m_use[x]);
        m[x] = m_new;
      }
      // P packed to 16 bits as the A operands of P V: p[kk] covers keys kb + 16 kk ...
      // With dropout, s[4 j .. 4 j + 3] is the square of queries rows[0], rows[1] and keys
      // kb + 8 j + 2 t, + 1: its factors f[0 .. 3], in the same order.
      uint32_t p[4][4];
      float f[4] = {1.0f, 1.0f, 1.0f, 1.0f};
#pragma unroll
      for (int i = 0; i < 32; i += 2) {
        if (kDrop && i % 4 == 0) drop.square(bh, rows[0] / 2, (kb + i / 4 * 8 + 2 * t) / 2, f);
        const float lo = exp_of<kA>(fmaf(s[i], score_scale, -m_use[i % 4 / 2]));
        const float hi = exp_of<kA>(fmaf(s[i + 1], score_scale, -m_use[i % 4 / 2]));
        sum[i % 4 / 2] += lo + hi;
        p[i / 8][i % 8 / 2] = pack16<kA>(lo * f[i % 4], hi * f[i % 4 + 1]);
      }
#pragma unroll
      for (int x = 0; x < 2; ++x) l[x] = l[x] * alpha[x] + quad_sum(sum[x]);
#pragma unroll
      for (int i = 0; i < 32; ++i) o[i] *= alpha[i % 4 / 2];

      wg::fence();
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
        wg::product_n64_rs<kBf16, 1>(o, p[kk], v_rows + kk * wg::kNextKOfMnMajor);
      }
      wg::commit();
      wg::wait<0>();
      wg::operands_ready(o);
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) wg::hold(p[kk]);
    }
  }

  E* op = out.slice(bh, H);
  const float inv_l[2] = {1.0f / l[0], 1.0f / l[1]};
#pragma unroll
  for (int i = 0; i < 32; i += 2) {
    const int x = i % 4 / 2, row = rows[x], d = i / 4 * 8 + 2 * t;
    if (row < Tq) {
      *reinterpret_cast<uint32_t*>(op + row * out.row + d) =
          pack16<kA>(o[i] * inv_l[x], o[i + 1] * inv_l[x]);
    }
  }
  if (t == 0) {
#pragma unroll
    for (int x = 0; x < 2; ++x) {
      if (rows[x] < Tq) lse[bh * Tq + rows[x]] = natural_lse<kA>(m[x], l[x]);
    }
  }
#elif defined(__CUDA_ARCH__)
  __trap();  // no wgmma in this architecture's code: a launch fails loudly, not silently
#endif
}

template <Arith kA, bool kDrop>
void launch(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
            const AttentionDropout& drop, const Tensor& out, const Tensor& lse) {
  using E = Element<kA>;
  const auto kernel = attention_forward_wgmma_kernel<kA, kDrop>;
  ZERO_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
  const dim3 grid(static_cast<unsigned>(q.size(0) * q.size(1)),
                  static_cast<unsigned>((q.size(2) + kRows - 1) / kRows));
  kernel<<<grid, kBlockThreads, kSmemBytes, cuda::current_stream()>>>(
      in_view<E>(q), in_view<E>(k), in_view<E>(v), out_view<E>(out), lse.data_ptr<float>(),
      static_cast<int>(q.size(1)), static_cast<int>(q.size(2)), static_cast<int>(k.size(2)),
      exponent_scale<kA>(0.125f), causal, drop);  // 1 / sqrt(64)
  ZERO_CUDA_LAUNCH_CHECK();
}

}  // namespace

bool attention_wgmma_applies(const Tensor& q, std::initializer_list<const Tensor*> reads,
                             std::initializer_list<const Tensor*> writes) {
  static const bool wanted = [] {
    const char* value = std::getenv("ZERO_ATTENTION_WGMMA");
    return value == nullptr || std::strcmp(value, "0") != 0;
  }();
  if (!wanted || q.size(3) != 64 ||
      (q.dtype() != DataType::BF16 && q.dtype() != DataType::F16)) {
    return false;
  }
  const int device = q.device().index();
  if (cuda::device_attribute(device, cudaDevAttrComputeCapabilityMajor) != 9 ||
      cuda::device_attribute(device, cudaDevAttrComputeCapabilityMinor) != 0) {
    return false;
  }
  // The writes store two values at a time.
  return vectors_ok(64, {&q}) && vectors_ok(64, reads) && vectors_ok(64, writes, 4);
}

bool attention_forward_wgmma(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                             const AttentionDropout& drop, const Tensor& out, const Tensor& lse) {
  if (!attention_wgmma_applies(q, {&k, &v}, {&out})) return false;
  const bool bf16 = q.dtype() == DataType::BF16, dropping = drop.p > 0.0f;
  if (bf16 && dropping) launch<Arith::kBf16, true>(q, k, v, causal, drop, out, lse);
  if (bf16 && !dropping) launch<Arith::kBf16, false>(q, k, v, causal, drop, out, lse);
  if (!bf16 && dropping) launch<Arith::kF16, true>(q, k, v, causal, drop, out, lse);
  if (!bf16 && !dropping) launch<Arith::kF16, false>(q, k, v, causal, drop, out, lse);
  return true;
}

}  // namespace zero::ops
