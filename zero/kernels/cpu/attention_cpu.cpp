// CPU scaled dot-product attention, the reference the CUDA flash kernels are tested
// against. q [B, H, Tq, D], k and v [B, H, Tk, D], each row of D contiguous; scale 1/sqrt(D).
//
// Forward, one query row at a time (the rows of one head on one thread): its scores
// against a block of keys at a time, folded into a running maximum m, sum
// l = sum exp(s - m) and output accumulator (the online softmax: when m grows, l and the
// accumulator are rescaled by exp(m_old - m_new)). Only a block of scores exists at
// once, never a [Tq, Tk] matrix; each row saves lse = m + log(l). Accumulators are
// double, and so is exp (exp_double, Note [Why not std::exp in a hot loop]).
//
// Backward, per (b, h) so that no two threads write the same dK, dV rows: for each
// query row, P_j = exp(s_j - lse) is recomputed and, with delta = rowsum(dO * O),
//   dV_j += P_j dO,  dP_j = dO . V_j,  dS_j = P_j (dP_j - delta),
//   dQ += dS_j K_j * scale,  dK_j += dS_j Q * scale
// (without dropout; with it, dV_j takes P_j F_j and dP_j is multiplied by F_j).
//
// Note [Attention dropout]
// nanoGPT drops attention probabilities (its attn_dropout). With drop probability p the
// output is O = Z V, Z = P * F, where P = softmax(S) row by row (S the scaled, masked
// scores) and F[b, h, i, j] is 1/(1 - p) if the uniform float of one Philox stream word
// is >= p, and 0 otherwise. With offset rounded up to a multiple of 4 words, the word is
//   offset + 4 (((b*H + h) ceil(Tq/2) + i/2) ceil(Tk/2) + j/2) + 2 (i % 2) + j % 2:
// the four words of one Philox block go to a 2 x 2 square of queries and keys, the
// square a CUDA thread holds (attention_dropout.h). The mask is a pure function of its
// index, so the CPU rows and the CUDA tiles compute the same mask in any order, and the
// backward recomputes it: nothing of size [Tq, Tk] is stored. The softmax statistics
// (m, l, lse) are those of the undropped P; dropout only changes what multiplies V. The
// backward, by the chain rule through Z = P * F and the softmax:
//   dV = Z^T dO,  dZ_ij = dO_i . V_j,  dP_ij = dZ_ij F_ij,
//   dS_ij = P_ij (dP_ij - delta_i),  delta_i = sum_j P_ij dP_ij,
// and delta_i is still rowsum(dO * O), computable from the saved output:
//   sum_j P_ij dP_ij = sum_j (P_ij F_ij) dZ_ij = sum_j Z_ij (dO_i . V_j)
//                    = dO_i . (sum_j Z_ij V_j) = dO_i . O_i.
// So dropout changes the backward in two places: dV accumulates Z instead of P, and
// dO_i . V_j is multiplied by F before delta is subtracted. p = 0 is F = 1 exactly (the
// kernels then skip the Philox draws), so it gives the plain attention's results.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "zero/kernels/attention_dropout.h"
#include "zero/kernels/cpu/parallel.h"
#include "zero/kernels/cpu/vector_math.h"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {
namespace {

// Keys scored at once in the forward: a small buffer, reused for every block.
constexpr int64_t kKeyBlock = 64;

double dot(const float* a, const float* b, int64_t n) {
  double s = 0.0;
  for (int64_t d = 0; d < n; ++d) s += static_cast<double>(a[d]) * b[d];
  return s;
}

// acc[d] += w * x[d] for the D numbers of one row.
void add_scaled(double* __restrict acc, double w, const float* __restrict x, int64_t n) {
#pragma omp simd
  for (int64_t d = 0; d < n; ++d) acc[d] += w * x[d];
}

// How many keys query row i sees: all Tk, or with the causal mask aligned to the
// end (the queries are the last Tq positions) keys 0 .. Tk - Tq + i.
int64_t visible_keys(bool causal, int64_t i, int64_t tq, int64_t tk) {
  return causal ? tk - tq + i + 1 : tk;
}

// Note [Attention on strided rows]
// The GPT hands attention column ranges of its packed [B, T, 3C] qkv, viewed as
// [B, H, T, D]: each row of D numbers is contiguous, but the rows of one head lie 3C
// floats apart. The kernels read and write such rows in place through their three outer
// strides, as the CUDA kernels do, instead of copying each operand into a contiguous
// [B, H, T, D] tensor first: at the quickstart's sizes (D = 12) those copies, an index
// computation per element, took longer than the attention itself.
struct Rows {
  float* data;
  int64_t heads, batch_stride, head_stride, row_stride;

