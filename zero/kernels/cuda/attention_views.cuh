// How the attention kernels address q, k, v, the output and the gradients: HeadView, a
// [B, H, T, D] operand given by three strides. Included by attention.cuh (the fast
// kernels) and attention_reference.cu (the plain one). Private to kernels/cuda/.
//
// Note [Attention operands as views]
// A kernel only ever reads or writes whole rows of D values, so no operand has to be a
// contiguous [B, H, T, D] array: element (b, h, t, d) sits at b * batch + h * head +
// t * row + d, the D stride being 1 (the dispatch, kernels/attention.cpp, checks it). The
// GPT hands the kernels its packed c_attn output [B, T, 3C] as it is: q, k and v are the
// views at column offsets 0, C and 2C with strides (T * 3C, D, 3C), and y is written
// straight into [B, T, C] (strides (T * C, D, C)), the heads side by side. The backward
// writes dQ, dK, dV into the three column ranges of one [B, T, 3C] gradient the same
// way. Reading in place saves the split, the head transposes and the merge that a
// contiguous layout would need (docs/speed_notes.md, item 4). Only lse and delta, which
// the kernels make and read themselves, are contiguous [B, H, T].
#pragma once

#include <cstdint>

#include "zero/core/tensor.h"

namespace zero::ops::cuda::flash {

// A strided [B, H, T, D] operand (Note [Attention operands as views]): element
// (b, h, t, d) is at data[b * batch + h * head + t * row + d].
template <typename T>
struct HeadView {
  T* data;
  int64_t batch, head, row;
  // The [T, D] matrix of grid slice bh = b * H + h, its rows `row` elements apart.
  __device__ T* slice(int64_t bh, int H) const { return data + bh / H * batch + bh % H * head; }
};
using In = HeadView<const float>;
using Out = HeadView<float>;

// The HeadView of a [B, H, T, D] tensor of elements E (float, bf16 or f16) whose D
// stride is 1 (checked by the dispatch).
template <typename E = float>
inline HeadView<const E> in_view(const Tensor& t) {
  return {t.data_ptr<E>(), t.stride(0), t.stride(1), t.stride(2)};
}
template <typename E = float>
inline HeadView<E> out_view(const Tensor& t) {
  return {t.data_ptr<E>(), t.stride(0), t.stride(1), t.stride(2)};
}

}  // namespace zero::ops::cuda::flash
