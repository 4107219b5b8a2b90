// The GeLU of a GPT's MLP on CUDA: the forward's Linear + GeLU as one cuBLASLt call
// (CUBLASLT_EPILOGUE_GELU_AUX_BIAS), which saves an element-wise pass over the [N, 4C]
// hidden layer, and the backward's GeLU derivative and recomputed hidden layer in one
// element-wise pass after the GEMM. Both fall back on the unfused kernels, which are
// also what the IEEE FP32 forward runs (the epilogue's GeLU is not IEEE FP32) and the
// TF32 forward (cuBLASLt runs that epilogue as a kernel of its own).
// The cuBLASLt calls themselves are blas_lt.cu's (blas_common.cuh).
#include <type_traits>

#include "zero/kernels/cuda/blas_common.cuh"
#include "zero/kernels/cuda/column_sum.cuh"
#include "zero/kernels/cuda/cuda_common.cuh"
#include "zero/kernels/cuda/gelu.cuh"
#include "zero/kernels/cuda/split_tf32.cuh"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/dtype_dispatch.h"
#include "zero/kernels/precision.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {
namespace {

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
// The backward's half is Note [GeLU's derivative after the GEMM] below.
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
  // split_tf32_gemm, whose interface carries the bias but no aux output. So does TF32:
  // cuBLASLt's TF32 kernels add the bias in the tile but leave a GeLU epilogue to a
  // kernel of its own after the GEMM (epilogue::globalKernel in a profile), which reads
  // the GEMM's output and writes y and pre, where the GeLU kernel reads pre and writes
  // y: a [N, 4C] write less. The fallback computes the same pre as the Linear of the mode.
  const MatmulPrecision mode = matmul_precision();
  const bool unfused = f32 && (mode == MatmulPrecision::kIeee || mode == MatmulPrecision::kTf32 ||
                               cuda::split_tf32_pays(device, n_out, n, in));
  // y^T and pre^T (n_out x n, column-major) = W (stored in x n_out: transposed) x^T.
  if (in > 0 && !unfused &&
      (f32 ? cuda::lt_matmul(device, /*trans_a=*/true, /*trans_b=*/false, n_out, n, in,
                             weight.data_ptr<float>(), x.data_ptr<float>(), y.data_ptr<float>(),
                             epilogue, bias.defined() ? bias.data_ptr<float>() : nullptr,
                             pre.data_ptr<float>())
           : cuda::lt_matmul_16bit(device, /*trans_a=*/true, /*trans_b=*/false, n_out, n, in,
                                   weight, x, y, epilogue, bias, pre))) {
    return;
  }
  // No algorithm (n_out not a multiple of 8, a misaligned pointer, an empty sum when
  // in = 0), IEEE FP32 or split TF32: the Linear, then GeLU, exactly the unfused ops.
  linear_forward(x, weight, bias, pre);
  unary(UnaryOp::kGelu, pre, y);
}

// Note [GeLU's derivative after the GEMM]
// The MLP's backward (OpMlp) makes the gradient at the hidden layer, dh = g W (g the
// gradient at the MLP's output, W c_proj's weight), only to multiply it by gelu'(pre)
// at once; and, since it did not keep the hidden layer gelu(pre), it makes that again
// for c_proj's weight gradient (Note [Recomputing the GeLU] in autograd/ops/mlp_op.cpp).
// Both need tanh(k (pre + 0.044715 pre^3)) of every element. One pass after a plain
// GEMM does the two: it reads pre and dh, evaluates tanh once, and writes dpre over dh
// and the hidden layer. For 16-bit operands tanh is the hardware's tanh.approx.f32
// (relative error about 2^-11, below the 2^-8 of a BF16 result): with the exact tanhf
// the pass is bound by arithmetic, not memory (the GeLU kernel alone took 59 us for
// GPT-2's 8192 x 3072 BF16 values, 1.7 TB/s). FP32 evaluates gelu.cuh's formulas with
// tanhf, as unary(kGelu) and unary_backward(kGelu) do, and gets their bits: the default
// promises IEEE FP32 inside. cuBLASLt's DGELU epilogue, which this replaces, ran an
// older kernel (120 us under Nsight Compute's locked clocks, where the plain GEMM takes
// 57.5 us at the GPU's own); with the pass the MLP's backward took 3.75 ms of GPT-2's
// step where it took 4.13 (docs/speed_notes.md, item 46).

// tanh(x) in one instruction of the special-function unit.
__device__ inline float tanh_approx(float x) {
  float y;
  asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// One 16-byte pack: d = d gelu'(x) and h = gelu(x), rounded to T. FP32 evaluates tanh
// with tanhf and gelu.cuh's formulas, as the unary kernels do (the same bits).
template <typename T>
__device__ inline void gelu_backward_pack(const cuda::Pack<T>& x, cuda::Pack<T>& d,
                                          cuda::Pack<T>& h) {
#pragma unroll
  for (int e = 0; e < cuda::kPack<T>; ++e) {
    const float v = static_cast<float>(x.v[e]);
    const float t = std::is_same_v<T, float> ? tanhf(cuda::gelu_arg(v))
                                             : tanh_approx(cuda::gelu_arg(v));
    h.v[e] = static_cast<T>(cuda::gelu_from(v, t));
    d.v[e] = static_cast<T>(static_cast<float>(d.v[e]) * cuda::gelu_grad_from(v, t));
  }
}

// grad[i] = grad[i] gelu'(pre[i]) in place, and hidden[i] = gelu(pre[i]) unless hidden
// is null, a 16-byte pack of T a thread; n is a multiple of the pack.
template <typename T>
__global__ void gelu_backward_kernel(const T* pre, T* grad, T* hidden, int64_t n) {
  using P = cuda::Pack<T>;
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n / cuda::kPack<T>) return;
  P d = reinterpret_cast<const P*>(grad)[i], h;
  gelu_backward_pack(reinterpret_cast<const P*>(pre)[i], d, h);
  reinterpret_cast<P*>(grad)[i] = d;
  if (hidden != nullptr) reinterpret_cast<P*>(hidden)[i] = h;
}

