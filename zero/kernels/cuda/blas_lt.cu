// The Linear layer on CUDA through cuBLASLt, whose epilogues fuse work into the GEMM:
// the forward adds the bias as the output tile is written (CUBLASLT_EPILOGUE_BIAS),
// the backward sums the bias gradient while it reads grad_out for grad_weight
// (CUBLASLT_EPILOGUE_BGRADB), except under split TF32 (split_tf32.cuh), where it would
// sum grad_out's three pieces. Each saves one full pass over a [N, out] tensor.
//
// Operands are row-major and handed over as in Note [Row-major tensors in a
// column-major library] (blas.cu): a row-major R x C matrix is, column-major, its
// transpose. When cuBLASLt offers no algorithm for a case (an epilogue unsupported
// for the compute type, a misaligned pointer), the same result comes from matmul_cuda
// plus a broadcast add or a column sum.
#include <cublasLt.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>

#include "zero/kernels/cuda/blas_common.cuh"
#include "zero/kernels/cuda/cuda_common.cuh"
#include "zero/kernels/dispatch.h"
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
  int epilogue, compute, ab_type;
  bool operator<(const AlgoKey& o) const {
    return std::tie(device, trans_a, trans_b, m, n, k, epilogue, compute, ab_type) <
           std::tie(o.device, o.trans_a, o.trans_b, o.m, o.n, o.k, o.epilogue, o.compute,
                    o.ab_type);
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
// n x k when trans_b), both packed, both of type `ab_type` (FP32, or FP16 in fp16
// mode); D and the bias are FP32. Returns false, having done nothing, when cuBLASLt
// has no algorithm.
bool lt_matmul_in(cublasComputeType_t compute, cudaDataType_t ab_type, int device, bool trans_a,
                  bool trans_b, int64_t m, int64_t n, int64_t k, const void* A, const void* B,
                  float* D, cublasLtEpilogue_t epilogue, float* bias, float beta = 0.0f) {
  if (!aligned16(A) || !aligned16(B) || !aligned16(D) || !aligned16(bias)) return false;
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
  if (ab_type != CUDA_R_32F) {  // the bias follows D, FP32, rather than the inputs
    const cudaDataType_t bias_type = CUDA_R_32F;
    set(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof(bias_type));
  }
  Layout la, lb, ld;
  ZERO_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&la.layout, ab_type, trans_a ? k : m,
                                               trans_a ? m : k, trans_a ? k : m));
  ZERO_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&lb.layout, ab_type, trans_b ? n : k,
                                               trans_b ? k : n, trans_b ? n : k));
  ZERO_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&ld.layout, CUDA_R_32F, m, n, m));
  Preference pref;
  ZERO_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref.pref));
  const size_t workspace_bytes = cuda::kBlasWorkspaceBytes;
  ZERO_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref.pref,
                                                         CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                         &workspace_bytes, sizeof(workspace_bytes)));
  const float alpha = 1.0f;
  const auto run = [&](const cublasLtMatmulAlgo_t& algo) {
    return cublasLtMatmul(handle, op.desc, &alpha, A, la.layout, B, lb.layout, &beta, D,
                          ld.layout, D, ld.layout, &algo, cuda::blas_workspace(device),
                          workspace_bytes, cuda::current_stream());
  };
  const AlgoKey key{device, trans_a, trans_b, m, n, k, static_cast<int>(epilogue),
                    static_cast<int>(compute), static_cast<int>(ab_type)};
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
// split_tf32_pays and do without the epilogue when it is true.
bool lt_matmul(int device, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
               const float* A, const float* B, float* D, cublasLtEpilogue_t epilogue,
               float* bias) {
  if (cuda::split_tf32_pays(device, m, n, k)) {
    return cuda::split_tf32_gemm(device, trans_a, trans_b, m, n, k, A, trans_a ? k : m, B,
                                 trans_b ? n : k, D, epilogue, bias);
  }
  if (cuda::fp16_mode()) {
    const Tensor a16 = cuda::to_half(A, m * k, device), b16 = cuda::to_half(B, k * n, device);
    return lt_matmul_in(CUBLAS_COMPUTE_32F, CUDA_R_16F, device, trans_a, trans_b, m, n, k,
                        a16.data(), b16.data(), D, epilogue, bias);
  }
  return lt_matmul_in(cuda::compute_type(), CUDA_R_32F, device, trans_a, trans_b, m, n, k, A, B,
                      D, epilogue, bias);
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
  // out^T (n_out x n, column-major) = W (stored in x n_out: transposed) x^T (in x n) + bias.
  if (bias.defined() && in > 0 &&
      lt_matmul(out.device().index(), /*trans_a=*/true, /*trans_b=*/false, n_out, n, in,
                weight.data_ptr<float>(), x.data_ptr<float>(), out.data_ptr<float>(),
                CUBLASLT_EPILOGUE_BIAS, bias.data_ptr<float>())) {
    return;
  }
  matmul(x, transposed(weight), out);                            // (N, out)
  if (bias.defined()) binary(BinaryOp::kAdd, out, bias, out);  // element-wise: may alias
}

void linear_backward_params_cuda(const Tensor& grad_out, const Tensor& x,
                                 const Tensor& grad_weight, const Tensor& grad_bias) {
  cuda::set_device(x);
  const int64_t n = x.size(0), in = x.size(1), n_out = grad_out.size(1);
  // grad_weight^T (in x n_out, column-major) = x^T (in x n) g (n x n_out: g^T stored
  // n_out x n, transposed); BGRADB sums op(B) = g over the k = n rows into grad_bias.
  // Under split TF32 the bias gradient is a column sum of its own (see lt_matmul).
  const int device = x.device().index();
  const bool fuse_bias = grad_bias.defined() && !cuda::split_tf32_pays(device, in, n_out, n);
  if (grad_weight.defined() && n > 0 && grad_weight.numel() > 0 &&
      lt_matmul(device, /*trans_a=*/false, /*trans_b=*/true, in, n_out, n, x.data_ptr<float>(),
                grad_out.data_ptr<float>(), grad_weight.data_ptr<float>(),
                fuse_bias ? CUBLASLT_EPILOGUE_BGRADB : CUBLASLT_EPILOGUE_DEFAULT,
                fuse_bias ? grad_bias.data_ptr<float>() : nullptr)) {
    if (grad_bias.defined() && !fuse_bias) sum(grad_out, 0, reshaped(grad_bias, {1, n_out}));
    return;
  }
  if (grad_weight.defined()) matmul(transposed(grad_out), x, grad_weight);  // (out, in)
  if (grad_bias.defined()) sum(grad_out, 0, reshaped(grad_bias, {1, n_out}));  // (1, out)
}

}  // namespace

ZERO_REGISTER_KERNEL(linear_forward, kCuda, linear_forward_cuda);
ZERO_REGISTER_KERNEL(linear_backward_params, kCuda, linear_backward_params_cuda);

}  // namespace zero::ops
