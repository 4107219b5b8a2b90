// CPU scaled dot-product attention, the reference the CUDA flash kernels are tested
// against. Contiguous q [B, H, Tq, D], k and v [B, H, Tk, D]; scale 1/sqrt(D).
//
// Forward, one query row at a time: its scores against a block of keys at a time,
// folded into a running maximum m, sum l = sum exp(s - m) and output accumulator
// (the online softmax: when m grows, l and the accumulator are rescaled by
// exp(m_old - m_new)). Only a block of scores exists at once, never a [Tq, Tk]
// matrix; each row saves lse = m + log(l). Accumulators are double.
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

// How many keys query row i sees: all Tk, or with the causal mask aligned to the
// end (the queries are the last Tq positions) keys 0 .. Tk - Tq + i.
int64_t visible_keys(bool causal, int64_t i, int64_t tq, int64_t tk) {
  return causal ? tk - tq + i + 1 : tk;
}

// The row-by-row reference on contiguous q, k, v, out.
void attention_forward_rows(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                           float dropout_p, uint64_t seed, uint64_t offset, const Tensor& out,
                           const Tensor& lse) {
  const int64_t bh_count = q.size(0) * q.size(1), tq = q.size(2), tk = k.size(2), D = q.size(3);
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  const AttentionDropout drop(dropout_p, seed, offset, tq, tk);
  const float* pq = q.data_ptr<float>();
  const float* pk = k.data_ptr<float>();
  const float* pv = v.data_ptr<float>();
  float* po = out.data_ptr<float>();
  float* plse = lse.data_ptr<float>();
  const int64_t rows = bh_count * tq;
#pragma omp parallel if (rows * tk * D > kParallelGrain)
  {
    std::vector<double> acc(D);
    double scores[kKeyBlock];
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t bh = r / tq, i = r % tq;
      const float* qi = pq + r * D;
      const float* kb = pk + bh * tk * D;
      const float* vb = pv + bh * tk * D;
      const int64_t n_keys = visible_keys(causal, i, tq, tk);
      double m = -std::numeric_limits<double>::infinity(), l = 0.0;
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t j0 = 0; j0 < n_keys; j0 += kKeyBlock) {
        const int64_t nj = std::min(kKeyBlock, n_keys - j0);
        double block_max = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < nj; ++j) {
          scores[j] = scale * dot(qi, kb + (j0 + j) * D, D);
          block_max = std::max(block_max, scores[j]);
        }
        const double m_new = std::max(m, block_max);
        const double alpha = std::exp(m - m_new);  // 0 on the first block (m = -inf)
        l *= alpha;
        for (double& a : acc) a *= alpha;
        for (int64_t j = 0; j < nj; ++j) {
          const double p = std::exp(scores[j] - m_new);
          l += p;  // the softmax sums undropped probabilities
          const double z = p * drop.factor(bh, i, j0 + j);
          const float* vj = vb + (j0 + j) * D;
          for (int64_t d = 0; d < D; ++d) acc[d] += z * vj[d];
        }
        m = m_new;
      }
      for (int64_t d = 0; d < D; ++d) po[r * D + d] = static_cast<float>(acc[d] / l);
      plse[r] = static_cast<float>(m + std::log(l));
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
  const float* pq = q.data_ptr<float>();
  const float* pk = k.data_ptr<float>();
  const float* pv = v.data_ptr<float>();
  const float* po = out.data_ptr<float>();
  const float* plse = lse.data_ptr<float>();
  const float* pdo = grad_out.data_ptr<float>();
  float* pdq = grad_q.data_ptr<float>();
  float* pdk = grad_k.data_ptr<float>();
  float* pdv = grad_v.data_ptr<float>();
#pragma omp parallel if (bh_count > 1 && bh_count * tq * tk * D > kParallelGrain)
  {
    std::vector<double> dk(tk * D), dv(tk * D), dq(D);
#pragma omp for schedule(static)
    for (int64_t bh = 0; bh < bh_count; ++bh) {
      const float* kb = pk + bh * tk * D;
      const float* vb = pv + bh * tk * D;
      std::fill(dk.begin(), dk.end(), 0.0);
      std::fill(dv.begin(), dv.end(), 0.0);
      for (int64_t i = 0; i < tq; ++i) {
        const int64_t r = bh * tq + i;
        const float* qi = pq + r * D;
        const float* doi = pdo + r * D;
        const double delta = dot(doi, po + r * D, D);  // rowsum(dO * O) = sum_j P_j dP_j
        std::fill(dq.begin(), dq.end(), 0.0);
        const int64_t n_keys = visible_keys(causal, i, tq, tk);
        for (int64_t j = 0; j < n_keys; ++j) {
          const float* kj = kb + j * D;
          const float* vj = vb + j * D;
          const double p = std::exp(scale * dot(qi, kj, D) - plse[r]);
          const double f = drop.factor(bh, i, j);
          const double ds = p * (dot(doi, vj, D) * f - delta);
          for (int64_t d = 0; d < D; ++d) {
            dv[j * D + d] += p * f * doi[d];
            dq[d] += ds * kj[d];
            dk[j * D + d] += ds * qi[d];
          }
        }
        for (int64_t d = 0; d < D; ++d) pdq[r * D + d] = static_cast<float>(dq[d] * scale);
      }
      for (int64_t e = 0; e < tk * D; ++e) {
        pdk[bh * tk * D + e] = static_cast<float>(dk[e] * scale);
        pdv[bh * tk * D + e] = static_cast<float>(dv[e]);
      }
    }
  }
}

void attention_forward_cpu(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                           float dropout_p, uint64_t seed, uint64_t offset, const Tensor& out,
                           const Tensor& lse) {
  // 16-bit operands: Note [16-bit attention through the FP32 kernels] (attention_widen.h).
  const Tensor out_c = contiguous_output(wide_output(out));
  attention_forward_rows(contiguous(widened(q)), contiguous(widened(k)), contiguous(widened(v)),
                         causal, dropout_p, seed, offset, out_c, lse);
  rounded(out_c, out);
}

void attention_backward_cpu(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                            const Tensor& lse, const Tensor& grad_out, bool causal, float dropout_p,
                            uint64_t seed, uint64_t offset, const Tensor& grad_q,
                            const Tensor& grad_k, const Tensor& grad_v) {
  const Tensor dq = contiguous_output(wide_output(grad_q));
  const Tensor dk = contiguous_output(wide_output(grad_k));
  const Tensor dv = contiguous_output(wide_output(grad_v));
  const auto rows = [](const Tensor& t) { return contiguous(widened(t)); };
  attention_backward_rows(rows(q), rows(k), rows(v), rows(out), lse, rows(grad_out), causal,
                          dropout_p, seed, offset, dq, dk, dv);
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