// Note [The bias gradient in the GeLU pass]
// c_fc's bias gradient is the column sum of grad_pre over its N rows. A kernel of its own
// (column_sum.cu) would read grad_pre again right after this pass wrote it: 50 MB a
// layer of GPT-2 in BF16. So when asked, the pass sums as it writes: a thread owns one
// pack of columns and walks kChunkRows rows down it, kBatch rows loaded at a time (so
// that several loads are in flight, as one row a thread at a time would not have them),
// adding the values it stores, rounded as stored; each chunk of rows leaves FP32
// partials, which cuda::column_sums adds in a fixed order: the same bits every run, no
// atomics, and the sum the separate kernel makes of the same values, in another order.
constexpr int kChunkRows = 32;
constexpr int kBatch = 4;

// grid = (column packs / kBlock, row chunks); partial [chunks, h] FP32.
template <typename T>
__global__ void gelu_backward_columns_kernel(const T* pre, T* grad, T* hidden, float* partial,
                                             int64_t rows, int64_t h) {
  using P = cuda::Pack<T>;
  constexpr int N = cuda::kPack<T>;
  const int64_t packs = h / N;
  const int64_t col = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (col >= packs) return;
  const int64_t r0 = blockIdx.y * int64_t{kChunkRows};
  const int64_t r1 = r0 + kChunkRows < rows ? r0 + kChunkRows : rows;
  const P* px = reinterpret_cast<const P*>(pre);
  P* pd = reinterpret_cast<P*>(grad);
  float sum[N] = {};
  for (int64_t r = r0; r < r1; r += kBatch) {
    P x[kBatch], d[kBatch];
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      if (r + b < r1) {
        x[b] = px[(r + b) * packs + col];
        d[b] = pd[(r + b) * packs + col];
      }
    }
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      if (r + b >= r1) break;
      P hv;
      gelu_backward_pack(x[b], d[b], hv);
      pd[(r + b) * packs + col] = d[b];
      if (hidden != nullptr) reinterpret_cast<P*>(hidden)[(r + b) * packs + col] = hv;
#pragma unroll
      for (int e = 0; e < N; ++e) sum[e] += static_cast<float>(d[b].v[e]);
    }
  }
#pragma unroll
  for (int e = 0; e < N; ++e) partial[blockIdx.y * h + col * N + e] = sum[e];
}

void matmul_gelu_backward_cuda(const Tensor& grad_y, const Tensor& weight, const Tensor& pre,
                               const Tensor& grad_pre, const Tensor& hidden,
                               const Tensor& grad_bias) {
  cuda::set_device(grad_pre);
  if (grad_pre.numel() == 0) {
    if (grad_bias.defined()) fill(grad_bias, 0.0f);
    return;
  }
  matmul(grad_y, weight, grad_pre);  // dh (N, H)
  const int64_t n = grad_pre.numel(), rows = pre.size(0), h = pre.size(1);
  dispatch_dtype<FloatTypes>(grad_pre.dtype(), "matmul_gelu_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const bool packed = n % cuda::kPack<T> == 0 && cuda::vec4_ok(pre) &&
                        cuda::vec4_ok(grad_pre) && (!hidden.defined() || cuda::vec4_ok(hidden));
    T* const hp = hidden.defined() ? hidden.data_ptr<T>() : nullptr;
    const int64_t chunks = (rows + kChunkRows - 1) / kChunkRows;
    if (packed && grad_bias.defined() && h % cuda::kPack<T> == 0 && chunks <= 65535) {
      // Note [The bias gradient in the GeLU pass]
      Tensor partial = Tensor::Empty({chunks, h}, TensorOption().OnDevice(pre.device()));
      const dim3 grid(cuda::grid_for(h, cuda::kPack<T>), static_cast<unsigned>(chunks));
      gelu_backward_columns_kernel<T><<<grid, cuda::kBlock, 0, cuda::current_stream()>>>(
          pre.data_ptr<T>(), grad_pre.data_ptr<T>(), hp, partial.data_ptr<float>(), rows, h);
      ZERO_CUDA_LAUNCH_CHECK();
      cuda::column_sums(partial, grad_bias);
      return;
    }
    if (packed) {
      gelu_backward_kernel<T><<<cuda::grid_for(n, cuda::kPack<T>), cuda::kBlock, 0,
                                cuda::current_stream()>>>(pre.data_ptr<T>(),
                                                          grad_pre.data_ptr<T>(), hp, n);
      ZERO_CUDA_LAUNCH_CHECK();
    } else {  // a size or alignment the packs do not fit: the unfused kernels
      unary_backward(UnaryOp::kGelu, pre, pre, grad_pre, grad_pre);
      if (hidden.defined()) unary(UnaryOp::kGelu, pre, hidden);
    }
    if (grad_bias.defined()) cuda::column_sums(grad_pre, grad_bias);
  });
}

}  // namespace

ZERO_REGISTER_KERNEL(linear_gelu_forward, kCuda, linear_gelu_forward_cuda);
ZERO_REGISTER_KERNEL(matmul_gelu_backward, kCuda, matmul_gelu_backward_cuda);

}  // namespace zero::ops
