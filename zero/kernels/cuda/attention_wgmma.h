// The attention kernels on Hopper's warpgroup products (kernels/cuda/sm90/, compiled for
// sm_90a alone), as attention.cu and attention_backward.cu call them. Private to
// kernels/cuda/.
#pragma once

#include <initializer_list>

#include "zero/core/tensor.h"
#include "zero/kernels/attention_dropout.h"

namespace zero::ops {

// Whether the wgmma kernels take these operands: q BF16 or F16 at D = 64; q, `reads`
// and `writes` starting on 16 bytes, with strides of whole 16-byte moves (`writes`,
// stored two values at a time, of 4-byte ones: flash::vectors_ok); on an sm_90 GPU,
// with ZERO_ATTENTION_WGMMA not set to 0 in the environment (which keeps the mma.sync
// kernels, to compare).
bool attention_wgmma_applies(const Tensor& q, std::initializer_list<const Tensor*> reads,
                             std::initializer_list<const Tensor*> writes);

// attention.cu's forward on wgmma (Note [Attention on warpgroups] in
// sm90/attention_forward_wgmma.cu), with `drop`'s dropout, when attention_wgmma_applies.
// Returns false, having done nothing, otherwise.
bool attention_forward_wgmma(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                             const AttentionDropout& drop, const Tensor& out, const Tensor& lse);

// The dK, dV kernel of attention_backward.cu on wgmma (Note [Attention backward on
// warpgroups] in sm90/attention_backward_wgmma.cu), with that file's per-query (lse,
// delta) pairs `stats` and dQ's FP32 sum `dq_sum` (rows of 64 floats) and `drop`'s
// dropout, when attention_wgmma_applies. Returns false, having done nothing, otherwise.
bool attention_backward_wgmma(const Tensor& q, const Tensor& k, const Tensor& v,
                              const Tensor& grad_out, const float* stats, float* dq_sum,
                              bool causal, const AttentionDropout& drop, const Tensor& grad_k,
                              const Tensor& grad_v);

}  // namespace zero::ops
