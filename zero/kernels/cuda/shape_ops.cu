// CUDA masked fill (the mask broadcast through DimsArg) and concatenation, which
// is one strided copy per input into its slice of the output.
#include "zero/kernels/cuda/cuda_common.cuh"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/tensor_ops.h"
#include "zero/kernels/dims_arg.h"

namespace zero::ops {
namespace {

using cuda::grid_for;
using cuda::kBlock;

__global__ void masked_fill_kernel(const float* x, DimsArg dx, const int32_t* mask, DimsArg dm,
                                   float value, float* out, int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = mask[dm.Offset(i)] != 0 ? value : x[dx.Offset(i)];
}

void masked_fill_cuda(const Tensor& x, const Tensor& mask, float value, const Tensor& out) {
  const int64_t n = out.numel();
  if (n == 0) return;
  cuda::set_device(out);
  ZERO_ASSERT(out.is_contiguous(), "masked_fill writes a contiguous output");
  masked_fill_kernel<<<grid_for(n), kBlock, 0, cuda::current_stream()>>>(
      x.data_ptr<float>(), DimsArg::Of(x.meta()), mask.data_ptr<int32_t>(),
      DimsArg::Broadcast(mask.meta(), out.sizes()), value, out.data_ptr<float>(), n);
  ZERO_CUDA_LAUNCH_CHECK();
}

// Each input is copied into its slice of the output (a strided view), so this is
// one copy kernel per input and no index arithmetic of its own.
void concat_cuda(const std::vector<Tensor>& inputs, int dim, const Tensor& out) {
  int64_t start = 0;
  for (const Tensor& t : inputs) {
    const int64_t len = t.size(dim);
    copy(t, Tensor(meta_slice(out.meta(), dim, start, start + len, 1), out.node()));
    start += len;
  }
}

}  // namespace

ZERO_REGISTER_KERNEL(masked_fill, kCuda, masked_fill_cuda);
ZERO_REGISTER_KERNEL(concat, kCuda, concat_cuda);

}  // namespace zero::ops
