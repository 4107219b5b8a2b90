/// @file
/// `clip_grad_norm`: scales all gradients together so their global L2 norm is at most
/// a bound, the guard against the occasional huge step early in training; and
/// `clip_factor`, the same decision left on the device for AdamW to apply.
#pragma once

#include <vector>

#include "zero/core/tensor.h"

namespace zero::optim {

/// Computes the L2 norm of all gradients of `params` taken as one vector,
/// `sqrt(sum over params of sum(grad^2))`, and, when it exceeds `max_norm`, multiplies
/// every gradient in place by `max_norm / (norm + 1e-6)` (PyTorch's rule). Parameters
/// without a gradient are skipped. The sum is accumulated on the parameters' device and
/// only the final scalar is copied to the host (one synchronisation). Returns the norm
/// before clipping; when it is not finite (inf or NaN) the gradients are left as they
/// are, so the caller can see it and skip the step.
///
/// With `grad_scale` S != 1 the gradients are taken to be S times the true ones (a
/// scaled loss, zero/train/loss_scaler.h): the norm returned and compared with
/// `max_norm` is the true one, and the same in-place pass divides them by S (unscales
/// them) as it clips, so that one pass does both.
/// @throws zero::Error when `max_norm` is not positive, `grad_scale` is not finite and
/// positive, or the gradients are on several devices.
float clip_grad_norm(const std::vector<Tensor>& params, float max_norm, float grad_scale = 1.0f);

/// The decision of `clip_grad_norm` without carrying it out and without reading anything
/// on the host: a (2,) F32 tensor on the gradients' device holding the norm that
/// `clip_grad_norm` would return (element 0) and the factor it would multiply every
/// gradient by (element 1; 1 when it would leave them as they are), to the bit.
/// `AdamW::Step(factor)` applies the factor as it reads each gradient, so clipping takes
/// no pass over the gradients and no synchronisation (Note [The clip factor on the
/// device] in grad_clip.cpp). When the norm is not finite the factor is NaN, and AdamW
/// skips the step. The gradients are not written (a strided one is replaced by a
/// contiguous copy, as AdamW would replace it). With no gradient at all: norm 0 and
/// factor 1, on the first parameter's device (the CPU for an empty list).
/// @throws zero::Error in the cases `clip_grad_norm` throws.
Tensor clip_factor(const std::vector<Tensor>& params, float max_norm, float grad_scale = 1.0f);

}  // namespace zero::optim
