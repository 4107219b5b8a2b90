/// @file
/// `clip_grad_norm`: scales all gradients together so their global L2 norm is at most
/// a bound, the guard against the occasional huge step early in training.
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
/// @throws zero::Error when `max_norm` is not positive or the gradients are on several devices.
float clip_grad_norm(const std::vector<Tensor>& params, float max_norm);

}  // namespace zero::optim
