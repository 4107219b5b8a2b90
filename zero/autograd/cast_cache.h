/// @file
/// Casts of parameters kept from one step to the next: a model computing in BF16 or F16
/// converts its FP32 weights once per optimiser step, inside the optimiser's own pass,
/// instead of once per use in every forward (Note [Cached casts] in cast_cache.cpp).
#pragma once

#include "zero/core/tensor.h"

namespace zero {

/// `param` cast to `dtype` as `to_dtype(param, dtype)` casts it: a graph node whose
/// backward widens the gradient into param's dtype. The converted values are kept, and
/// a later call for the same parameter takes them instead of converting again as long as
/// neither the parameter nor the kept values have been written since (their buffers'
/// version counters, Note [Version counter] in tensor_op.cpp). For the parameters of a
/// model (contiguous leaves); any other tensor is cast by `to_dtype`. Thread-safe.
Tensor cached_cast(const Tensor& param, DataType dtype);

namespace autograd {

/// For an in-place update of `param` that also writes its kept cast in the same pass
/// (AdamW's `param_copy`, kernels/tensor_ops.h): the kept values to overwrite with the
/// updated parameter rounded to their dtype, or an undefined tensor when `param` has none
/// that is current. After the update, `copy_refreshed(param)` marks them current again;
/// until then they count as stale, so an update that fails leaves nothing wrong behind.
Tensor copy_to_refresh(const Tensor& param);

/// Marks the kept cast that `copy_to_refresh(param)` returned as made from param's
/// current version, and counts the write into it on its own buffer.
void copy_refreshed(const Tensor& param);

}  // namespace autograd
}  // namespace zero
