// CPU batched matrix multiplication: out[..., M, N] = a[..., M, K] @ b[..., K, N]
// as one gemm_cpu call per batch matrix (gemm_cpu.cpp does the real work), and the
// fused Linear's CPU kernels, which are compositions of it.
//
// Transposed views cost nothing: a matrix whose columns are adjacent in memory
// (column stride 1) is row-major with leading dimension = its row stride; one whose
// rows are adjacent (row stride 1), such as b.Transpose(-1, -2), is the transpose of
// a row-major matrix, and gemm_cpu reads it through its trans flag. Only a matrix
// with neither unit stride is copied. Batch dimensions broadcast through DimsArg.
//
// BF16 and F16 operands are converted to F32 (exactly) and multiplied by the same FP32
// GEMM, and the result is rounded once into a 16-bit output: the reference for cuBLAS's
// 16-bit GEMMs, which also accumulate in FP32. The fused Linear does the same, so its
// bias is added before that one rounding, as cuBLASLt's epilogue adds it.
#include <omp.h>

#include <algorithm>

#include "zero/kernels/cpu/gemm_cpu.h"
#include "zero/kernels/dims_arg.h"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/tensor_ops.h"
#include "zero/kernels/views.h"

namespace zero::ops {
namespace {

// Below this many multiply-adds per matrix, a batch is spread over threads one
// matrix each instead of splitting each matrix's tiles (too few to share); below
// kParallelMacs in all, one thread does everything.
constexpr int64_t kSmallMatrixMacs = int64_t{128} * 128 * 128;
constexpr int64_t kParallelMacs = int64_t{1} << 18;

// One operand as gemm_cpu reads it: whether it is transposed, its leading dimension,
// and where each batch matrix starts relative to `data`.
struct GemmOperand {
  Tensor storage;  // the tensor read (a contiguous copy when the view needed one)
  const float* data;
  bool trans;
  int64_t ld;
  DimsArg batch;  // batch sizes of the output, strides of this operand (0 = broadcast)
};

GemmOperand gemm_operand(const Tensor& t, const Shape& out_batch) {
  GemmOperand op;
  op.storage = t;
  const int64_t rows = t.size(-2), cols = t.size(-1);
  if (t.stride(-1) == 1 || cols == 1) {
    op.trans = false;
    op.ld = t.stride(-2);
  } else if (t.stride(-2) == 1 || rows == 1) {
    op.trans = true;
    op.ld = t.stride(-1);
  } else {
    // E.g. a slice with a step: no BLAS layout fits, so copy.
    op.storage = contiguous(t);
    op.trans = false;
    op.ld = cols;
  }
  op.data = op.storage.data_ptr<float>();
  TensorMeta batch_meta = op.storage.meta();
  batch_meta.sizes.resize(batch_meta.sizes.size() - 2);
  batch_meta.strides.resize(batch_meta.strides.size() - 2);
  op.batch = DimsArg::Broadcast(batch_meta, out_batch);
  return op;
}

// `t` as a new contiguous F32 tensor (exact from any float dtype).
Tensor to_f32(const Tensor& t) {
  Tensor out = Tensor::Empty(t.sizes(), TensorOption().OnDevice(t.device()));
  convert(t, out);
  return out;
}

// `out` itself when it is F32, else a new F32 tensor of its shape (holding out's values
// when `keep`), to be rounded into out by finish_f32.
Tensor f32_output(const Tensor& out, bool keep) {
  if (!out.defined() || out.dtype() == DataType::F32) return out;
  return keep ? to_f32(out) : Tensor::Empty(out.sizes(), TensorOption().OnDevice(out.device()));
}

void finish_f32(const Tensor& result, const Tensor& out) {
  if (out.defined() && !result.SharesStorage(out)) convert(result, out);
}

void matmul_cpu(const Tensor& a, const Tensor& b, const Tensor& out, bool accumulate) {
  if (a.dtype() != DataType::F32) {
    const Tensor acc = f32_output(out, accumulate);
    matmul_cpu(to_f32(a), to_f32(b), acc, accumulate);
    return finish_f32(acc, out);
  }
  const Shape out_batch(out.sizes().begin(), out.sizes().end() - 2);
  const GemmOperand ga = gemm_operand(a, out_batch);
  const GemmOperand gb = gemm_operand(b, out_batch);
  const int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1);
  const int64_t batch = shape_numel(out_batch);
  float* po = out.data_ptr<float>();
  auto one_matrix = [&](int64_t i) {
    gemm_cpu(ga.trans, gb.trans, M, N, K, 1.0f, ga.data + ga.batch.Offset(i), ga.ld,
             gb.data + gb.batch.Offset(i), gb.ld, accumulate ? 1.0f : 0.0f, po + i * M * N, N);
  };
  // gemm_cpu runs serially inside a parallel region, so this picks the level.
  const bool across_batch = batch >= omp_get_max_threads() && batch > 1 &&
                            M * N * K < kSmallMatrixMacs && batch * M * N * K > kParallelMacs;
  if (!across_batch) {
    // Note [No parallel region around a parallel call]
    // Not `#pragma omp parallel for if (across_batch)`: a region switched off by its if
    // clause still opens a team (of one thread), and gemm_cpu's own parallel region is
    // then nested inside it. libgomp keeps its sleeping worker threads for regions at
    // the outermost level only; a nested team is made of threads created for it and
    // ended after it. That cost every GEMM of the step two thread creations, and made
    // two threads slower than one.
    for (int64_t i = 0; i < batch; ++i) one_matrix(i);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < batch; ++i) one_matrix(i);
}

// The fused Linear on the CPU is a composition of the kernels it fuses on the GPU: a GEMM
// against the transposed weight onto the bias, a column sum for the bias gradient.
void linear_forward_cpu(const Tensor& x, const Tensor& weight, const Tensor& bias,
                        const Tensor& out, const Tensor& residual) {
  // A residual is the addition after the rounded Linear, as `linear` then `add` compute
  // it: the CPU gains nothing from fusing it, and keeps the unfused bits.
  if (residual.defined()) {
    linear_forward_cpu(x, weight, bias, out, Tensor());
    return binary(BinaryOp::kAdd, out, residual, out);  // element-wise: may alias
  }
  if (x.dtype() != DataType::F32) {
    const Tensor acc = f32_output(out, false);
    linear_forward_cpu(to_f32(x), to_f32(weight), bias.defined() ? to_f32(bias) : bias, acc,
                       Tensor());
    return finish_f32(acc, out);
  }
  // Note [The bias in the GEMM]
  // out = x @ weight^T + bias as one GEMM onto rows that already hold the bias (beta = 1):
  // each element is rounded once, as cuBLASLt's bias epilogue does, and the bias costs
  // one copy per row instead of a second pass over out with a broadcast add.
  if (bias.defined()) {
    const int64_t rows = out.size(0), width = out.size(1);
    const float* pb = bias.data_ptr<float>();
    float* po = out.data_ptr<float>();
    for (int64_t i = 0; i < rows; ++i) std::copy(pb, pb + width, po + i * width);
  }
  matmul_cpu(x, transposed(weight), out, /*accumulate=*/bias.defined());  // (N, out)
}

void linear_backward_params_cpu(const Tensor& grad_out, const Tensor& x,
                                const Tensor& grad_weight, const Tensor& grad_bias) {
  if (x.dtype() != DataType::F32) {
    const Tensor gw = f32_output(grad_weight, false), gb = f32_output(grad_bias, false);
    linear_backward_params_cpu(to_f32(grad_out), to_f32(x), gw, gb);
    finish_f32(gw, grad_weight);
    return finish_f32(gb, grad_bias);
  }
  if (grad_weight.defined()) matmul(transposed(grad_out), x, grad_weight);  // (out, in)
  if (grad_bias.defined()) sum(grad_out, 0, reshaped(grad_bias, {1, grad_out.size(1)}));
}

// The reference of the fused Linear + GeLU: the two kernels it fuses on the GPU, so that
// a model using it computes on the CPU bit for bit what the unfused ops computed.
void linear_gelu_forward_cpu(const Tensor& x, const Tensor& weight, const Tensor& bias,
                             const Tensor& y, const Tensor& pre) {
  linear_forward_cpu(x, weight, bias, pre, Tensor());  // (N, out)
  unary(UnaryOp::kGelu, pre, y);             // (N, out)
}

// The reference of the fused backward step: the kernels it fuses on the GPU, GeLU's
// derivative applied in place over the product, then the bias gradient's column sums.
void matmul_gelu_backward_cpu(const Tensor& grad_y, const Tensor& weight, const Tensor& pre,
                              const Tensor& grad_pre, const Tensor& hidden,
                              const Tensor& grad_bias) {
  matmul(grad_y, weight, grad_pre);                              // (N, H)
  unary_backward(UnaryOp::kGelu, pre, pre, grad_pre, grad_pre);  // (N, H)
  if (hidden.defined()) unary(UnaryOp::kGelu, pre, hidden);      // (N, H)
  if (grad_bias.defined()) linear_backward_params_cpu(grad_pre, grad_pre, Tensor(), grad_bias);
}

}  // namespace

ZERO_REGISTER_KERNEL(matmul, kCpu, matmul_cpu);
ZERO_REGISTER_KERNEL(linear_forward, kCpu, linear_forward_cpu);
ZERO_REGISTER_KERNEL(linear_backward_params, kCpu, linear_backward_params_cpu);
ZERO_REGISTER_KERNEL(linear_gelu_forward, kCpu, linear_gelu_forward_cpu);
ZERO_REGISTER_KERNEL(matmul_gelu_backward, kCpu, matmul_gelu_backward_cpu);

}  // namespace zero::ops
