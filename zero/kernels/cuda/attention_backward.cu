// Flash attention backward on the Tensor Cores: delta = rowsum(dO * O) first, then one
// kernel per 64-key tile for dK and dV and one per 64-query tile for dQ, each
// recomputing the probabilities (and the dropout mask) tile by tile from the saved
// logsumexp. The same gradients in plain FP32, one thread per row, are in
// attention_reference.cu; Note [Flash attention] in attention.cuh has the formulas and
// lists the parts these kernels are built from. The forward is attention.cu.
#include <cmath>

#include "zero/kernels/cuda/attention.cuh"
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

// delta[row] = sum_d dO[row][d] * O[row][d] for row = bh * Tq + i, one warp per row.
template <typename E>
__global__ void attention_delta_kernel(HeadView<const E> grad_out, HeadView<const E> out,
                                       float* delta, int64_t rows, int H, int Tq, int D) {
  const int64_t row = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  if (row >= rows) return;
  const int64_t bh = row / Tq, i = row % Tq;
  const E* grad_row = grad_out.slice(bh, H) + i * grad_out.row;
  const E* out_row = out.slice(bh, H) + i * out.row;
  float s = 0.0f;
  for (int d = threadIdx.x % 32; d < D; d += 32) {
    s += static_cast<float>(grad_row[d]) * static_cast<float>(out_row[d]);
  }
  s = cuda::warp_sum(s);
  if (threadIdx.x % 32 == 0) delta[row] = s;
}

// s[j] += A B^T and d[j] += C D^T for a warp's 16 rows r0.. of shared tiles A and C
// against all 64 rows of shared tiles B and D: the two score-like products of the
// backward (S and dP, or their transposes).
template <int kD, Arith kA, typename E>
__device__ void two_scores(float s[kSteps][4], float d[kSteps][4], const E* a, const E* b,
                           const E* c, const E* dd, int r0) {
#pragma unroll
  for (int kk = 0; kk < kD; kk += kK<kA>) {
    const Operand<kA, 4> ta = a_rows_operand<kD, kA>(a, r0, kk);
    const Operand<kA, 4> tc = a_rows_operand<kD, kA>(c, r0, kk);
#pragma unroll
    for (int j = 0; j < kSteps; ++j) {
      mma<kA>(s[j], ta, b_cols_operand<kD, kA>(b, 8 * j, kk));
      mma<kA>(d[j], tc, b_cols_operand<kD, kA>(dd, 8 * j, kk));
    }
  }
}

