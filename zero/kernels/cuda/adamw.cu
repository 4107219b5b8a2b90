// CUDA AdamW: one element-wise pass updates the parameter and both moments in
// place, with the bias corrections computed once on the host.
#include "zero/kernels/cuda/cuda_common.cuh"
#include "zero/kernels/cuda/cuda_ops.h"

namespace zero::ops {
namespace {

using cuda::grid_for;
using cuda::kBlock;

__global__ void adamw_kernel(float* p, const float* g, float* m, float* v, int64_t n, float lr,
                             float beta1, float beta2, float eps, float wd, float bc1, float bc2) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const float gi = g[i];
  const float mi = beta1 * m[i] + (1.0f - beta1) * gi;
  const float vi = beta2 * v[i] + (1.0f - beta2) * gi * gi;
  m[i] = mi;
  v[i] = vi;
  float pi = p[i] * (1.0f - lr * wd);  // decoupled weight decay
  pi -= lr * (mi / bc1) / (sqrtf(vi / bc2) + eps);
  p[i] = pi;
}

}  // namespace

void adamw_update_cuda(const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v,
                       const AdamWParams& hp) {
  const int64_t n = param.numel();
  if (n == 0) return;
  cuda::set_device(param);
  const float bc1 = 1.0f - std::pow(hp.beta1, static_cast<float>(hp.step));
  const float bc2 = 1.0f - std::pow(hp.beta2, static_cast<float>(hp.step));
  adamw_kernel<<<grid_for(n), kBlock, 0, cuda::current_stream()>>>(
      param.data_ptr<float>(), grad.data_ptr<float>(), m.data_ptr<float>(), v.data_ptr<float>(), n,
      hp.lr, hp.beta1, hp.beta2, hp.eps, hp.weight_decay, bc1, bc2);
  ZERO_CUDA_LAUNCH_CHECK();
}

}  // namespace zero::ops
