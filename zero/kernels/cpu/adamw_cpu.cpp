// CPU AdamW step (Loshchilov & Hutter, "Decoupled Weight Decay Regularization"),
// element by element and in place, following PyTorch's torch.optim.AdamW:
//   p -= lr * wd * p                         (decay, decoupled from the gradient)
//   m  = beta1 * m + (1 - beta1) * g         (first moment)
//   v  = beta2 * v + (1 - beta2) * g^2       (second moment)
//   p -= lr * (m / bc1) / (sqrt(v / bc2) + eps),  bc_k = 1 - beta_k^step
// The bias corrections bc1, bc2 undo the zero start of m and v in early steps.
#include <cmath>

#include "zero/kernels/cpu/cpu_ops.h"
#include "zero/kernels/cpu/parallel.h"

namespace zero::ops {

void adamw_update_cpu(const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v,
                      const AdamWParams& hp) {
  const int64_t n = param.numel();
  float* pp = param.data_ptr<float>();
  const float* pg = grad.data_ptr<float>();
  float* pm = m.data_ptr<float>();
  float* pv = v.data_ptr<float>();
  // Per-step constants, computed once in double: beta^step underflows gracefully there.
  const double step = static_cast<double>(hp.step);
  const float bc1 = static_cast<float>(1.0 - std::pow(static_cast<double>(hp.beta1), step));
  const float bc2 = static_cast<float>(1.0 - std::pow(static_cast<double>(hp.beta2), step));
  const float decay = 1.0f - hp.lr * hp.weight_decay;
  const float step_size = hp.lr / bc1;
  const float inv_sqrt_bc2 = 1.0f / std::sqrt(bc2);
  const float b1 = hp.beta1, b2 = hp.beta2, eps = hp.eps;
#pragma omp parallel for simd if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) {
    const float g = pg[i];
    const float mi = b1 * pm[i] + (1.0f - b1) * g;
    const float vi = b2 * pv[i] + (1.0f - b2) * g * g;
    pm[i] = mi;
    pv[i] = vi;
    pp[i] = pp[i] * decay - step_size * mi / (std::sqrt(vi) * inv_sqrt_bc2 + eps);
  }
}

}  // namespace zero::ops
