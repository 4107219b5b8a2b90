// The Linear layer on CUDA through cuBLASLt, whose epilogues fuse work into the GEMM:
// the forward adds the bias as the output tile is written (CUBLASLT_EPILOGUE_BIAS),
// the FP32 backward sums the bias gradient while it reads grad_out for grad_weight
// (CUBLASLT_EPILOGUE_BGRADB), except under split TF32 (split_tf32.cuh), where it would
// sum grad_out's three pieces, and for 16-bit operands, where cuBLASLt ran BGRADB as a
// kernel of its own after the GEMM anyway and column_sum.cu's kernel takes about as long.
// Each fused epilogue saves one full pass over a [N, out] tensor. The GeLU of a GPT's
// MLP goes into epilogues as well, in gelu_epilogue.cu.
//
// Operands are row-major and handed over as in Note [Row-major tensors in a
// column-major library] (blas.cu): a row-major R x C matrix is, column-major, its
// transpose. When cuBLASLt offers no algorithm for a case (an epilogue unsupported
// for the compute type, a misaligned pointer), the same result comes from matmul_cuda
// plus a broadcast add or a column sum.
//
// BF16 and F16 Linears take the same epilogues with 16-bit A and B, FP32 accumulation
// and scale type, and D and the bias each in its own dtype (the operands', or FP32 for a
// gradient kept for an FP32 optimiser): split TF32 and MX_FAST_MATMUL concern FP32
// operands only (lt_matmul_16bit).
#include <cublasLt.h>

#include <cstdint>

#include "zero/kernels/cuda/blas_common.cuh"
#include "zero/kernels/cuda/column_sum.cuh"
#include "zero/kernels/cuda/cuda_common.cuh"
#include "zero/kernels/cuda/gemm_tuning.cuh"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/precision.h"
#include "zero/kernels/tensor_ops.h"
#include "zero/kernels/views.h"
#include "zero/kernels/cuda/split_tf32.cuh"

