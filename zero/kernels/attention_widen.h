// The FP32 copies through which the attention kernels take 16-bit operands; private to
// zero/kernels (the CPU reference and the CUDA kernels both use them).
//
// Note [16-bit attention through the FP32 kernels]
// The CPU attention and the plain CUDA reference (cuda/attention_reference.cu) take BF16
// and F16 operands this way: widened to FP32 (exactly: every 16-bit value is an FP32
// value), computed on the FP32 copies, and each result rounded once to the operands'
// dtype. The softmax, its statistics and every sum stay FP32, as mixed precision asks,
// so the CPU's 16-bit result is its FP32 result rounded: the reference. The fast CUDA
// kernels do not widen: their tiles hold the 16-bit values and their products run on
// the Tensor Cores in the operands' own format (Note [16-bit fragments] in
// cuda/attention_tf32.cuh), exact for Q, K, V and dO, with the probabilities and dS
// rounded to 16 bits before their products, as FlashAttention does.
#pragma once

#include "zero/core/tensor.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {

/// `t` widened to FP32: a contiguous FP32 copy, or `t` itself when it is FP32 already.
inline Tensor widened(const Tensor& t) {
  if (t.dtype() == DataType::F32) return t;
  Tensor wide = Tensor::Empty(t.sizes(), TensorOption().OnDevice(t.device()));
  convert(t, wide);
  return wide;
}

/// An FP32 tensor to compute `out` in: `out` itself when it is FP32, else a new one whose
/// values `rounded` later writes into `out`.
inline Tensor wide_output(const Tensor& out) {
  if (out.dtype() == DataType::F32) return out;
  return Tensor::Empty(out.sizes(), TensorOption().OnDevice(out.device()));
}

/// Writes `wide` (made by wide_output(out), or a contiguous copy of it) into `out`,
/// rounding to `out`'s dtype; nothing when they are the same tensor.
inline void rounded(const Tensor& wide, const Tensor& out) {
  if (wide.data() != out.data()) convert(wide, out);
}

}  // namespace zero::ops
