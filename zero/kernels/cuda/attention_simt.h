// The exact-FP32 attention backward on register tiles (attention_backward_simt.cu), as
// attention_backward.cu calls it. Private to kernels/cuda/.
#pragma once

#include "zero/core/tensor.h"
#include "zero/kernels/attention_dropout.h"

namespace zero::ops {

// attention_backward.cu's dK, dV kernel for FP32 operands in the ieee mode on register
// tiles (Note [FP32 attention on register tiles]), with that file's per-query (lse,
// delta) pairs `stats` and dQ's FP32 sum `dq_sum` (rows dq_ld floats apart, dq_ld a
// multiple of 4), for heads of up to 64 and ZERO_ATTENTION_SIMT not set to 0 in the
// environment (which keeps the fragment-layout kernel, to compare). Returns false,
// having done nothing, otherwise.
bool attention_backward_simt(const Tensor& q, const Tensor& k, const Tensor& v,
                             const Tensor& grad_out, const float* stats, float* dq_sum, int dq_ld,
                             bool causal, const AttentionDropout& drop, const Tensor& grad_k,
                             const Tensor& grad_v);

}  // namespace zero::ops
