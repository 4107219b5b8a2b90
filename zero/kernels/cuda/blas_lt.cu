// The Linear layer on CUDA through cuBLASLt, whose epilogues fuse work into the GEMM:
// the forward adds the bias as the output tile is written (CUBLASLT_EPILOGUE_BIAS),
// the backward sums the bias gradient while it reads grad_out for grad_weight
// (CUBLASLT_EPILOGUE_BGRADB), except under split TF32 (split_tf32.cuh), where it would
// sum grad_out's three pieces. Each saves one full pass over a [N, out] tensor. The
// Linear + GeLU of a GPT's MLP is one call too (Note [GeLU in the GEMM's epilogue]).
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
#include <map>
#include <mutex>
#include <tuple>

#include "zero/kernels/cuda/blas_common.cuh"
#include "zero/kernels/cuda/cuda_common.cuh"
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
// top kCandidates once each, timed with CUDA events, and remembers the fastest; every
// later call of that shape uses it directly. The price is one host synchronisation per
// shape, in the first training step.
constexpr int kCandidates = 8;

struct AlgoKey {
  int device;
  bool trans_a, trans_b;
  int64_t m, n, k;
  int epilogue, compute, ab_type, d_type, bias_type;
  bool operator<(const AlgoKey& o) const {
    return std::tie(device, trans_a, trans_b, m, n, k, epilogue, compute, ab_type, d_type,
                    bias_type) < std::tie(o.device, o.trans_a, o.trans_b, o.m, o.n, o.k,
                                          o.epilogue, o.compute, o.ab_type, o.d_type,
                                          o.bias_type);
  }
};

std::mutex g_tuned_mutex;
std::map<AlgoKey, cublasLtMatmulAlgo_t>& tuned() {
  static std::map<AlgoKey, cublasLtMatmulAlgo_t> algos;
  return algos;
}

// The remembered algorithm of `key`, or null on its first call.
const cublasLtMatmulAlgo_t* tuned_algo(const AlgoKey& key) {
  std::lock_guard<std::mutex> lock(g_tuned_mutex);
  auto it = tuned().find(key);
  return it == tuned().end() ? nullptr : &it->second;
}

// Times each candidate with `run` (a warm-up call, then one timed call) and remembers the
// fastest that succeeds; null if none does.
template <typename Run>
const cublasLtMatmulAlgo_t* remember_fastest(const AlgoKey& key,
                                             const cublasLtMatmulHeuristicResult_t* candidates,
                                             int count, const Run& run) {
  cudaEvent_t start, stop;
  ZERO_CUDA_CHECK(cudaEventCreate(&start));
  ZERO_CUDA_CHECK(cudaEventCreate(&stop));
  int best = -1;
  float best_ms = 0.0f;
  for (int i = 0; i < count; ++i) {
    if (run(candidates[i].algo) != CUBLAS_STATUS_SUCCESS) continue;
    ZERO_CUDA_CHECK(cudaEventRecord(start, cuda::current_stream()));
    if (run(candidates[i].algo) != CUBLAS_STATUS_SUCCESS) continue;
    ZERO_CUDA_CHECK(cudaEventRecord(stop, cuda::current_stream()));
    ZERO_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.0f;
    ZERO_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    if (best < 0 || ms < best_ms) best = i, best_ms = ms;
  }
  ZERO_CUDA_CHECK(cudaEventDestroy(start));
  ZERO_CUDA_CHECK(cudaEventDestroy(stop));
  if (best < 0) return nullptr;
  std::lock_guard<std::mutex> lock(g_tuned_mutex);
  return &(tuned()[key] = candidates[best].algo);  // std::map nodes never move
}

