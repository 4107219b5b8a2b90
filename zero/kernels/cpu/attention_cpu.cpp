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
#include "zero/kernels/attention_widen.h"
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

// sum over j < n of a[j] b[j]. `omp simd reduction` lets the compiler add the products
// in vector lanes, so in another order than one by one: in double that moves the sum by
// far less than the float rounding of the result.
double sum_of_products(const double* a, const double* b, int64_t n) {
  double s = 0.0;
#pragma omp simd reduction(+ : s)
  for (int64_t j = 0; j < n; ++j) s += a[j] * b[j];
  return s;
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
// transposed and in double, into kt[d * ld + j] (ld is Tk padded, see below), and the
// scores of a query against many keys are computed as D passes over rows of kt,
// s_j += q_d k_jd, a loop over keys j that the compiler vectorises. Each s_j still adds
// its D products in the order of d, so it is the same double as a one-by-one dot
// product. The values are transposed alike, and so every other loop runs over keys: the
// sums over keys (the output acc_d = sum_j p_j v_jd, and dQ) with sum_of_products, and
// the backward's dK and dV, accumulated transposed (dkt[d * ld + j]) and written back as
// rows at the end.
//
// The scores are computed 16 keys at a time, their 16 sums held in registers across
// the D passes (two AVX-512 registers), so kt's rows are padded with zeros to a multiple
// of 16 keys: a block of keys never needs a shorter remainder loop.
constexpr int64_t kKeyLanes = 16;

int64_t padded_keys(int64_t tk) { return (tk + kKeyLanes - 1) / kKeyLanes * kKeyLanes; }

// out[d * ld + j] = row j of head bh, for j < t; the padding, from t to ld, is not written.
void transpose_head(const Rows& rows, int64_t bh, int64_t t, int64_t D, int64_t ld,
                    double* out) {
  for (int64_t j = 0; j < t; ++j) {
    const float* row = rows(bh, j);
    for (int64_t d = 0; d < D; ++d) out[d * ld + j] = row[d];
  }
}

// s[j] = sum over d of q[d] kt[d * ld + j], for j < n rounded up to kKeyLanes (s and
// every row of kt must have room for that many).
void scores(const float* q, const double* kt, int64_t ld, int64_t D, int64_t n, double* s) {
  for (int64_t j0 = 0; j0 < n; j0 += kKeyLanes) {
    double acc[kKeyLanes] = {};
    for (int64_t d = 0; d < D; ++d) {
      const double qd = q[d];
      const double* kd = kt + d * ld + j0;
#pragma omp simd
      for (int64_t j = 0; j < kKeyLanes; ++j) acc[j] += qd * kd[j];
    }
    std::copy(acc, acc + kKeyLanes, s + j0);
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
    const int64_t ld = padded_keys(tk);
    std::vector<double> acc(D), kt(D * ld), vt(D * ld);
    double s[kKeyBlock];  // a multiple of kKeyLanes
#pragma omp for schedule(static)
    for (int64_t bh = 0; bh < bh_count; ++bh) {
      transpose_head(rk, bh, tk, D, ld, kt.data());
      transpose_head(rv, bh, tk, D, ld, vt.data());
      for (int64_t i = 0; i < tq; ++i) {
        const float* qi = rq(bh, i);
        const int64_t n_keys = visible_keys(causal, i, tq, tk);
        double m = -std::numeric_limits<double>::infinity(), l = 0.0;
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t j0 = 0; j0 < n_keys; j0 += kKeyBlock) {
          const int64_t nj = std::min(kKeyBlock, n_keys - j0);
          scores(qi, kt.data() + j0, ld, D, nj, s);
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
          for (int64_t j = 0; j < nj; ++j) l += s[j];  // the softmax sums undropped P
          if (drop.p != 0.0f) {
            for (int64_t j = 0; j < nj; ++j) s[j] *= drop.factor(bh, i, j0 + j);
          }
          for (int64_t d = 0; d < D; ++d) acc[d] += sum_of_products(s, vt.data() + d * ld + j0, nj);
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
    // dK and dV transposed like kt and vt, so that their updates are loops over keys too.
    const int64_t ld = padded_keys(tk);
    std::vector<double> dkt(D * ld), dvt(D * ld), kt(D * ld), vt(D * ld);
    std::vector<double> p(ld), dp(ld), ds(ld), dq(D);
#pragma omp for schedule(static)
    for (int64_t bh = 0; bh < bh_count; ++bh) {
      transpose_head(rk, bh, tk, D, ld, kt.data());
      transpose_head(rv, bh, tk, D, ld, vt.data());
      std::fill(dkt.begin(), dkt.end(), 0.0);
      std::fill(dvt.begin(), dvt.end(), 0.0);
      for (int64_t i = 0; i < tq; ++i) {
        const float* qi = rq(bh, i);
        const float* doi = rdo(bh, i);
        const double lse_i = plse[bh * tq + i];
        const double delta = dot(doi, ro(bh, i), D);  // rowsum(dO * O) = sum_j P_j dP_j
        const int64_t n = visible_keys(causal, i, tq, tk);
        scores(qi, kt.data(), ld, D, n, p.data());   // q . k_j
        scores(doi, vt.data(), ld, D, n, dp.data());  // dO . v_j
#pragma omp simd
        for (int64_t j = 0; j < n; ++j) p[j] = exp_double(scale * p[j] - lse_i);
        if (drop.p != 0.0f) {  // dP_j and the P_j that multiplies dO take F_j
          for (int64_t j = 0; j < n; ++j) {
            const double f = drop.factor(bh, i, j);
            ds[j] = p[j] * (dp[j] * f - delta);
            p[j] *= f;
          }
        } else {
#pragma omp simd
          for (int64_t j = 0; j < n; ++j) ds[j] = p[j] * (dp[j] - delta);
        }
        for (int64_t d = 0; d < D; ++d) {
          const double q_d = qi[d], do_d = doi[d];
          double* __restrict dv_d = dvt.data() + d * ld;
          double* __restrict dk_d = dkt.data() + d * ld;
#pragma omp simd
          for (int64_t j = 0; j < n; ++j) {
            dv_d[j] += p[j] * do_d;
            dk_d[j] += ds[j] * q_d;
          }
          dq[d] = sum_of_products(ds.data(), kt.data() + d * ld, n);
        }
        float* dqi = rdq(bh, i);
        for (int64_t d = 0; d < D; ++d) dqi[d] = static_cast<float>(dq[d] * scale);
      }
      for (int64_t j = 0; j < tk; ++j) {
        float* dkj = rdk(bh, j);
        float* dvj = rdv(bh, j);
        for (int64_t d = 0; d < D; ++d) {
          dkj[d] = static_cast<float>(dkt[d * ld + j] * scale);
          dvj[d] = static_cast<float>(dvt[d * ld + j]);
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
  // 16-bit operands: Note [16-bit attention through the FP32 kernels] (attention_widen.h).
  const Tensor out32 = wide_output(out);
  attention_forward_rows(widened(q), widened(k), widened(v), causal, dropout_p, seed, offset,
                         out32, lse);
  rounded(out32, out);
}

void attention_backward_cpu(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                            const Tensor& lse, const Tensor& grad_out, bool causal, float dropout_p,
                            uint64_t seed, uint64_t offset, const Tensor& grad_q,
                            const Tensor& grad_k, const Tensor& grad_v) {
  const Tensor dq = wide_output(grad_q), dk = wide_output(grad_k), dv = wide_output(grad_v);
  attention_backward_rows(widened(q), widened(k), widened(v), widened(out), lse,
                          widened(grad_out), causal, dropout_p, seed, offset, dq, dk, dv);
  rounded(dq, grad_q);
  rounded(dk, grad_k);
  rounded(dv, grad_v);
}

}  // namespace

ZERO_REGISTER_KERNEL(attention_forward, kCpu, attention_forward_cpu);
ZERO_REGISTER_KERNEL(attention_backward, kCpu, attention_backward_cpu);
// On the CPU the row loop is both the fast kernel and the reference.
ZERO_REGISTER_KERNEL(attention_reference_forward, kCpu, attention_forward_cpu);
ZERO_REGISTER_KERNEL(attention_reference_backward, kCpu, attention_backward_cpu);

}  // namespace zero::ops
