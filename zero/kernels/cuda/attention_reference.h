// The plain CUDA attention kernels (attention_reference.cu), private to the library: the
// way into the fast kernels of attention.cu and attention_backward.cu, and what the test
// tests/kernels/attention_reference_test.cpp checks them against. Nothing in training
// calls these. Arguments as for attention_forward_cuda and attention_backward_cuda
// (cuda_ops.h), and just as unchecked: pass what ops::attention_forward and
// ops::attention_backward would accept. Unlike the fast kernels they take any head
// dimension D. A build without CUDA links the definitions in kernels/attention_reference.cpp,
// which throw.
#pragma once

#include <cstdint>

#include "zero/core/tensor.h"

namespace zero::ops {

// out [B, H, Tq, D] and lse [B, H, Tq] from q [B, H, Tq, D], k and v [B, H, Tk, D].
void attention_reference_forward_cuda(const Tensor& q, const Tensor& k, const Tensor& v,
                                      bool causal, float dropout_p, uint64_t seed,
                                      uint64_t offset, const Tensor& out, const Tensor& lse);

// grad_q, grad_k, grad_v from the forward's inputs, its out and lse, and grad_out.
void attention_reference_backward_cuda(const Tensor& q, const Tensor& k, const Tensor& v,
                                       const Tensor& out, const Tensor& lse,
                                       const Tensor& grad_out, bool causal, float dropout_p,
                                       uint64_t seed, uint64_t offset, const Tensor& grad_q,
                                       const Tensor& grad_k, const Tensor& grad_v);

}  // namespace zero::ops
