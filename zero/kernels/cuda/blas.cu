// CUDA matmul through cuBLAS. One handle (and workspace) per GPU, made on first use.
//
// Note [Row-major tensors in a column-major library]
// cuBLAS reads matrices column-major. A row-major R x C matrix with row stride ld
// is, read column-major, its transpose: a C x R matrix with leading dimension ld.
// So for C = A B (all row-major) we ask cuBLAS for C^T = B^T A^T: pass B as the
// first operand and A as the second, swap M and N, and cuBLAS writes C^T
// column-major, which is exactly C row-major. A transposed view (unit stride
// along rows instead of columns) is already column-major: it only flips that
// operand's transpose flag. No copies either way; only a view with no unit
// stride at all is made contiguous first.
//
// matmul_precision() (precision.h, MX_FAST_MATMUL) selects the arithmetic: ieee, the
// default, is cuBLAS's SGEMM on the FP32 units for every size; 3xtf32 runs large GEMMs
// as split TF32 on Tensor Cores (Note [FP32 GEMMs on TF32 Tensor Cores],
// split_tf32.cuh); tf32 is one TF32 Tensor-Core product; fp16 converts the operands to
// FP16 for FP16 Tensor Cores with FP32 accumulation and output (Note [FP16 Tensor Cores
// with FP32 in and out], blas_fp16.cu).
// Those precisions are about FP32 operands: BF16 and F16 operands always go to the
// Tensor Cores as they are, with FP32 accumulation (gemm_16bit).
#include <cublas_v2.h>

#include <mutex>
#include <vector>

#include "zero/kernels/cuda/blas_common.cuh"
#include "zero/kernels/cuda/cuda_common.cuh"
#include "zero/kernels/cuda/split_tf32.cuh"
#include "zero/kernels/dims_arg.h"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/precision.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {
namespace {

struct BlasHandle {
  cublasHandle_t handle = nullptr;
  Tensor workspace;
};

BlasHandle& blas_state(int device) {
  static std::mutex mutex;
  static std::vector<BlasHandle*> handles;  // never destroyed: tensors may outlive main
  std::lock_guard<std::mutex> lock(mutex);
  if (handles.size() <= static_cast<size_t>(device)) handles.resize(device + 1, nullptr);
  if (handles[device] == nullptr) {
    auto* h = new BlasHandle();
    ZERO_CUBLAS_CHECK(cublasCreate(&h->handle));
    // With a 16-bit output, cuBLAS may otherwise sum the pieces of a split-K product in
    // that output type, rounding each partial sum (cuBLAS's documentation of the flag).
    // FP32 outputs are unaffected.
    ZERO_CUBLAS_CHECK(cublasSetMathMode(
        h->handle, static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH |
                                             CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));
    h->workspace = Tensor::Empty({static_cast<int64_t>(cuda::kBlasWorkspaceBytes / 4)},
                                 TensorOption().OnDevice(Device::Cuda(device)));
    ZERO_CUBLAS_CHECK(
        cublasSetWorkspace(h->handle, h->workspace.data(), cuda::kBlasWorkspaceBytes));
    handles[device] = h;
  }
  return *handles[device];
}

}  // namespace

// The handle, workspace and compute mode are shared with blas_lt.cu (blas_common.cuh).
namespace cuda {

cublasHandle_t blas_handle(int device) {
  cublasHandle_t handle = blas_state(device).handle;
  ZERO_CUBLAS_CHECK(cublasSetStream(handle, current_stream()));
  return handle;
}

void* blas_workspace(int device) { return blas_state(device).workspace.data(); }

cublasComputeType_t compute_type() {
  switch (matmul_precision()) {
    case MatmulPrecision::kTf32: return CUBLAS_COMPUTE_32F_FAST_TF32;
    case MatmulPrecision::kFp16: return CUBLAS_COMPUTE_32F_FAST_16F;
    default: return CUBLAS_COMPUTE_32F;
  }
}

bool split_tf32_mode() { return matmul_precision() == MatmulPrecision::kSplitTf32; }

bool fp16_mode() { return matmul_precision() == MatmulPrecision::kFp16; }

}  // namespace cuda

