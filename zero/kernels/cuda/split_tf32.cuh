// FP32 GEMMs on TF32 Tensor Cores by splitting each operand in two, used by blas.cu
// and blas_lt.cu.
//
// Note [FP32 GEMMs on TF32 Tensor Cores]
// An H200 multiplies FP32 matrices at about 50 TFLOP/s on its FP32 units and TF32
// matrices at about 400 TFLOP/s on its Tensor Cores (chapter 07 measures both). TF32
// keeps 10 of FP32's 23 stored mantissa bits, so one TF32 product is far less exact
// than FP32. Three of them are nearly as exact. Write each operand as x = big + small,
// with big = x rounded to TF32 and small = the remainder x - big (exact in FP32), also
// rounded to TF32. Then
//     a b = big_a big_b + big_a small_b + small_a big_b + small_a small_b,
// and the last term, under 2^-22 of |a b|, is dropped. The other three are one GEMM
// over a reduction three times as long: along k, A becomes [small_a | big_a | big_a]
// and B becomes [big_b | small_b | big_b], so the Tensor Cores' FP32 accumulators add
// all three products, the small ones first while the sum is still small. Three times
// the flops at eight times the rate: about 2.4x faster than SGEMM at 8192^3.
//
// Each product is then about as exact as in FP32, but the sum is not quite: the Tensor
// Cores add into their FP32 accumulators less carefully than the FP32 units do (they
// appear to truncate), so over a long reduction the error grows faster than SGEMM's.
// Chapter 07 measures it against a double reference at 4096^3: SGEMM 1.2e-7, split TF32
// 6.9e-7 (3.0e-6 before the small products went first), one TF32 product 1.8e-5.
// CUTLASS calls this "3xTF32"; the fused attention does the same split in its own
// kernels (Note [Tensor Cores in FP32] in attention_tf32.cuh).
//
// The price is a pass that writes each operand's pieces (three times its size, freed
// after the GEMM). That pass moves about 16 (m + n) k bytes while the GEMM saves time in
// proportion to m n k, so it pays only when both m and n are large: a GEMM with an
// output side under kSplitMinSide (a decode step's GEMV, a 65-word vocabulary's logits)
// or under kSplitMinMacs multiply-adds stays SGEMM, as do batched GEMMs. An infinite
// input gives NaN (its small part is inf - inf) where SGEMM gives inf. The split is
// opt-in (MX_FAST_MATMUL=3xtf32): its error is several times SGEMM's, and FP32 that is
// FP32 is the default.
#pragma once

#include <cstdint>

#include "zero/core/tensor.h"