template <int kD, Arith kA>
__global__ void __launch_bounds__(kThreads) attention_backward_dkdv_kernel(
    Src<kA> q, Src<kA> k, Src<kA> v, Src<kA> grad_out, const float* lse, const float* delta,
    Dst<kA> grad_k, Dst<kA> grad_v, int H, int Tq, int Tk, int D, float scale, bool causal,
    bool vectors, AttentionDropout drop) {
  using E = Element<kA>;
  E* const smem = shared_tiles<E>();
  // ks, vs (64, kLd) resident; then two sets of qs, dos (64, kLd) and lse, delta (64
  // floats) for the query tiles: one in use, the other loading.
  constexpr int kSize = kTile * kLd<kD, E>;
  E* ks = smem;
  E* vs = smem + kSize;
  const auto qs = [&](int b) { return smem + (2 + b) * kSize; };
  const auto dos = [&](int b) { return smem + (4 + b) * kSize; };
  float* const vectors_s = reinterpret_cast<float*>(smem + 6 * kSize);
  const auto lse_s = [&](int b) { return vectors_s + b * 2 * kTile; };
  const auto delta_s = [&](int b) { return vectors_s + b * 2 * kTile + kTile; };
  const int64_t bh = blockIdx.x;
  const int k0 = blockIdx.y * kTile, r0 = threadIdx.x / 32 * 16;
  const int g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
  const auto* qp = q.slice(bh, H);
  const auto* gp = grad_out.slice(bh, H);
  lse += bh * Tq, delta += bh * Tq;
  // Queries before k0 - (Tk - Tq) see none of these keys under the causal mask. The
  // start is rounded down to an even row: the dropout factors come in squares of two
  // queries by two keys (Note [Attention dropout]), read below as pairs from q0, and an
  // odd q0 would pair each row with the wrong neighbour. The extra row is masked.
  const int q_begin = causal ? ::max(0, k0 - (Tk - Tq)) & ~1 : 0;
  // Loads query tile q0 into buffer b: Q and dO rows, and their lse and delta.
  const auto load_queries = [&](int q0, int b) {
    load_tile<kD>(qs(b), qp, q.row, q0, Tq, D, vectors, false);
    load_tile<kD>(dos(b), gp, grad_out.row, q0, Tq, D, vectors, false);
    if (threadIdx.x < kTile) {
      const int i = q0 + threadIdx.x;
      lse_s(b)[threadIdx.x] = i < Tq ? lse[i] : 0.0f;
      delta_s(b)[threadIdx.x] = i < Tq ? delta[i] : 0.0f;
    }
  };
  load_tile<kD>(ks, k.slice(bh, H), k.row, k0, Tk, D, vectors, true);
  load_tile<kD>(vs, v.slice(bh, H), v.row, k0, Tk, D, vectors, true);
  if (q_begin < Tq) load_queries(q_begin, 0);
  commit_tiles();
  float dk[kD / 8][4] = {}, dv[kD / 8][4] = {};
  for (int q0 = q_begin, buf = 0; q0 < Tq; q0 += kTile, buf ^= 1) {
    if (q0 + kTile < Tq) load_queries(q0 + kTile, buf ^ 1);
    commit_tiles();
    wait_tiles<1>();
    __syncthreads();
    float st[kSteps][4] = {}, dpt[kSteps][4] = {};  // S^T = K Q^T, dP^T = V dO^T
    two_scores<kD, kA>(st, dpt, ks, qs(buf), vs, dos(buf), r0);
    const float* lse_b = lse_s(buf);
    const float* delta_b = delta_s(buf);
#pragma unroll
    for (int j = 0; j < kSteps; ++j) {
      float f[4];  // the dropout factors of the thread's square: f[2 (i % 2) + key % 2]
      drop.square(bh, (q0 + 8 * j) / 2 + t, (k0 + r0) / 2 + g, f);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = k0 + r0 + 2 * g + e / 2, c = 8 * j + 2 * t + e % 2, i = q0 + c;
        const bool seen = visible(i, key, Tq, Tk, causal);
        const float p = seen ? exp_of<kA>(st[j][e] * scale - lse_b[c]) : 0.0f;
        const float fe = f[2 * (e % 2) + e / 2];
        st[j][e] = p * fe;                                // Z^T
        dpt[j][e] = p * (dpt[j][e] * fe - delta_b[c]);    // dS^T
      }
    }
    times_tile<kD, kA>(dv, st, dos(buf));   // dV += Z^T dO
    times_tile<kD, kA>(dk, dpt, qs(buf));   // dK += dS^T Q
    __syncthreads();  // every warp is done with buffer buf: the next load may reuse it
  }
  store_acc<kD>(grad_k.slice(bh, H), grad_k.row, dk, scale, k0 + r0, Tk, D);
  store_acc<kD>(grad_v.slice(bh, H), grad_v.row, dv, 1.0f, k0 + r0, Tk, D);
}