namespace zero::ops {
namespace {

// RAII owners of the cuBLASLt descriptors of one call.
struct MatmulDesc {
  cublasLtMatmulDesc_t desc = nullptr;
  ~MatmulDesc() { if (desc) cublasLtMatmulDescDestroy(desc); }
};
struct Layout {
  cublasLtMatrixLayout_t layout = nullptr;
  ~Layout() { if (layout) cublasLtMatrixLayoutDestroy(layout); }
};
struct Preference {
  cublasLtMatmulPreference_t pref = nullptr;
  ~Preference() { if (pref) cublasLtMatmulPreferenceDestroy(pref); }
};

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Note [Choosing a GEMM algorithm]
// cuBLASLt's heuristic ranks its kernels for a shape without running them, and for the
// weight gradient of a Linear layer, g^T x with a long reduction (k = B*T rows) and a
// small [out, in] output, its first choice can leave most of the GPU idle. So the first
// call of each shape (sizes, transposes, epilogue, precision mode) runs the heuristic's
// top kCandidates, each timed with CUDA events over kTimedRuns runs after one to warm
// up, and remembers the fastest; every later call of that shape uses it directly. The
// price is one host synchronisation per shape, in the first training step. With one
// timed run a candidate the GPU's noise chose among near equals, and the choice moved
// from process to process (docs/speed_notes.md, item 63). The timing and the choices
// remembered are gemm_tuning.cuh's, which can also take choices made by another process.

// Note [The residual as the GEMM's C]
// A GPT block adds each c_proj's output to the residual stream: as two ops the Linear
// writes its [N, C] output, and an addition reads it back with the stream and writes
// the sum, a pass over three [N, C] tensors. cuBLASLt computes D = alpha op(A) op(B) +
// beta C (+ bias) with C and D separate matrices of one layout, so with beta = 1 and the
// stream as C the sum is made as the tile is written: the stream is read once, the
// Linear's output never stored. The sum is then rounded once, in D's type, where the
// two ops round the Linear's output first: in FP32 an ulp's difference, for a 16-bit
// output closer to the exact sum. D must not be C, which the timing of the candidates
// (Note [Choosing a GEMM algorithm]) would add again on every run.

// Column-major D (m x n, ld m) = op(A) op(B) + beta D in `compute`, with `epilogue`
// reading or writing `bias`; with `C` (m x n, ld m, D's type, not D) D = op(A) op(B) + C
// instead. A is stored m x k (or k x m when trans_a), B k x n (or n x k when trans_b),
// both packed, both of type `ab_type` (FP32, FP16 in fp16 mode, or
// the BF16/F16 of a 16-bit Linear); D is of `d_type` and the bias of `bias_type` (FP32
// unless given). A GeLU epilogue with AUX writes its input, m x n with ld m in D's type,
// to `aux`. Returns false, having done nothing, when cuBLASLt has no algorithm.
bool lt_matmul_in(cublasComputeType_t compute, cudaDataType_t ab_type, int device, bool trans_a,
                  bool trans_b, int64_t m, int64_t n, int64_t k, const void* A, const void* B,
                  void* D, cublasLtEpilogue_t epilogue, void* bias, float beta = 0.0f,
                  cudaDataType_t d_type = CUDA_R_32F, cudaDataType_t bias_type = CUDA_R_32F,
                  void* aux = nullptr, const void* C = nullptr) {
  if (!aligned16(A) || !aligned16(B) || !aligned16(D) || !aligned16(bias) || !aligned16(C)) {
    return false;
  }
  if (C != nullptr) beta = 1.0f;
  // cuBLASLt requires the aux leading dimension to be a multiple of 8 elements.
  if (aux != nullptr && (m % 8 != 0 || !aligned16(aux))) return false;
  cublasLtHandle_t handle = reinterpret_cast<cublasLtHandle_t>(cuda::blas_handle(device));
  MatmulDesc op;
  if (cublasLtMatmulDescCreate(&op.desc, compute, CUDA_R_32F) !=
      CUBLAS_STATUS_SUCCESS) {
    return false;
  }
  const cublasOperation_t ta = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t tb = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const auto set = [&](cublasLtMatmulDescAttributes_t attribute, const void* value, size_t size) {
    ZERO_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op.desc, attribute, value, size));
  };
  set(CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta));
  set(CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb));
  set(CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue));
  set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias));
  if (ab_type != CUDA_R_32F) {  // named, not left to cuBLASLt's default for these inputs
    set(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof(bias_type));
  }
  if (aux != nullptr) {  // its dtype is left at the default, D's
    const int64_t aux_ld = m;
    set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof(aux));
    set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &aux_ld, sizeof(aux_ld));
  }
  Layout la, lb, ld;
  ZERO_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&la.layout, ab_type, trans_a ? k : m,
                                               trans_a ? m : k, trans_a ? k : m));
  ZERO_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&lb.layout, ab_type, trans_b ? n : k,
                                               trans_b ? k : n, trans_b ? n : k));
  ZERO_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&ld.layout, d_type, m, n, m));
  Preference pref;
  ZERO_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref.pref));
  const size_t workspace_bytes = cuda::kBlasWorkspaceBytes;
  ZERO_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
      sizeof(workspace_bytes)));
  // A split reduction sums its partial products in FP32 (in the workspace), never in a
  // 16-bit output, which would round every partial sum (as for cuBLAS in blas.cu).
  const uint32_t schemes = CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
  ZERO_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref.pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &schemes, sizeof(schemes)));
  const float alpha = 1.0f;
  const auto run = [&](const cublasLtMatmulAlgo_t& algo) {
    return cublasLtMatmul(handle, op.desc, &alpha, A, la.layout, B, lb.layout, &beta,
                          C != nullptr ? C : D, ld.layout, D, ld.layout, &algo,
                          cuda::blas_workspace(device), workspace_bytes, cuda::current_stream());
  };
  const cuda::AlgoKey key{
      device, cuda::GemmShape{trans_a, trans_b, m, n, k, static_cast<int>(epilogue),
                              static_cast<int>(compute), static_cast<int>(ab_type),
                              static_cast<int>(d_type), static_cast<int>(bias_type),
                              beta != 0.0f}};
  const cublasLtMatmulAlgo_t* algo = cuda::tuned_algo(key);
  if (algo == nullptr) {
    cublasLtMatmulHeuristicResult_t candidates[cuda::kCandidates] = {};
    int found = 0;
    if (cublasLtMatmulAlgoGetHeuristic(handle, op.desc, la.layout, lb.layout, ld.layout,
                                       ld.layout, pref.pref, cuda::kCandidates, candidates,
                                       &found) != CUBLAS_STATUS_SUCCESS ||
        found == 0) {
      return false;
    }
    // Timing the candidates runs each on D: fine when D is only written (C, if any,
    // is another matrix), but with beta != 0 and no C every run would add into D again.
    // Such accumulating calls take cuBLASLt's first choice.
    if (beta != 0.0f && C == nullptr) return run(candidates[0].algo) == CUBLAS_STATUS_SUCCESS;
    algo = cuda::remember_fastest(key, candidates, found, run);
    if (algo == nullptr) return false;
  }
  // A status other than success here is returned before anything runs, so the
  // caller can still fall back.
  return run(*algo) == CUBLAS_STATUS_SUCCESS;
}

