// Building DimsArg from tensor metadata.
#include "zero/kernels/dims_arg.h"

#include "zero/core/error.h"

namespace zero {

DimsArg DimsArg::Of(const TensorMeta& meta) {
  ZERO_CHECK(meta.dim() <= kMaxDims, "kernels support at most ", kMaxDims,
             " dimensions, got shape ", shape_to_string(meta.sizes));
  DimsArg arg;
  arg.ndim = meta.dim();
  for (int d = 0; d < arg.ndim; ++d) {
    arg.sizes[d] = meta.sizes[d];
    arg.strides[d] = meta.strides[d];
  }
  return arg;
}

DimsArg DimsArg::Broadcast(const TensorMeta& meta, const Shape& out_sizes) {
  const int n = static_cast<int>(out_sizes.size());
  ZERO_CHECK(n <= kMaxDims, "kernels support at most ", kMaxDims, " dimensions, got shape ",
             shape_to_string(out_sizes));
  ZERO_CHECK(meta.dim() <= n, "cannot broadcast shape ", shape_to_string(meta.sizes), " to ",
             shape_to_string(out_sizes));
  DimsArg arg;
  arg.ndim = n;
  const int lead = n - meta.dim();
  for (int d = 0; d < n; ++d) {
    arg.sizes[d] = out_sizes[d];
    if (d < lead) continue;  // new leading dimension: stride 0
    const int64_t have = meta.sizes[d - lead];
    ZERO_CHECK(have == out_sizes[d] || have == 1, "cannot broadcast shape ",
               shape_to_string(meta.sizes), " to ", shape_to_string(out_sizes));
    arg.strides[d] = have == out_sizes[d] ? meta.strides[d - lead] : 0;
  }
  return arg;
}

}  // namespace zero
