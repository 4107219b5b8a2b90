// CPU masked_fill (the mask broadcast through stride-0 dimensions) and concat
// (each input copied into its slice of the output, any layouts).
#include "zero/kernels/cpu/parallel.h"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {
namespace {

void masked_fill_cpu(const Tensor& x, const Tensor& mask, float value, const Tensor& out) {
  const int64_t n = out.numel();
  const float* px = x.data_ptr<float>();
  const int32_t* pm = mask.data_ptr<int32_t>();
  float* po = out.data_ptr<float>();
  if (x.is_contiguous() && dense_as(mask, x.sizes()) && out.is_contiguous()) {
#pragma omp parallel for simd if (n > kParallelGrain)
    for (int64_t i = 0; i < n; ++i) po[i] = pm[i] != 0 ? value : px[i];
    return;
  }
  const DimsArg dx = DimsArg::Of(x.meta()), dout = DimsArg::Of(out.meta());
  const DimsArg dm = DimsArg::Broadcast(mask.meta(), out.sizes());
#pragma omp parallel for if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) {
    po[dout.Offset(i)] = pm[dm.Offset(i)] != 0 ? value : px[dx.Offset(i)];
  }
}

// Input k lands in out[..., start_k : start_k + size_k, ...] along `dim`: a view of
// `out` with the input's sizes, into which the strided copy writes.
void concat_cpu(const std::vector<Tensor>& inputs, int dim, const Tensor& out) {
  int64_t start = 0;
  for (const Tensor& t : inputs) {
    const int64_t len = t.size(dim);
    const TensorMeta slot = meta_slice(out.meta(), dim, start, start + len, 1);
    copy(t, Tensor(slot, out.node()));
    start += len;
  }
}

}  // namespace

ZERO_REGISTER_KERNEL(masked_fill, kCpu, masked_fill_cpu);
ZERO_REGISTER_KERNEL(concat, kCpu, concat_cpu);

}  // namespace zero::ops