namespace {

using cuda::blas_handle;
using cuda::compute_type;

// How cuBLAS should read the last two dimensions (R x C) of a tensor.
struct MatrixLayout {
  bool row_major = true;  // unit stride along columns (else along rows)
  int64_t ld = 1;         // leading dimension in cuBLAS's sense
};

// Returns false when neither dimension has unit stride (the caller copies).
bool matrix_layout(const Tensor& t, MatrixLayout& out) {
  const int64_t R = t.size(-2), C = t.size(-1), sr = t.stride(-2), sc = t.stride(-1);
  if ((sc == 1 || C == 1) && (R == 1 || sr >= std::max<int64_t>(C, 1))) {
    out = {true, R == 1 ? std::max<int64_t>(C, 1) : sr};
    return true;
  }
  if ((sr == 1 || R == 1) && (C == 1 || sc >= std::max<int64_t>(R, 1))) {
    out = {false, C == 1 ? std::max<int64_t>(R, 1) : sc};
    return true;
  }
  return false;
}

// If the batch offsets of `t` (broadcast to `batch`) are b * stride for every flat
// batch index b, returns true and that stride (0 for a fully broadcast operand).
bool linear_batch_stride(const DimsArg& d, int64_t batch, int64_t& stride) {
  stride = batch > 1 ? d.Offset(1) : 0;
  int64_t expected = stride;
  for (int k = d.ndim - 1; k >= 0; --k) {
    if (d.sizes[k] > 1 && d.strides[k] != expected) return false;
    expected *= d.sizes[k];
  }
  return true;
}

// Elements spanned by `batch` column-major matrices, each stored as op(X) (rows x cols)
// with transpose `op`, leading dimension ld, and `stride` elements apart.
int64_t span(cublasOperation_t op, int64_t rows, int64_t cols, int64_t ld, int64_t stride,
             int64_t batch) {
  const int64_t stored_cols = op == CUBLAS_OP_N ? cols : rows;
  const int64_t stored_rows = op == CUBLAS_OP_N ? rows : cols;
  return (batch - 1) * stride + (stored_cols - 1) * ld + stored_rows;
}

// C = A B, or C += A B with beta = 1.
void gemm(int device, cublasHandle_t handle, const MatrixLayout& la, const MatrixLayout& lb,
          int64_t M, int64_t N, int64_t K, const float* A, int64_t stride_a, const float* B,
          int64_t stride_b, float* C, int64_t batch, float beta) {
  // C^T (N x M) = op(B) op(A), see Note [Row-major tensors in a column-major library].
  const cublasOperation_t op_b = lb.row_major ? CUBLAS_OP_N : CUBLAS_OP_T;
  const cublasOperation_t op_a = la.row_major ? CUBLAS_OP_N : CUBLAS_OP_T;
  const float alpha = 1.0f;
  // cuBLAS's first operand is B (op(B) is N x K), its second A (op(A) is K x M).
  if (batch == 1 && cuda::split_tf32_pays(device, N, M, K) &&
      cuda::split_tf32_gemm(device, op_b == CUBLAS_OP_T, op_a == CUBLAS_OP_T, N, M, K, B, lb.ld,
                            A, la.ld, C, CUBLASLT_EPILOGUE_DEFAULT, nullptr, beta)) {
    return;
  }
  if (cuda::fp16_mode()) {
    // Whole spans are converted, gaps between rows (ld > width) included: the pass is
    // simpler, and the leading dimensions and batch strides stay as they are.
    const Tensor b16 = cuda::to_half(B, span(op_b, N, K, lb.ld, stride_b, batch), device);
    const Tensor a16 = cuda::to_half(A, span(op_a, K, M, la.ld, stride_a, batch), device);
    if (batch == 1) {
      ZERO_CUBLAS_CHECK(cublasGemmEx(handle, op_b, op_a, N, M, K, &alpha, b16.data(), CUDA_R_16F,
                                     lb.ld, a16.data(), CUDA_R_16F, la.ld, &beta, C, CUDA_R_32F,
                                     N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    } else {
      ZERO_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
          handle, op_b, op_a, N, M, K, &alpha, b16.data(), CUDA_R_16F, lb.ld, stride_b,
          a16.data(), CUDA_R_16F, la.ld, stride_a, &beta, C, CUDA_R_32F, N, M * N, batch,
          CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }
    return;  // a16 and b16 go back to the allocator, ordered after the GEMM on one stream
  }
  if (batch == 1 && cuda::tf32_copy_first_operand(op_b == CUBLAS_OP_T, op_a == CUBLAS_OP_T, N, M,
                                                   K, lb.ld)) {
    // Note [K-major input gradients in TF32] (split_tf32.cuh): B's K columns of N
    // floats, copied as N columns of K; the copy returns to the allocator after the GEMM.
    const Tensor b_k = cuda::k_major_copy(B, K, N, device);  // (N, K) row-major
    ZERO_CUBLAS_CHECK(cublasGemmEx(handle, CUBLAS_OP_T, op_a, N, M, K, &alpha, b_k.data(),
                                   CUDA_R_32F, K, A, CUDA_R_32F, la.ld, &beta, C, CUDA_R_32F, N,
                                   compute_type(), CUBLAS_GEMM_DEFAULT));
  } else if (batch == 1) {
    ZERO_CUBLAS_CHECK(cublasGemmEx(handle, op_b, op_a, N, M, K, &alpha, B, CUDA_R_32F, lb.ld, A,
                                   CUDA_R_32F, la.ld, &beta, C, CUDA_R_32F, N, compute_type(),
                                   CUBLAS_GEMM_DEFAULT));
  } else {
    ZERO_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        handle, op_b, op_a, N, M, K, &alpha, B, CUDA_R_32F, lb.ld, stride_b, A, CUDA_R_32F, la.ld,
        stride_a, &beta, C, CUDA_R_32F, N, M * N, batch, compute_type(), CUBLAS_GEMM_DEFAULT));
  }
}

// C = A B, or C += A B with beta = 1, for BF16 or F16 A and B (`ab`) and C of `c_type`
// (theirs or FP32): the Tensor Cores multiply the 16-bit operands and accumulate in
// FP32 (CUBLAS_COMPUTE_32F), and C is rounded once. Pointers are raw: the operands'
// element offsets were applied by the caller.
void gemm_16bit(cublasHandle_t handle, const MatrixLayout& la, const MatrixLayout& lb, int64_t M,
                int64_t N, int64_t K, cudaDataType_t ab, const void* A, int64_t stride_a,
                const void* B, int64_t stride_b, cudaDataType_t c_type, void* C, int64_t batch,
                float beta) {
  // C^T (N x M) = op(B) op(A), see Note [Row-major tensors in a column-major library].
  const cublasOperation_t op_b = lb.row_major ? CUBLAS_OP_N : CUBLAS_OP_T;
  const cublasOperation_t op_a = la.row_major ? CUBLAS_OP_N : CUBLAS_OP_T;
  const float alpha = 1.0f;
  if (batch == 1) {
    ZERO_CUBLAS_CHECK(cublasGemmEx(handle, op_b, op_a, N, M, K, &alpha, B, ab, lb.ld, A, ab,
                                   la.ld, &beta, C, c_type, N, CUBLAS_COMPUTE_32F,
                                   CUBLAS_GEMM_DEFAULT));
  } else {
    ZERO_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        handle, op_b, op_a, N, M, K, &alpha, B, ab, lb.ld, stride_b, A, ab, la.ld, stride_a,
        &beta, C, c_type, N, M * N, batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }
}

// `t`'s element `offset` as a raw address.
const void* element(const Tensor& t, int64_t offset) {
  return static_cast<const char*>(t.data()) + offset * static_cast<int64_t>(dtype_size(t.dtype()));
}

void matmul_cuda(const Tensor& a_in, const Tensor& b_in, const Tensor& out, bool accumulate) {
  cuda::set_device(out);
  if (accumulate && out.dtype() != DataType::F32 && out.numel() > 0) {
    // out += a b into a 16-bit out: with beta = 1 cuBLAS rounded the product to out's
    // type before adding out (two roundings: errors of a BF16 unit of the product on the
    // H200, MatmulHalfTest). So the sum is made in FP32 and rounded once.
    const Tensor wide = Tensor::Empty(out.sizes(), TensorOption().OnDevice(out.device()));
    convert(out, wide);
    matmul_cuda(a_in, b_in, wide, true);
    convert(wide, out);
    return;
  }
  MatrixLayout la, lb;
  const Tensor a = matrix_layout(a_in, la) ? a_in : contiguous(a_in);
  const Tensor b = matrix_layout(b_in, lb) ? b_in : contiguous(b_in);
  matrix_layout(a, la);
  matrix_layout(b, lb);
  const int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1);
  if (out.numel() == 0) return;
  if (K == 0) return accumulate ? void() : fill(out, 0.0f);
  const float beta = accumulate ? 1.0f : 0.0f;