  explicit Rows(const Tensor& t)
      : data(t.data_ptr<float>()), heads(t.size(1)), batch_stride(t.stride(0)),
        head_stride(t.stride(1)), row_stride(t.stride(2)) {}
  // Row i of head bh = b * H + h.
  float* operator()(int64_t bh, int64_t i) const {
    return data + (bh / heads) * batch_stride + (bh % heads) * head_stride + i * row_stride;
  }
};

// Note [Scores a key at a time]
// A score is a dot product of D numbers, and D is small (12 in the quickstart model):
// a loop over d is too short to vectorise well. So each head's keys are copied once,
// transposed and in double, into kt[d * Tk + j], and the scores of a query against many
// keys are computed as D passes over a row of kt, s_j += q_d k_jd, a loop over keys j
// that the compiler vectorises. Each s_j still adds its D products in the order of d,
// so it is the same double as a one-by-one dot product. The values (and, in the
// backward, the keys once more) are read by rows, for the updates acc_d += p_j v_jd.
void transpose_head(const Rows& rows, int64_t bh, int64_t t, int64_t D, double* out) {
  for (int64_t j = 0; j < t; ++j) {
    const float* row = rows(bh, j);
    for (int64_t d = 0; d < D; ++d) out[d * t + j] = row[d];
  }
}

// s[j] = sum over d of q[d] kt[d * ld + j], for j < n.
void scores(const float* q, const double* kt, int64_t ld, int64_t D, int64_t n, double* s) {
  std::fill(s, s + n, 0.0);
  for (int64_t d = 0; d < D; ++d) {
    const double qd = q[d];
    const double* __restrict kd = kt + d * ld;
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) s[j] += qd * kd[j];
  }
}

// The row-by-row reference on q, k, v, out with contiguous rows (Note [Attention on
// strided rows]); lse is contiguous. Parallel over heads, each of which transposes its
// keys once (Note [Scores a key at a time]).
void attention_forward_rows(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                           float dropout_p, uint64_t seed, uint64_t offset, const Tensor& out,
                           const Tensor& lse) {
  const int64_t bh_count = q.size(0) * q.size(1), tq = q.size(2), tk = k.size(2), D = q.size(3);
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  const AttentionDropout drop(dropout_p, seed, offset, tq, tk);
  const Rows rq(q), rk(k), rv(v), ro(out);
  float* plse = lse.data_ptr<float>();
#pragma omp parallel if (bh_count > 1 && bh_count * tq * tk * D > kParallelGrain)
  {
    std::vector<double> acc(D), kt(D * tk);
    double s[kKeyBlock];
#pragma omp for schedule(static)
    for (int64_t bh = 0; bh < bh_count; ++bh) {
      transpose_head(rk, bh, tk, D, kt.data());
      for (int64_t i = 0; i < tq; ++i) {
        const float* qi = rq(bh, i);
        const int64_t n_keys = visible_keys(causal, i, tq, tk);
        double m = -std::numeric_limits<double>::infinity(), l = 0.0;
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t j0 = 0; j0 < n_keys; j0 += kKeyBlock) {
          const int64_t nj = std::min(kKeyBlock, n_keys - j0);
          scores(qi, kt.data() + j0, tk, D, nj, s);
          double block_max = -std::numeric_limits<double>::infinity();
          for (int64_t j = 0; j < nj; ++j) {
            s[j] *= scale;
            block_max = std::max(block_max, s[j]);
          }
          const double m_new = std::max(m, block_max);
          const double alpha = exp_double(m - m_new);  // 0 on the first block (m = -inf)
          l *= alpha;
          for (double& a : acc) a *= alpha;
#pragma omp simd
          for (int64_t j = 0; j < nj; ++j) s[j] = exp_double(s[j] - m_new);
          for (int64_t j = 0; j < nj; ++j) {
            l += s[j];  // the softmax sums undropped probabilities
            add_scaled(acc.data(), s[j] * drop.factor(bh, i, j0 + j), rv(bh, j0 + j), D);
          }
          m = m_new;
        }
        float* oi = ro(bh, i);
        for (int64_t d = 0; d < D; ++d) oi[d] = static_cast<float>(acc[d] / l);
        plse[bh * tq + i] = static_cast<float>(m + std::log(l));
      }
    }
  }
}

