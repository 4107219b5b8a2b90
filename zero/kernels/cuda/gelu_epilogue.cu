// The GeLU of a GPT's MLP inside cuBLASLt's GEMMs: the forward's Linear + GeLU as one
// call (CUBLASLT_EPILOGUE_GELU_AUX_BIAS), and the backward's input gradient of the
// second Linear times GeLU's derivative as one call (CUBLASLT_EPILOGUE_DGELU, 16-bit
// operands only). Each saves an element-wise pass over the [N, 4C] hidden layer. Both
// fall back on the unfused kernels, which are also what IEEE FP32 runs (the epilogues'
// GeLU is not IEEE FP32). The cuBLASLt calls themselves are blas_lt.cu's (blas_common.cuh).
#include "zero/kernels/cuda/blas_common.cuh"
#include "zero/kernels/cuda/cuda_common.cuh"
#include "zero/kernels/cuda/split_tf32.cuh"
#include "zero/kernels/dispatch.h"
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
// The backward's half is Note [GeLU's derivative in the GEMM's epilogue] below.
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

// Note [GeLU's derivative in the GEMM's epilogue]
// The MLP's backward (OpMlp) makes the gradient at the hidden layer, dh = g W (g the
// gradient at the MLP's output, W c_proj's weight), only to multiply it by gelu'(pre)
// at once. Unfused, dh is written by the GEMM, read back with pre, and dpre written:
// for GPT-2 at B 8, T 1024, three passes over 8192 x 3072 values a block. The epilogue
// CUBLASLT_EPILOGUE_DGELU reads pre as its aux input (laid out like D, ld m a multiple
// of 8, D's dtype) and writes dh gelu'(pre) while the tile is in registers: dh never
// reaches memory, and a 16-bit dpre is rounded once, from FP32, where the unfused ops
// round dh first. As for the forward, cuBLASLt's formula for the derivative is not
// documented (the tanh approximation's, evaluated with the hardware's approximate
// tanh): matmul_gelu_backward_test bounds how far it lands from unary_backward(kGelu)
// and prints the largest difference it saw.
// Only 16-bit operands fuse. IEEE FP32 cannot (the epilogue is not IEEE FP32), and with
// TF32 operands fused the TF32 training steps came out slower, not faster, on the H200
// (docs/speed_notes.md, item 38).
void matmul_gelu_backward_cuda(const Tensor& grad_y, const Tensor& weight, const Tensor& pre,
                               const Tensor& grad_pre) {
  cuda::set_device(grad_pre);
  const int64_t n = grad_y.size(0), k = grad_y.size(1), h = weight.size(1);
  if (grad_pre.numel() == 0) return;
  const int device = grad_pre.device().index();
  // grad_pre^T (h x n, column-major) = W^T (W stored k x h: h x k column-major) g^T
  // (k x n), then times gelu'(pre^T), pre^T being h x n column-major as well.
  if (k > 0 && grad_y.dtype() != DataType::F32 &&
      cuda::lt_matmul_16bit(device, /*trans_a=*/false, /*trans_b=*/false, h, n, k, weight,
                            grad_y, grad_pre, CUBLASLT_EPILOGUE_DGELU, Tensor(), pre)) {
    return;
  }
  // FP32, or no algorithm (h not a multiple of 8, a misaligned pointer, k = 0): the
  // unfused kernels, GeLU's derivative in place over dh.
  matmul(grad_y, weight, grad_pre);
  unary_backward(UnaryOp::kGelu, pre, pre, grad_pre, grad_pre);
}

}  // namespace

ZERO_REGISTER_KERNEL(linear_gelu_forward, kCuda, linear_gelu_forward_cuda);
ZERO_REGISTER_KERNEL(matmul_gelu_backward, kCuda, matmul_gelu_backward_cuda);

}  // namespace zero::ops
