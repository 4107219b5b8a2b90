// The attention kernels on Hopper's warpgroup products (kernels/cuda/sm90/, compiled for
// sm_90a alone), as attention.cu calls them. Private to kernels/cuda/.
#pragma once

#include "zero/core/tensor.h"

namespace zero::ops {

// The forward of attention.cu's attention_forward_cuda, on wgmma (Note [Warpgroup
// products] in sm90/wgmma.cuh), when it applies: BF16 or F16 operands, D = 64, no
// dropout, an sm_90 GPU, 16-byte aligned rows, and ZERO_ATTENTION_WGMMA not set to 0
// in the environment. Returns false, having done nothing, when it does not apply.
bool attention_forward_wgmma(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                             const Tensor& out, const Tensor& lse);

}  // namespace zero::ops