// Column-major D (m x n, ld m) = op(A) op(B) + beta D in `compute`, with `epilogue`
// reading or writing `bias`. A is stored m x k (or k x m when trans_a), B k x n (or
// n x k when trans_b), both packed, both of type `ab_type` (FP32, FP16 in fp16 mode, or
// the BF16/F16 of a 16-bit Linear); D is of `d_type` and the bias of `bias_type` (FP32
// unless given). A GeLU epilogue with AUX writes its input, m x n with ld m in D's type,
// to `aux`. Returns false, having done nothing, when cuBLASLt has no algorithm.
bool lt_matmul_in(cublasComputeType_t compute, cudaDataType_t ab_type, int device, bool trans_a,
                  bool trans_b, int64_t m, int64_t n, int64_t k, const void* A, const void* B,
                  void* D, cublasLtEpilogue_t epilogue, void* bias, float beta = 0.0f,
                  cudaDataType_t d_type = CUDA_R_32F, cudaDataType_t bias_type = CUDA_R_32F,
                  void* aux = nullptr) {
  if (!aligned16(A) || !aligned16(B) || !aligned16(D) || !aligned16(bias)) return false;
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
  ZERO_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref.pref,
                                                         CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                         &workspace_bytes, sizeof(workspace_bytes)));
  // A split reduction sums its partial products in FP32 (in the workspace), never in a
  // 16-bit output, which would round every partial sum (as for cuBLAS in blas.cu).
  const uint32_t schemes = CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
  ZERO_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref.pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &schemes, sizeof(schemes)));
  const float alpha = 1.0f;
  const auto run = [&](const cublasLtMatmulAlgo_t& algo) {
    return cublasLtMatmul(handle, op.desc, &alpha, A, la.layout, B, lb.layout, &beta, D,
                          ld.layout, D, ld.layout, &algo, cuda::blas_workspace(device),
                          workspace_bytes, cuda::current_stream());
  };
  const AlgoKey key{device, trans_a, trans_b, m, n, k, static_cast<int>(epilogue),
                    static_cast<int>(compute), static_cast<int>(ab_type),
                    static_cast<int>(d_type), static_cast<int>(bias_type)};
  const cublasLtMatmulAlgo_t* algo = tuned_algo(key);
  if (algo == nullptr) {
    cublasLtMatmulHeuristicResult_t candidates[kCandidates] = {};
    int found = 0;
    if (cublasLtMatmulAlgoGetHeuristic(handle, op.desc, la.layout, lb.layout, ld.layout,
                                       ld.layout, pref.pref, kCandidates, candidates,
                                       &found) != CUBLAS_STATUS_SUCCESS ||
        found == 0) {
      return false;
    }
    // Timing the candidates runs each on D: fine when D is only written, but with
    // beta != 0 every run would add into it again. Accumulating calls then take
    // cuBLASLt's first choice, and the first beta = 0 call of the shape tunes it.
    if (beta != 0.0f) return run(candidates[0].algo) == CUBLAS_STATUS_SUCCESS;
    algo = remember_fastest(key, candidates, found, run);
    if (algo == nullptr) return false;
  }
  // A status other than success here is returned before anything runs, so the
  // caller can still fall back.
  return run(*algo) == CUBLAS_STATUS_SUCCESS;
}

// lt_matmul_in in the compute mode MX_FAST_MATMUL selects; in 3xtf32 mode a large GEMM
// runs as split TF32 (Note [FP32 GEMMs on TF32 Tensor Cores]), in fp16 mode on FP16
// copies of A and B (Note [FP16 Tensor Cores with FP32 in and out]; BGRADB then sums
// the FP16 copy of B). The BGRADB
// epilogue would sum B's three pieces, so a caller asking for it must first check
// split_tf32_pays and do without the epilogue when it is true; a GeLU epilogue's `aux`
// is not passed to split TF32, whose callers must likewise check first.
bool lt_matmul(int device, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
               const float* A, const float* B, float* D, cublasLtEpilogue_t epilogue,
               float* bias, float* aux = nullptr) {
  if (cuda::split_tf32_pays(device, m, n, k)) {
    ZERO_CHECK(aux == nullptr, "split TF32 does not take a GeLU epilogue");
    return cuda::split_tf32_gemm(device, trans_a, trans_b, m, n, k, A, trans_a ? k : m, B,
                                 trans_b ? n : k, D, epilogue, bias);
  }
  if (cuda::fp16_mode()) {
    const Tensor a16 = cuda::to_half(A, m * k, device), b16 = cuda::to_half(B, k * n, device);
    return lt_matmul_in(CUBLAS_COMPUTE_32F, CUDA_R_16F, device, trans_a, trans_b, m, n, k,
                        a16.data(), b16.data(), D, epilogue, bias, 0.0f, CUDA_R_32F, CUDA_R_32F,
                        aux);
  }
  return lt_matmul_in(cuda::compute_type(), CUDA_R_32F, device, trans_a, trans_b, m, n, k, A, B,
                      D, epilogue, bias, 0.0f, CUDA_R_32F, CUDA_R_32F, aux);
}

