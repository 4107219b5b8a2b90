// Dispatch for one AdamW step: check the four tensors (one shape, f32, contiguous,
// one device) and the hyper-parameters, then call the CPU or CUDA kernel, which
// update param, m and v in place. The optimiser class (optim/) loops over parameters.
#include "zero/kernels/cpu/cpu_ops.h"
#include "zero/kernels/cuda/cuda_ops.h"

namespace zero::ops {
namespace {

void check_state(const Tensor& t, const char* name, const Tensor& param) {
  ZERO_CHECK(t.dtype() == DataType::F32, "adamw: expected ", name, " of dtype f32, got ",
             to_string(t.dtype()));
  ZERO_CHECK(t.is_contiguous(), "adamw: expected a contiguous ", name, ", got strides ",
             shape_to_string(t.strides()));
  ZERO_CHECK(t.sizes() == param.sizes(), "adamw: expected ", name, " of the parameter's shape ",
             shape_to_string(param.sizes()), ", got ", shape_to_string(t.sizes()));
}

}  // namespace

void adamw_update(const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v,
                  const AdamWParams& hp) {
  check_same_device("adamw", {&param, &grad, &m, &v});
  check_state(param, "param", param);
  check_state(grad, "grad", param);
  check_state(m, "m (first moment)", param);
  check_state(v, "v (second moment)", param);
  ZERO_CHECK(hp.step >= 1, "adamw: expected a 1-based step >= 1, got ", hp.step);
  ZERO_CHECK(hp.beta1 >= 0.0f && hp.beta1 < 1.0f && hp.beta2 >= 0.0f && hp.beta2 < 1.0f,
             "adamw: expected betas in [0, 1), got beta1 = ", hp.beta1, ", beta2 = ", hp.beta2);
  ZERO_CHECK(hp.lr >= 0.0f && hp.eps >= 0.0f && hp.weight_decay >= 0.0f,
             "adamw: expected lr, eps and weight_decay >= 0, got lr = ", hp.lr, ", eps = ",
             hp.eps, ", weight_decay = ", hp.weight_decay);
  if (param.device().is_cpu()) {
    adamw_update_cpu(param, grad, m, v, hp);
  } else {
    adamw_update_cuda(param, grad, m, v, hp);
  }
}

}  // namespace zero::ops
