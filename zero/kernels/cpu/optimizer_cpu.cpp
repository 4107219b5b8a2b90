// CPU kernels of the optimiser, one tensor after another (the CPU has no launches to
// save). AdamW (Loshchilov & Hutter, "Decoupled Weight Decay Regularization"),
// element by element and in place, following PyTorch's torch.optim.AdamW:
//   p -= lr * wd * p                         (decay, decoupled from the gradient)
//   m  = beta1 * m + (1 - beta1) * g         (first moment)
//   v  = beta2 * v + (1 - beta2) * g^2       (second moment)
//   p -= lr * (m / bc1) / (sqrt(v / bc2) + eps),  bc_k = 1 - beta_k^step
// The bias corrections bc1, bc2 undo the zero start of m and v in early steps.
// Parameters and moments are FP32; a 16-bit gradient G is read into float, and an
// optional copy of the updated parameter is rounded into its dtype C in the same loop.
// With a grad_factor (the clip of gradient-norm clipping), g is multiplied by it first.
#include <cmath>
#include <type_traits>

#include "zero/kernels/clip_rule.h"
#include "zero/kernels/cpu/parallel.h"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/dtype_dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {
namespace {

// The copy type of an entry without param_copy.
struct NoCopy {};

// kFactor: whether g is multiplied by `factor`. Without one the loop is the plain step,
// not one with a multiply by 1, so that the common path costs what it always did.
template <typename G, typename C, bool kFactor>
void adamw_one(const AdamWTensor& e, const AdamWParams& hp, float weight_decay, float factor) {
  const int64_t n = e.param.numel();
  float* pp = e.param.data_ptr<float>();
  const G* pg = e.grad.data_ptr<G>();
  float* pm = e.exp_avg.data_ptr<float>();
  float* pv = e.exp_avg_sq.data_ptr<float>();
  C* pc = nullptr;
  if constexpr (!std::is_same_v<C, NoCopy>) pc = e.param_copy.data_ptr<C>();
  // Per-step constants, computed once in double: beta^step underflows gracefully there.
  const double step = static_cast<double>(hp.step);
  const float bc1 = static_cast<float>(1.0 - std::pow(static_cast<double>(hp.beta1), step));
  const float bc2 = static_cast<float>(1.0 - std::pow(static_cast<double>(hp.beta2), step));
  const float decay = 1.0f - hp.lr * weight_decay;
  const float step_size = hp.lr / bc1;
  const float inv_sqrt_bc2 = 1.0f / std::sqrt(bc2);
  const float b1 = hp.beta1, b2 = hp.beta2, eps = hp.eps;
#pragma omp parallel for simd if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) {
    float g = static_cast<float>(pg[i]);
    if constexpr (kFactor) g *= factor;  // rounded to float, as scale() stores it
    const float mi = b1 * pm[i] + (1.0f - b1) * g;
    const float vi = b2 * pv[i] + (1.0f - b2) * g * g;
    pm[i] = mi;
    pv[i] = vi;
    const float pi = pp[i] * decay - step_size * mi / (std::sqrt(vi) * inv_sqrt_bc2 + eps);
    pp[i] = pi;
    if constexpr (!std::is_same_v<C, NoCopy>) pc[i] = static_cast<C>(pi);
  }
}

template <bool kFactor>
void adamw_all(const std::vector<AdamWTensor>& tensors, const AdamWParams& hp, float factor) {
  for (const AdamWTensor& e : tensors) {
    const float wd = e.decay ? hp.weight_decay : 0.0f;
    dispatch_dtype<FloatTypes>(e.grad.dtype(), "adamw", [&](auto grad_tag) {
      using G = typename decltype(grad_tag)::type;
      if (!e.param_copy.defined()) return adamw_one<G, NoCopy, kFactor>(e, hp, wd, factor);
      dispatch_dtype<FloatTypes>(e.param_copy.dtype(), "adamw", [&](auto copy_tag) {
        adamw_one<G, typename decltype(copy_tag)::type, kFactor>(e, hp, wd, factor);
      });
    });
  }
}

void adamw_cpu(const std::vector<AdamWTensor>& tensors, const AdamWParams& hp) {
  if (!hp.grad_factor.defined()) return adamw_all<false>(tensors, hp, 1.0f);
  const float factor = hp.grad_factor.data_ptr<float>()[0];  // host memory: no copy
  if (!std::isfinite(factor)) return;  // an inf/NaN gradient norm: a skipped step
  adamw_all<true>(tensors, hp, factor);
}

template <typename T>
double sum_squares(const Tensor& t) {
  const T* p = t.data_ptr<T>();
  const int64_t n = t.numel();
  double acc = 0.0;
#pragma omp parallel for reduction(+ : acc) if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) {
    const float v = static_cast<float>(p[i]);
    acc += static_cast<double>(v) * v;
  }
  return acc;
}

// Accumulated in double, per tensor and across them: the CPU is the reference.
Tensor sum_of_squares_cpu(const std::vector<Tensor>& tensors) {
  double total = 0.0;
  for (const Tensor& t : tensors) {
    dispatch_dtype<FloatTypes>(t.dtype(), "sum_of_squares", [&](auto tag) {
      total += sum_squares<typename decltype(tag)::type>(t);
    });
  }
  return Tensor::From({static_cast<float>(total)}, {1});
}

// binary_scalar computes in float and rounds once into a 16-bit tensor.
void scale_cpu(const std::vector<Tensor>& tensors, float factor) {
  for (const Tensor& t : tensors) binary_scalar(BinaryOp::kMul, t, factor, t);
}

// clip_grad_norm's decision, made where the sum is, in its very arithmetic: the
// functions of clip_rule.h, which clip_grad_norm and the CUDA twin (clip_factor_kernel
// in cuda/grad_clip.cu) call too (Note [The clip factor on the device] in
// optim/grad_clip.cpp).
void clip_factor_cpu(const Tensor& sum_sq, float max_norm, float grad_scale, const Tensor& out) {
  const float norm = clip_norm(sum_sq.data_ptr<float>()[0], grad_scale);
  float* o = out.data_ptr<float>();
  o[0] = norm;
  o[1] = clip_factor_value(norm, max_norm, grad_scale);
}

}  // namespace

ZERO_REGISTER_KERNEL(adamw, kCpu, adamw_cpu);
ZERO_REGISTER_KERNEL(sum_of_squares, kCpu, sum_of_squares_cpu);
ZERO_REGISTER_KERNEL(scale, kCpu, scale_cpu);
ZERO_REGISTER_KERNEL(clip_factor, kCpu, clip_factor_cpu);

}  // namespace zero::ops