// lt_matmul for the tensors of a BF16 or F16 Linear: A and B of one 16-bit dtype, D
// and the bias (may be undefined) of theirs or FP32, FP32 accumulation and scale.
bool lt_matmul_16bit(int device, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                     const Tensor& A, const Tensor& B, const Tensor& D,
                     cublasLtEpilogue_t epilogue, const Tensor& bias,
                     const Tensor& aux = Tensor()) {
  const cudaDataType_t d_type = cuda::cuda_dtype(D.dtype());
  return lt_matmul_in(CUBLAS_COMPUTE_32F, cuda::cuda_dtype(A.dtype()), device, trans_a, trans_b,
                      m, n, k, A.data(), B.data(), D.data(), epilogue,
                      bias.defined() ? bias.data() : nullptr, 0.0f, d_type,
                      bias.defined() ? cuda::cuda_dtype(bias.dtype()) : d_type,
                      aux.defined() ? aux.data() : nullptr);
}

// grad_bias (out) = column sums of grad_out [N, out], accumulated in FP32 and stored in
// grad_bias's dtype, which may be wider than grad_out's.
void column_sum(const Tensor& grad_out, const Tensor& grad_bias) {
  const int64_t n_out = grad_out.size(1);
  if (grad_out.dtype() == grad_bias.dtype()) {
    return sum(grad_out, 0, reshaped(grad_bias, {1, n_out}));  // (1, out)
  }
  const Tensor wide = Tensor::Empty(grad_out.sizes(), grad_bias.options());  // (N, out)
  convert(grad_out, wide);
  sum(wide, 0, reshaped(grad_bias, {1, n_out}));
}

}  // namespace

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
                         const Tensor& out) {
  cuda::set_device(out);
  const int64_t n = x.size(0), in = x.size(1), n_out = weight.size(0);
  if (out.numel() == 0) return;
  const int device = out.device().index();
  const bool f32 = x.dtype() == DataType::F32;
  // out^T (n_out x n, column-major) = W (stored in x n_out: transposed) x^T (in x n) + bias.
  if (bias.defined() && in > 0 &&
      (f32 ? lt_matmul(device, /*trans_a=*/true, /*trans_b=*/false, n_out, n, in,
                       weight.data_ptr<float>(), x.data_ptr<float>(), out.data_ptr<float>(),
                       CUBLASLT_EPILOGUE_BIAS, bias.data_ptr<float>())
           : lt_matmul_16bit(device, /*trans_a=*/true, /*trans_b=*/false, n_out, n, in, weight,
                             x, out, CUBLASLT_EPILOGUE_BIAS, bias))) {
    return;
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
  // Under split TF32 the bias gradient is a column sum of its own (see lt_matmul), as it
  // is when a 16-bit Linear keeps its two gradients in different dtypes.
  const int device = x.device().index();
  const bool f32 = x.dtype() == DataType::F32;
  const bool fuse_bias =
      grad_bias.defined() && (f32 ? !cuda::split_tf32_pays(device, in, n_out, n)
                                  : !grad_weight.defined() ||
                                        grad_bias.dtype() == grad_weight.dtype());
  const cublasLtEpilogue_t epilogue = fuse_bias ? CUBLASLT_EPILOGUE_BGRADB
                                                : CUBLASLT_EPILOGUE_DEFAULT;
  if (grad_weight.defined() && n > 0 && grad_weight.numel() > 0 &&
      (f32 ? lt_matmul(device, /*trans_a=*/false, /*trans_b=*/true, in, n_out, n,
                       x.data_ptr<float>(), grad_out.data_ptr<float>(),
                       grad_weight.data_ptr<float>(), epilogue,
                       fuse_bias ? grad_bias.data_ptr<float>() : nullptr)
           : lt_matmul_16bit(device, /*trans_a=*/false, /*trans_b=*/true, in, n_out, n, x,
                             grad_out, grad_weight, epilogue,
                             fuse_bias ? grad_bias : Tensor()))) {
    if (grad_bias.defined() && !fuse_bias) column_sum(grad_out, grad_bias);
    return;
  }
  if (grad_weight.defined()) matmul(transposed(grad_out), x, grad_weight);  // (out, in)
  if (grad_bias.defined()) column_sum(grad_out, grad_bias);                 // (out)
}

// Note [GeLU in the GEMM's epilogue]
// A GPT's MLP applies GeLU to the output of c_fc. Unfused, that output (pre) is written
// by the GEMM, read back by the GeLU kernel and written again as y. The epilogue
// CUBLASLT_EPILOGUE_GELU_AUX_BIAS does it while the tile is still in registers: it adds
// the bias, stores the sum as the "aux" matrix (pre, which the backward's GeLU
// derivative needs) and writes gelu(pre) as D. The aux matrix is laid out like D (ld m
// in elements, which cuBLASLt requires to be a multiple of 8) and has D's dtype.
// cuBLAS's documentation says "GELU" without a formula. PyTorch's _addmm_activation,
// which uses this epilogue, substitutes gelu(x, approximate="tanh") where it cannot, so
// it is the tanh approximation that Zero's kGelu computes. How cuBLASLt evaluates it is
// not documented; CUTLASS's epilogue GeLU (GELU_taylor) writes the same formula as
// 0.5 x (1 + tanh(k0 x (1 + k1 x^2))) with the hardware's tanh.approx.f32, whose relative
// error is about 2^-11. So y may differ from unary(kGelu, pre) (tanhf) by up to about
// 2^-12 |pre|; linear_gelu_test allows twice that and prints the largest difference it
// saw. pre, and so the backward, does not depend on it. For BF16 and F16, y is rounded
// from the FP32 pre, where the unfused ops round pre first: closer to the FP32 value,
// not equal to the unfused result.
// The backward needs dpre = dy gelu'(pre). CUBLASLT_EPILOGUE_DGELU_BGRAD would fuse
// that into the GEMM that makes dy, c_proj's input gradient, which belongs to another
// graph node (OpLinear); the autograd op (OpLinearGelu) runs the vectorised GeLU
// backward instead, then the Linear's backward (BGRADB for the bias).
void linear_gelu_forward_cuda(const Tensor& x, const Tensor& weight, const Tensor& bias,
                              const Tensor& y, const Tensor& pre) {
  cuda::set_device(y);
  const int64_t n = x.size(0), in = x.size(1), n_out = weight.size(0);
  if (y.numel() == 0) return;
  const int device = y.device().index();
  const bool f32 = x.dtype() == DataType::F32;
  const cublasLtEpilogue_t epilogue =
      bias.defined() ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX;
  // FP32 in the default IEEE mode runs the unfused ops: the epilogue's GeLU is not
  // IEEE FP32 (above), and the default promises FP32 inside. Split TF32
  // (MX_FAST_MATMUL=3xtf32, a large FP32 GEMM) does too: its GEMM goes through
  // split_tf32_gemm, whose interface carries the bias but no aux output. The fallback
  // computes the same pre as the Linear of the mode.
  const bool unfused = f32 && (matmul_precision() == MatmulPrecision::kIeee ||
                               cuda::split_tf32_pays(device, n_out, n, in));
  // y^T and pre^T (n_out x n, column-major) = W (stored in x n_out: transposed) x^T.
  if (in > 0 && !unfused &&
      (f32 ? lt_matmul(device, /*trans_a=*/true, /*trans_b=*/false, n_out, n, in,
                       weight.data_ptr<float>(), x.data_ptr<float>(), y.data_ptr<float>(),
                       epilogue, bias.defined() ? bias.data_ptr<float>() : nullptr,
                       pre.data_ptr<float>())
           : lt_matmul_16bit(device, /*trans_a=*/true, /*trans_b=*/false, n_out, n, in, weight,
                             x, y, epilogue, bias, pre))) {
    return;
  }
  // No algorithm (n_out not a multiple of 8, a misaligned pointer, an empty sum when
  // in = 0), IEEE FP32 or split TF32: the Linear, then GeLU, exactly the unfused ops.
  linear_forward_cuda(x, weight, bias, pre);
  unary(UnaryOp::kGelu, pre, y);
}

}  // namespace

ZERO_REGISTER_KERNEL(linear_forward, kCuda, linear_forward_cuda);
ZERO_REGISTER_KERNEL(linear_backward_params, kCuda, linear_backward_params_cuda);
ZERO_REGISTER_KERNEL(linear_gelu_forward, kCuda, linear_gelu_forward_cuda);

}  // namespace zero::ops
