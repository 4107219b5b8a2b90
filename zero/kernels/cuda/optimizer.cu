// The AdamW step for CUDA: one multi-tensor kernel (multi_tensor.cuh) updates every
// parameter, its moments and its optional 16-bit copy, with the clip factor, when given,
// read on the device; and the launch that writes a step's constants to the device for a
// captured step (AdamWParams::scalars). The CUDA side of `adamw` in tensor_ops.h.
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "zero/kernels/cuda/cuda_common.cuh"
#include "zero/kernels/cuda/multi_tensor.cuh"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {
namespace {

using cuda::for_each_table;
using cuda::four_aligned;
using cuda::kBlock;
using cuda::load4;
using cuda::locate;
using cuda::rows_of;
using cuda::store4;
using cuda::TensorTable;
using cuda::with_dtype;

// The per-step constants of AdamW, the same values the CPU kernel computes, and the
// device address of the optional gradient factor (null for none). `on_device`, when
// set, holds this step's step_size, inv_sqrt_bc2 and decay (AdamWParams::scalars), read
// in place of those here: a CUDA graph replays these arguments as they were captured.
struct AdamWScalars {
  float beta1, beta2, eps, step_size, inv_sqrt_bc2, decay;  // decay: 1 - lr * wd
  const float* grad_factor;
  const float* on_device;
};

// step_size, inv_sqrt_bc2 and decay of step hp.step. In double, as the CPU kernel
// computes them: beta^step underflows gracefully there.
void step_constants(const AdamWParams& hp, float out[3]) {
  const double step = static_cast<double>(hp.step);
  const float bc1 = static_cast<float>(1.0 - std::pow(static_cast<double>(hp.beta1), step));
  const float bc2 = static_cast<float>(1.0 - std::pow(static_cast<double>(hp.beta2), step));
  out[0] = hp.lr / bc1;
  out[1] = 1.0f / std::sqrt(bc2);
  out[2] = 1.0f - hp.lr * hp.weight_decay;
}

static_assert(sizeof(TensorTable) + sizeof(AdamWScalars) + 2 * sizeof(void*) <= 4096,
              "kernel arguments must fit in 4 KiB");

// The copy type of an entry without param_copy.
struct NoCopy {};

// ---------------------------------------------------------------- kernels

// One element's update: the moments m, v and the parameter p, from the gradient g.
// Every multiply-add is written out (fmaf, __fmul_rn), so that ptxas cannot contract the
// same formula differently in the kernel's two instances: with and without the clip
// factor, an update must be the same bits (Note [The clip factor on the device] in
// optim/grad_clip.cpp). Left to itself it did, and moved results by an ulp.
__device__ inline void adamw_update(float g, float& m, float& v, float& p, float decay,
                                    const AdamWScalars& s) {
  m = fmaf(1.0f - s.beta1, g, __fmul_rn(s.beta1, m));
  v = fmaf(__fmul_rn(1.0f - s.beta2, g), g, __fmul_rn(s.beta2, v));
  const float step = __fdiv_rn(__fmul_rn(s.step_size, m), fmaf(sqrtf(v), s.inv_sqrt_bc2, s.eps));
  p = fmaf(p, decay, -step);
}

// Elements [begin, end) of one tensor: G the gradient's type, C the copy's; with kFactor,
// each gradient is multiplied by `factor` (in a register, rounded to float as scale()
// would store it) before the update. The step moves about 30 bytes an element and no
// arithmetic to speak of, so it runs at the speed of its loads: when every array is
// aligned for it, each thread moves 4 elements of each with one wide load or store (as
// the element-wise kernels do), element by element otherwise and for the tail. The
// results are the same bits either way.
template <bool kFactor, typename G, typename C>
__device__ void adamw_range(float* p, const G* g, float* m, float* v, C* copy, float decay,
                            float factor, const AdamWScalars& s, int64_t begin, int64_t end) {
  constexpr bool kCopy = !std::is_same_v<C, NoCopy>;
  int64_t rest = begin;  // the first element left to the scalar loop
  bool vectors = four_aligned(p) && four_aligned(g) && four_aligned(m) && four_aligned(v);
  if constexpr (kCopy) vectors = vectors && four_aligned(copy);
  if (vectors) {
    for (int64_t i = begin + 4 * threadIdx.x; i + 4 <= end; i += 4 * blockDim.x) {
      float gi[4], mi[4], vi[4], pi[4];
      load4(g + i, gi), load4(m + i, mi), load4(v + i, vi), load4(p + i, pi);
      if constexpr (kFactor) {
        for (int k = 0; k < 4; ++k) gi[k] = __fmul_rn(gi[k], factor);
      }
      for (int k = 0; k < 4; ++k) adamw_update(gi[k], mi[k], vi[k], pi[k], decay, s);
      store4(m + i, mi), store4(v + i, vi), store4(p + i, pi);
      if constexpr (kCopy) store4(copy + i, pi);
    }
    rest = end - (end - begin) % 4;
  }
  for (int64_t i = rest + threadIdx.x; i < end; i += blockDim.x) {
    float gi = static_cast<float>(g[i]), mi = m[i], vi = v[i], pi = p[i];
    if constexpr (kFactor) gi = __fmul_rn(gi, factor);
    adamw_update(gi, mi, vi, pi, decay, s);
    m[i] = mi;
    v[i] = vi;
    p[i] = pi;
    if constexpr (kCopy) copy[i] = static_cast<C>(pi);
  }
}

// kFactor: s.grad_factor is set. Every thread reads the factor (one cached load) and,
// when it is not finite, the whole launch writes nothing: a skipped step, decided on
// the device. Without a factor this is the plain kernel, with no load and no multiply.
template <bool kFactor>
__global__ void adamw_multi_kernel(TensorTable table, AdamWScalars s) {
  if (s.on_device != nullptr) {
    s.step_size = s.on_device[0];
    s.inv_sqrt_bc2 = s.on_device[1];
    s.decay = s.on_device[2];
  }
  float factor = 1.0f;
  if constexpr (kFactor) {
    factor = *s.grad_factor;
    if (!isfinite(factor)) return;
  }
  int t;
  int64_t begin, end;
  locate(table, t, begin, end);
  float* p = table.param[t];
  float* m = table.exp_avg[t];
  float* v = table.exp_avg_sq[t];
  const float decay = table.decays[t] ? s.decay : 1.0f;
  with_dtype(table.grad[t], table.grad_dtype[t], [&](auto* g) {
    if (table.copy[t] == nullptr) {
      return adamw_range<kFactor>(p, g, m, v, static_cast<NoCopy*>(nullptr), decay, factor, s,
                                  begin, end);
    }
    with_dtype(table.copy[t], table.copy_dtype[t], [&](auto* c) {
      adamw_range<kFactor>(p, g, m, v, c, decay, factor, s, begin, end);
    });
  });
}

__global__ void write_scalars_kernel(float* out, float step_size, float inv_sqrt_bc2,
                                     float decay) {
  out[0] = step_size;
  out[1] = inv_sqrt_bc2;
  out[2] = decay;
}

// ---------------------------------------------------------------- launchers

void adamw_cuda(const std::vector<AdamWTensor>& tensors, const AdamWParams& hp) {
  if (tensors.empty()) return;
  cuda::set_device(tensors.front().param);
  float c[3];
  step_constants(hp, c);
  const float* factor = hp.grad_factor.defined() ? rows_of(hp.grad_factor) : nullptr;
  const float* on_device = hp.scalars.defined() ? rows_of(hp.scalars) : nullptr;
  const AdamWScalars s{hp.beta1, hp.beta2, hp.eps, c[0], c[1], c[2], factor, on_device};
  for_each_table(
      tensors,
      [&](TensorTable& table, int i, const AdamWTensor& e) {
        table.param[i] = rows_of(e.param);
        table.grad[i] = e.grad.data();
        table.grad_dtype[i] = e.grad.dtype();
        table.exp_avg[i] = rows_of(e.exp_avg);
        table.exp_avg_sq[i] = rows_of(e.exp_avg_sq);
        table.copy[i] = e.param_copy.defined() ? e.param_copy.data() : nullptr;
        table.copy_dtype[i] = e.param_copy.defined() ? e.param_copy.dtype() : DataType::F32;
        table.decays[i] = e.decay;
        return e.param.numel();
      },
      [&](const TensorTable& table, int32_t blocks, int64_t) {
        if (factor == nullptr) {
          adamw_multi_kernel<false><<<blocks, kBlock, 0, cuda::current_stream()>>>(table, s);
        } else {
          adamw_multi_kernel<true><<<blocks, kBlock, 0, cuda::current_stream()>>>(table, s);
        }
        ZERO_CUDA_LAUNCH_CHECK();
      });
}

void adamw_scalars_cuda(const AdamWParams& hp, const Tensor& out) {
  cuda::set_device(out);
  float c[3];
  step_constants(hp, c);
  write_scalars_kernel<<<1, 1, 0, cuda::current_stream()>>>(rows_of(out), c[0], c[1], c[2]);
  ZERO_CUDA_LAUNCH_CHECK();
}

}  // namespace

ZERO_REGISTER_KERNEL(adamw, kCuda, adamw_cuda);
ZERO_REGISTER_KERNEL(adamw_scalars, kCuda, adamw_scalars_cuda);

}  // namespace zero::ops