// grad_bias (out) = column sums of grad_out [N, out], accumulated in FP32 and stored in
// grad_bias's dtype, which may be wider than grad_out's (column_sum.cuh).
void column_sum(const Tensor& grad_out, const Tensor& grad_bias) {
  cuda::column_sums(contiguous(grad_out), grad_bias);
}

}  // namespace

// The two entry points of blas_common.cuh over lt_matmul_in: FP32 operands in the
// precision mode's compute, and the tensors of a 16-bit Linear.
bool cuda::lt_matmul(int device, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                     const float* A, const float* B, float* D, cublasLtEpilogue_t epilogue,
                     float* bias, float* aux, const float* C) {
  if (cuda::split_tf32_pays(device, m, n, k)) {
    ZERO_CHECK(aux == nullptr, "split TF32 does not take an epilogue's aux matrix");
    if (C != nullptr) return false;  // its beta adds D; the caller adds C itself
    return cuda::split_tf32_gemm(device, trans_a, trans_b, m, n, k, A, trans_a ? k : m, B,
                                 trans_b ? n : k, D, epilogue, bias);
  }
  if (cuda::fp16_mode()) {
    const Tensor a16 = cuda::to_half(A, m * k, device), b16 = cuda::to_half(B, k * n, device);
    return lt_matmul_in(CUBLAS_COMPUTE_32F, CUDA_R_16F, device, trans_a, trans_b, m, n, k,
                        a16.data(), b16.data(), D, epilogue, bias, 0.0f, CUDA_R_32F, CUDA_R_32F,
                        aux, C);
  }
  return lt_matmul_in(cuda::compute_type(), CUDA_R_32F, device, trans_a, trans_b, m, n, k, A, B,
                      D, epilogue, bias, 0.0f, CUDA_R_32F, CUDA_R_32F, aux, C);
}

bool cuda::lt_matmul_16bit(int device, bool trans_a, bool trans_b, int64_t m, int64_t n,
                           int64_t k, const Tensor& A, const Tensor& B, const Tensor& D,
                           cublasLtEpilogue_t epilogue, const Tensor& bias, const Tensor& aux,
                           const Tensor& C) {
  const cudaDataType_t d_type = cuda::cuda_dtype(D.dtype());
  return lt_matmul_in(CUBLAS_COMPUTE_32F, cuda::cuda_dtype(A.dtype()), device, trans_a, trans_b,
                      m, n, k, A.data(), B.data(), D.data(), epilogue,
                      bias.defined() ? bias.data() : nullptr, 0.0f, d_type,
                      bias.defined() ? cuda::cuda_dtype(bias.dtype()) : d_type,
                      aux.defined() ? aux.data() : nullptr, C.defined() ? C.data() : nullptr);
}