template <int kD, Arith kA>
__global__ void __launch_bounds__(kThreads) attention_backward_dq_kernel(
    Src<kA> q, Src<kA> k, Src<kA> v, Src<kA> grad_out, const float* lse, const float* delta,
    Dst<kA> grad_q, int H, int Tq, int Tk, int D, float scale, bool causal, bool vectors,
    AttentionDropout drop) {
  using E = Element<kA>;
  E* const smem = shared_tiles<E>();
  // qs, dos (64, kLd) resident; then two sets of ks, vs (64, kLd): one in use, the
  // other loading.
  constexpr int kSize = kTile * kLd<kD, E>;
  E* qs = smem;
  E* dos = smem + kSize;
  const auto ks = [&](int b) { return smem + (2 + b) * kSize; };
  const auto vs = [&](int b) { return smem + (4 + b) * kSize; };
  const int64_t bh = blockIdx.x;
  // The last query tile first: under the causal mask it is the longest (Note [Flash
  // attention], order of the blocks).
  const int q0 = (gridDim.y - 1 - blockIdx.y) * kTile, r0 = threadIdx.x / 32 * 16;
  const int g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
  const auto* kp = k.slice(bh, H);
  const auto* vp = v.slice(bh, H);
  load_tile<kD>(qs, q.slice(bh, H), q.row, q0, Tq, D, vectors, true);
  load_tile<kD>(dos, grad_out.slice(bh, H), grad_out.row, q0, Tq, D, vectors, true);
  load_tile<kD>(ks(0), kp, k.row, 0, Tk, D, vectors, false);
  load_tile<kD>(vs(0), vp, v.row, 0, Tk, D, vectors, false);
  commit_tiles();
  const int rows[2] = {q0 + r0 + 2 * g, q0 + r0 + 2 * g + 1};  // this thread's two queries
  float row_lse[2], row_delta[2];
  for (int x = 0; x < 2; ++x) {
    row_lse[x] = rows[x] < Tq ? lse[bh * Tq + rows[x]] : 0.0f;
    row_delta[x] = rows[x] < Tq ? delta[bh * Tq + rows[x]] : 0.0f;
  }
  float dq[kD / 8][4] = {};
  const int k_end = causal ? ::min(Tk, q0 + kTile + (Tk - Tq)) : Tk;
  for (int k0 = 0, buf = 0; k0 < k_end; k0 += kTile, buf ^= 1) {
    next_key_tiles<kD>(ks(buf ^ 1), vs(buf ^ 1), kp, k.row, vp, v.row, k0 + kTile, k_end, Tk,
                       D, vectors);
    __syncthreads();
    float s[kSteps][4] = {}, dp[kSteps][4] = {};  // S = Q K^T, dP = dO V^T
    two_scores<kD, kA>(s, dp, qs, ks(buf), dos, vs(buf), r0);
#pragma unroll
    for (int j = 0; j < kSteps; ++j) {
      float f[4];  // the dropout factors of the thread's 2 x 2 square of this step
      drop.square(bh, rows[0] / 2, (k0 + 8 * j) / 2 + t, f);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int x = e / 2, key = k0 + 8 * j + 2 * t + e % 2;
        const bool seen = visible(rows[x], key, Tq, Tk, causal);
        const float p = seen ? exp_of<kA>(s[j][e] * scale - row_lse[x]) : 0.0f;
        s[j][e] = p * (dp[j][e] * f[e] - row_delta[x]);  // dS
      }
    }
    times_tile<kD, kA>(dq, s, ks(buf));  // dQ += dS K
    __syncthreads();  // every warp is done with buffer buf: the next load may reuse it
  }
  store_acc<kD>(grad_q.slice(bh, H), grad_q.row, dq, scale, q0 + r0, Tq, D);
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
  Tensor delta = Tensor::Empty({bh * Tq}, lse.options());  // (B * H * Tq)
  if (bh * Tq > 0) {
    constexpr int kRowsPerBlock = kThreads / 32;
    const unsigned blocks = static_cast<unsigned>((bh * Tq + kRowsPerBlock - 1) / kRowsPerBlock);
    attention_delta_kernel<<<blocks, kThreads, 0, cuda::current_stream()>>>(
        in_view<E>(grad_out), in_view<E>(out), delta.data_ptr<float>(), bh * Tq, H, Tq, D);
    ZERO_CUDA_LAUNCH_CHECK();
  }
  const bool vectors = vectors_ok(D, {&q, &k, &v, &grad_out});
  const size_t smem_kv = smem_bytes<kD, kA>(6, 4);
  allow_smem(attention_backward_dkdv_kernel<kD, kA>, smem_kv);
  const dim3 key_grid(static_cast<unsigned>(bh), tiles(Tk));
  attention_backward_dkdv_kernel<kD, kA>
      <<<key_grid, kThreads, smem_kv, cuda::current_stream()>>>(
          in_view<E>(q), in_view<E>(k), in_view<E>(v), in_view<E>(grad_out),
          lse.data_ptr<float>(), delta.data_ptr<float>(), out_view<E>(grad_k),
          out_view<E>(grad_v), H, Tq, Tk, D, scale, causal, vectors, drop);
  ZERO_CUDA_LAUNCH_CHECK();
  if (Tq == 0) return;
  const size_t smem_q = smem_bytes<kD, kA>(6, 0);
  allow_smem(attention_backward_dq_kernel<kD, kA>, smem_q);
  const dim3 query_grid(static_cast<unsigned>(bh), tiles(Tq));
  attention_backward_dq_kernel<kD, kA>
      <<<query_grid, kThreads, smem_q, cuda::current_stream()>>>(
          in_view<E>(q), in_view<E>(k), in_view<E>(v), in_view<E>(grad_out),
          lse.data_ptr<float>(), delta.data_ptr<float>(), out_view<E>(grad_q), H, Tq, Tk, D,
          scale, causal, vectors, drop);
  ZERO_CUDA_LAUNCH_CHECK();
}

void attention_backward_cuda(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                             const Tensor& lse, const Tensor& grad_out, bool causal,
                             float dropout_p, uint64_t seed, uint64_t offset,
                             const Tensor& grad_q, const Tensor& grad_k, const Tensor& grad_v) {
  cuda::set_device(q);
  if (q.size(0) * q.size(1) == 0 || k.size(2) == 0) return;
  const AttentionDropout drop(dropout_p, seed, offset, q.size(2), k.size(2));
  // 16-bit operands go in as they are: the tiles hold them (Note [16-bit fragments]).
  dispatch(q.size(3), q.dtype(), [&](auto width, auto arith) {
    backward<decltype(width)::value, decltype(arith)::value>(q, k, v, out, lse, grad_out, causal,
                                                            drop, grad_q, grad_k, grad_v);
  });
}

}  // namespace

ZERO_REGISTER_KERNEL(attention_backward, kCuda, attention_backward_cuda);

}  // namespace zero::ops