namespace zero::ops::cuda {

// GEMMs with fewer multiply-adds (m n k) than this, or an output side (m or n) shorter
// than that, stay SGEMM in exact mode.
constexpr int64_t kSplitMinMacs = int64_t{1} << 24;
constexpr int64_t kSplitMinSide = 256;

// True when the GEMM m x n x k on GPU `device` should run as split TF32: exact mode
// without MX_FAST_MATMUL=ieee, a GPU with TF32 Tensor Cores (sm_80+), and a GEMM large
// enough by both measures above.
bool split_tf32_pays(int device, int64_t m, int64_t n, int64_t k);

// One operand of a column-major GEMM C (m x n) = op(A) op(B), rewritten in pieces.
struct SplitOperand {
  Tensor pieces;  // K-major: for each of the `dim` rows of op(A) (columns of op(B)),
                  // its 3k values, the three pieces one after another
  int64_t ld;     // its leading dimension, 3k
  const float* data() const { return pieces.data_ptr<float>(); }
};

// Splits operand A (`second` false: op(A) is `dim` x k) or B (`second` true: op(B) is
// k x `dim`), stored column-major with leading dimension ld and transposed by cuBLAS
// when `trans`. A's pieces are in the order small, big, big; B's big, small, big.
//
// The result is K-major whatever the source was: the reduction runs along contiguous
// memory, so A's pieces are to be passed transposed (stored 3k x dim) and B's not (also
// stored 3k x dim). Hopper's TF32 Tensor-Core instructions read both operands K-major
// from shared memory; cuBLAS handles the other layouts, but a Linear layer's weight
// gradient, whose operands are both the other way, ran at half the forward's rate. The
// pass that writes the pieces transposes such an operand at no extra cost.
SplitOperand split_tf32(const float* x, bool trans, bool second, int64_t dim, int64_t k,
                        int64_t ld, int device);

// Note [K-major weight gradients in TF32]
// A Linear's weight gradient g^T x sums over the rows of g [N, out] and x [N, in], which
// run along that sum with a stride. In one TF32 product (MX_FAST_MATMUL=tf32) cuBLASLt's
// kernels for that layout ran at about 150 TFLOP/s on an H100 where the forward's, both
// operands contiguous along the sum, ran at 300; a GEMM with one operand each way (the
// input gradients') ran at 300 too. So for a weight gradient of at least kKMajorMinRows
// rows and kKMajorMinWidth inputs and outputs, the smaller of g and x is first copied
// transposed, K-major (auto); the environment variable ZERO_TF32_WEIGHT_GRAD chooses g,
// x, both or nt (neither) instead, at any width. The copy costs a pass over the operand
// (read and write) and a temporary of its size. In the GPT-2 step (widths 768 to 3072)
// auto took 38.7 ms where nt took 39.9 (H100); in the char model's (widths 384 to 1536)
// 11.20 against 11.08: its 24 copies, each of a [16384, 384] operand, cost 0.62 ms of
// kernels, more than its GEMMs saved. Always copying g lost there too
// (docs/speed_notes.md, item 59).
constexpr int64_t kKMajorMinRows = 2048;
constexpr int64_t kKMajorMinWidth = 768;

enum class KMajor { kNone, kGrad, kInput, kBoth };

// Which operands of the weight gradient of a Linear with `rows` rows, `in` inputs and
// `out` outputs to copy K-major: kNone unless the mode is TF32 and the rows are at least
// kKMajorMinRows and outnumber in and out; by default (auto) kNone below kKMajorMinWidth.
KMajor tf32_k_major(int64_t rows, int64_t in, int64_t out);

// Note [K-major input gradients in TF32]
// A Linear's input gradient g W reads g [N, out] along its sum but W [out, in] across
// it: in cuBLAS's terms the first operand is MN-major, a layout Hopper's TF32
// Tensor-Core instructions cannot read from shared memory, and cuBLAS's kernels for it
// ran below the forward's rate on the char model's shapes (bench_linear on an H100).
// W is small next to g, so in TF32 mode a GEMM whose first operand is MN-major, packed,
// at most a quarter of the size of a K-major second operand, and narrower than
// kKMajorMinWidth on one side reads a K-major copy of it instead: the char model's
// step (widths 384 to 1536, 24 copies of at most 2.4 MB) took 10.76 ms against 11.04
// on an H100; GPT-2's (widths 768 to 3072) 37.09 against 36.99, no faster, so its
// layers keep reading W as it is (docs/speed_notes.md, item 64). ZERO_TF32_GRAD_X=nn
// turns the copy off, to time one against the other.
// Whether cuBLAS's first operand, op(B) N x K not transposed with leading dimension
// ldb, is copied K-major for a TF32 GEMM whose second operand, op(A) K x M, is K-major.
bool tf32_copy_first_operand(bool trans_b, bool trans_a, int64_t n, int64_t m, int64_t k,
                             int64_t ldb);

// The transpose of a column-major matrix of `lines` columns of `len` packed floats (a
// row-major [lines, len] matrix): a row-major [len, lines] tensor on GPU `device`.
Tensor k_major_copy(const float* x, int64_t lines, int64_t len, int device);

}  // namespace zero::ops::cuda