bool cuda::split_tf32_gemm(int device, bool trans_a, bool trans_b, int64_t m, int64_t n,
                           int64_t k, const float* A, int64_t lda, const float* B, int64_t ldb,
                           float* D, cublasLtEpilogue_t epilogue, float* bias, float beta) {
  ZERO_CHECK(epilogue != CUBLASLT_EPILOGUE_BGRADB, "split TF32 cannot fuse the bias gradient");
  // The pieces are packed and K-major: A transposed, B not (split_tf32.cuh).
  const SplitOperand a3 = split_tf32(A, trans_a, /*second=*/false, m, k, lda, device);
  const SplitOperand b3 = split_tf32(B, trans_b, /*second=*/true, n, k, ldb, device);
  return lt_matmul_in(CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F, device, /*trans_a=*/true,
                      /*trans_b=*/false, m, n, 3 * k, a3.data(), b3.data(), D, epilogue, bias,
                      beta);
}

namespace {

void linear_forward_cuda(const Tensor& x, const Tensor& weight, const Tensor& bias,
                         const Tensor& out, const Tensor& residual) {
  cuda::set_device(out);
  const int64_t n = x.size(0), in = x.size(1), n_out = weight.size(0);
  if (out.numel() == 0) return;
  const int device = out.device().index();
  const bool f32 = x.dtype() == DataType::F32;
  const cublasLtEpilogue_t epilogue =
      bias.defined() ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
  // out^T (n_out x n, column-major) = W (stored in x n_out: transposed) x^T (in x n) + bias,
  // + residual^T as C (Note [The residual as the GEMM's C]).
  if ((bias.defined() || residual.defined()) && in > 0 &&
      (f32 ? cuda::lt_matmul(device, /*trans_a=*/true, /*trans_b=*/false, n_out, n, in,
                             weight.data_ptr<float>(), x.data_ptr<float>(),
                             out.data_ptr<float>(), epilogue,
                             bias.defined() ? bias.data_ptr<float>() : nullptr, nullptr,
                             residual.defined() ? residual.data_ptr<float>() : nullptr)
           : cuda::lt_matmul_16bit(device, /*trans_a=*/true, /*trans_b=*/false, n_out, n, in,
                                   weight, x, out, epilogue, bias, Tensor(), residual))) {
    return;
  }
  if (residual.defined()) {  // no algorithm with C (or split TF32): the two ops
    linear_forward_cuda(x, weight, bias, out, Tensor());
    return binary(BinaryOp::kAdd, out, residual, out);
  }
  if (f32 || !bias.defined()) {
    matmul(x, transposed(weight), out);                            // (N, out)
    if (bias.defined()) binary(BinaryOp::kAdd, out, bias, out);  // element-wise: may alias
    return;
  }
  // A 16-bit output is rounded once, after the bias, as the epilogue would.
  const TensorOption f32_on = TensorOption().OnDevice(out.device());
  const Tensor acc = Tensor::Empty(out.sizes(), f32_on), b32 = Tensor::Empty({n_out}, f32_on);
  matmul(x, transposed(weight), acc);  // (N, out) in FP32
  convert(bias, b32);
  binary(BinaryOp::kAdd, acc, b32, acc);
  convert(acc, out);
}

void linear_backward_params_cuda(const Tensor& grad_out, const Tensor& x,
                                 const Tensor& grad_weight, const Tensor& grad_bias) {
  cuda::set_device(x);
  const int64_t n = x.size(0), in = x.size(1), n_out = grad_out.size(1);
  // grad_weight^T (in x n_out, column-major) = x^T (in x n) g (n x n_out: g^T stored
  // n_out x n, transposed); BGRADB sums op(B) = g over the k = n rows into grad_bias.
  // Under split TF32 the bias gradient is a column sum of its own (see lt_matmul), and
  // for 16-bit operands always: there cuBLASLt ran BGRADB as a kernel of its own after
  // the GEMM, which column_sums (column_sum.cu) matches.
  const int device = x.device().index();
  const bool f32 = x.dtype() == DataType::F32;
  // In TF32, x^T [in, n] (op(A) = A^T) or g^T [n_out, n] (op(B) = B) copied first (Note
  // [K-major weight gradients in TF32], split_tf32.cuh); with g copied the bias gradient
  // is a column sum of its own, as under split TF32 (BGRADB would sum the copy's rows);
  // with x copied BGRADB still sums g, where cuBLASLt has a kernel for that layout.
  const bool split = cuda::split_tf32_pays(device, in, n_out, n);
  const cuda::KMajor k_major = f32 && grad_weight.defined() && !split
                                   ? cuda::tf32_k_major(n, in, n_out)
                                   : cuda::KMajor::kNone;
  const bool g_copied = k_major == cuda::KMajor::kGrad || k_major == cuda::KMajor::kBoth;
  bool fuse_bias = grad_bias.defined() && f32 && !split && !g_copied;
  Tensor x_t, g_t;
  if (k_major == cuda::KMajor::kInput || k_major == cuda::KMajor::kBoth) {
    x_t = cuda::k_major_copy(x.data_ptr<float>(), n, in, device);  // (in, n)
  }
  if (g_copied) g_t = cuda::k_major_copy(grad_out.data_ptr<float>(), n, n_out, device);
  const auto gemm = [&] {
    const cublasLtEpilogue_t epilogue = fuse_bias ? CUBLASLT_EPILOGUE_BGRADB
                                                  : CUBLASLT_EPILOGUE_DEFAULT;
    return f32 ? cuda::lt_matmul(device, /*trans_a=*/x_t.defined(), /*trans_b=*/!g_copied, in,
                                 n_out, n, (x_t.defined() ? x_t : x).data_ptr<float>(),
                                 (g_copied ? g_t : grad_out).data_ptr<float>(),
                                 grad_weight.data_ptr<float>(), epilogue,
                                 fuse_bias ? grad_bias.data_ptr<float>() : nullptr)
               : cuda::lt_matmul_16bit(device, /*trans_a=*/false, /*trans_b=*/true, in, n_out,
                                       n, x, grad_out, grad_weight, epilogue,
                                       fuse_bias ? grad_bias : Tensor());
  };
  // A bias gradient summed apart is summed first, while g, just written by the op
  // after this Linear, is still in L2: after the GEMM, which streams x through L2 too,
  // the sum read more of it from memory (the char model's attention c_proj, a [16384,
  // 384] BF16 g: 5.8 -> 4.9 us on an H100; docs/speed_notes.md, item 78).
  const bool summed_first = grad_bias.defined() && !fuse_bias;
  if (summed_first) column_sum(grad_out, grad_bias);  // (out)
  if (grad_weight.defined() && n > 0 && grad_weight.numel() > 0) {
    bool done = gemm();
    if (!done && fuse_bias && x_t.defined()) {  // no BGRADB kernel for x copied: sum apart
      fuse_bias = false;
      done = gemm();
      if (done) column_sum(grad_out, grad_bias);
    }
    if (done) return;
  }
  if (grad_weight.defined()) matmul(transposed(grad_out), x, grad_weight);  // (out, in)
  if (grad_bias.defined() && !summed_first) column_sum(grad_out, grad_bias);  // (out)
}

}  // namespace

ZERO_REGISTER_KERNEL(linear_forward, kCuda, linear_forward_cuda);
ZERO_REGISTER_KERNEL(linear_backward_params, kCuda, linear_backward_params_cuda);

}  // namespace zero::ops
