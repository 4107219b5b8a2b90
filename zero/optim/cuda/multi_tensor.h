/// @file
/// Private to optim/: the multi-tensor CUDA kernels (optim/cuda/adamw_multi.cu), one
/// launch over many tensors instead of one launch per tensor. CPU-only builds define
/// throwing stand-ins in no_cuda/optim.cpp. See Note [Multi-tensor launches].
#pragma once

#include <vector>

#include "zero/core/tensor.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::optim::detail {

/// One parameter of a multi-tensor AdamW step: four contiguous F32 tensors of one shape
/// on one GPU, and whether weight decay applies to it.
struct AdamWTensor {
  Tensor param;       ///< Updated in place.
  Tensor grad;        ///< Read.
  Tensor exp_avg;     ///< First moment, updated in place.
  Tensor exp_avg_sq;  ///< Second moment, updated in place.
  bool decay;         ///< Whether `hp.weight_decay` applies.
};

/// ops::adamw_update on every entry (hp.weight_decay only where `decay`), fused.
void adamw_multi_cuda(const std::vector<AdamWTensor>& tensors, const ops::AdamWParams& hp);
/// The sum of the squares of every element of every tensor, as a 1-element F32 tensor on
/// their GPU. Deterministic: per-block partials are summed in a fixed order.
Tensor sum_of_squares_multi_cuda(const std::vector<Tensor>& tensors);
/// Multiplies every element of every (contiguous) tensor by `factor`, in place.
void scale_multi_cuda(const std::vector<Tensor>& tensors, float factor);

}  // namespace zero::optim::detail