void attention_backward_rows(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                            const Tensor& lse, const Tensor& grad_out, bool causal,
                            float dropout_p, uint64_t seed, uint64_t offset, const Tensor& grad_q,
                            const Tensor& grad_k, const Tensor& grad_v) {
  const int64_t bh_count = q.size(0) * q.size(1), tq = q.size(2), tk = k.size(2), D = q.size(3);
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  const AttentionDropout drop(dropout_p, seed, offset, tq, tk);
  const Rows rq(q), rk(k), rv(v), ro(out), rdo(grad_out), rdq(grad_q), rdk(grad_k), rdv(grad_v);
  const float* plse = lse.data_ptr<float>();
#pragma omp parallel if (bh_count > 1 && bh_count * tq * tk * D > kParallelGrain)
  {
    std::vector<double> dk(tk * D), dv(tk * D), dq(D), kt(D * tk), vt(D * tk);
    std::vector<double> p(tk), dp(tk);
#pragma omp for schedule(static)
    for (int64_t bh = 0; bh < bh_count; ++bh) {
      transpose_head(rk, bh, tk, D, kt.data());
      transpose_head(rv, bh, tk, D, vt.data());
      std::fill(dk.begin(), dk.end(), 0.0);
      std::fill(dv.begin(), dv.end(), 0.0);
      for (int64_t i = 0; i < tq; ++i) {
        const float* qi = rq(bh, i);
        const float* doi = rdo(bh, i);
        const double lse_i = plse[bh * tq + i];
        const double delta = dot(doi, ro(bh, i), D);  // rowsum(dO * O) = sum_j P_j dP_j
        const int64_t n_keys = visible_keys(causal, i, tq, tk);
        scores(qi, kt.data(), tk, D, n_keys, p.data());   // q . k_j
        scores(doi, vt.data(), tk, D, n_keys, dp.data());  // dO . v_j
#pragma omp simd
        for (int64_t j = 0; j < n_keys; ++j) p[j] = exp_double(scale * p[j] - lse_i);
        std::fill(dq.begin(), dq.end(), 0.0);
        for (int64_t j = 0; j < n_keys; ++j) {
          const double f = drop.factor(bh, i, j);
          const double ds = p[j] * (dp[j] * f - delta);
          add_scaled(dv.data() + j * D, p[j] * f, doi, D);
          add_scaled(dq.data(), ds, rk(bh, j), D);
          add_scaled(dk.data() + j * D, ds, qi, D);
        }
        float* dqi = rdq(bh, i);
        for (int64_t d = 0; d < D; ++d) dqi[d] = static_cast<float>(dq[d] * scale);
      }
      for (int64_t j = 0; j < tk; ++j) {
        float* dkj = rdk(bh, j);
        float* dvj = rdv(bh, j);
        for (int64_t d = 0; d < D; ++d) {
          dkj[d] = static_cast<float>(dk[j * D + d] * scale);
          dvj[d] = static_cast<float>(dv[j * D + d]);
        }
      }
    }
  }
}

// lse is contiguous, and every other operand has contiguous rows (attention.cpp checks
// both), which is all the row loops need.
void attention_forward_cpu(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                           float dropout_p, uint64_t seed, uint64_t offset, const Tensor& out,
                           const Tensor& lse) {
  attention_forward_rows(q, k, v, causal, dropout_p, seed, offset, out, lse);
}

void attention_backward_cpu(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                            const Tensor& lse, const Tensor& grad_out, bool causal, float dropout_p,
                            uint64_t seed, uint64_t offset, const Tensor& grad_q,
                            const Tensor& grad_k, const Tensor& grad_v) {
  attention_backward_rows(q, k, v, out, lse, grad_out, causal, dropout_p, seed, offset, grad_q,
                          grad_k, grad_v);
}

}  // namespace

ZERO_REGISTER_KERNEL(attention_forward, kCpu, attention_forward_cpu);
ZERO_REGISTER_KERNEL(attention_backward, kCpu, attention_backward_cpu);
// On the CPU the row loop is both the fast kernel and the reference.
ZERO_REGISTER_KERNEL(attention_reference_forward, kCpu, attention_forward_cpu);
ZERO_REGISTER_KERNEL(attention_reference_backward, kCpu, attention_backward_cpu);

}  // namespace zero::ops