  // Batch dimensions: out's leading dims; a and b broadcast to them.
  const Shape batch_shape(out.sizes().begin(), out.sizes().end() - 2);
  const int64_t batch = shape_numel(batch_shape);
  TensorMeta ma = a.meta(), mb = b.meta();
  ma.sizes.resize(ma.sizes.size() - 2);
  ma.strides.resize(ma.strides.size() - 2);
  mb.sizes.resize(mb.sizes.size() - 2);
  mb.strides.resize(mb.strides.size() - 2);
  const DimsArg da = DimsArg::Broadcast(ma, batch_shape), db = DimsArg::Broadcast(mb, batch_shape);
  cublasHandle_t handle = blas_handle(out.device().index());
  // `count` GEMMs from element offsets oa, ob, oc of a, b, out, then strides sa, sb.
  const auto run = [&](int64_t oa, int64_t sa, int64_t ob, int64_t sb, int64_t oc,
                       int64_t count) {
    if (a.dtype() != DataType::F32) {
      gemm_16bit(handle, la, lb, M, N, K, cuda::cuda_dtype(a.dtype()), element(a, oa), sa,
                 element(b, ob), sb, cuda::cuda_dtype(out.dtype()),
                 const_cast<void*>(element(out, oc)), count, beta);
      return;
    }
    gemm(out.device().index(), handle, la, lb, M, N, K, a.data_ptr<float>() + oa, sa,
         b.data_ptr<float>() + ob, sb, out.data_ptr<float>() + oc, count, beta);
  };
  int64_t sa = 0, sb = 0;
  if (linear_batch_stride(da, batch, sa) && linear_batch_stride(db, batch, sb)) {
    run(0, sa, 0, sb, 0, batch);
    return;
  }
  // Batch strides that no single stride describes (e.g. [2,1] against [1,3]): one
  // GEMM per batch element. Rare, and each GEMM is still a full cuBLAS call.
  for (int64_t i = 0; i < batch; ++i) run(da.Offset(i), 0, db.Offset(i), 0, i * M * N, 1);
}

}  // namespace

ZERO_REGISTER_KERNEL(matmul, kCuda, matmul_cuda);

}  // namespace zero::ops
