// Global gradient-norm clipping: one sum of squares over every gradient (CPU: a double
// loop per tensor; CUDA: the multi-tensor kernels of optim/cuda/adamw_multi.cu), one
// scalar to the host, then an in-place scale when the norm is over the bound.
#include "zero/optim/grad_clip.h"

#include <cmath>

#include "zero/autograd/grad_mode.h"
#include "zero/kernels/cpu/parallel.h"
#include "zero/kernels/tensor_ops.h"
#include "zero/optim/cuda/multi_tensor.h"

namespace zero::optim {

namespace {

// Sum of squares of a contiguous CPU tensor, accumulated in double.
double sum_of_squares_cpu(const Tensor& t) {
  const float* p = t.data_ptr<float>();
  const int64_t n = t.numel();
  double acc = 0.0;
#pragma omp parallel for reduction(+ : acc) if (n > ops::kParallelGrain)
  for (int64_t i = 0; i < n; ++i) acc += static_cast<double>(p[i]) * p[i];
  return acc;
}

}  // namespace

float clip_grad_norm(const std::vector<Tensor>& params, float max_norm) {
  ZERO_CHECK(max_norm > 0.0f, "clip_grad_norm: expected max_norm > 0, got ", max_norm);
  NoGradGuard no_grad;
  std::vector<Tensor> grads;
  for (const Tensor& p : params) {
    Tensor g = p.Grad();
    if (!g.defined()) continue;
    if (!g.is_contiguous()) {  // scaled in place below, so it must be the stored gradient
      g = g.Contiguous();
      Tensor(p).SetGrad(g);
    }
    ZERO_CHECK(grads.empty() || g.device() == grads.front().device(),
               "clip_grad_norm: gradients on ", grads.front().device(), " and ", g.device(),
               "; expected one device");
    grads.push_back(g);
  }
  if (grads.empty()) return 0.0f;

  double sum_sq = 0.0;
  if (grads.front().device().is_cpu()) {
    for (const Tensor& g : grads) sum_sq += sum_of_squares_cpu(g);
  } else {
    sum_sq = detail::sum_of_squares_multi_cuda(grads).Item();  // the one device->host copy
  }
  const float norm = static_cast<float>(std::sqrt(sum_sq));
  if (!std::isfinite(norm) || norm <= max_norm) return norm;

  const float factor = max_norm / (norm + 1e-6f);
  if (grads.front().device().is_cpu()) {
    for (const Tensor& g : grads) ops::binary_scalar(ops::BinaryOp::kMul, g, factor, g);
  } else {
    detail::scale_multi_cuda(grads, factor);
  }
  return norm;
}

}  // namespace zero::optim
