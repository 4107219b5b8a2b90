// The operand split of Note [FP32 GEMMs on TF32 Tensor Cores] (split_tf32.cuh).
#include "zero/kernels/cuda/blas_common.cuh"
#include "zero/kernels/cuda/cuda_common.cuh"
#include "zero/kernels/cuda/cuda_ops.h"
#include "zero/kernels/cuda/split_tf32.cuh"
#include "zero/kernels/cuda/tf32.cuh"

namespace zero::ops {
namespace cuda {
namespace {

// V consecutive floats, loaded and stored as one access when V is 4.
template <int V>
struct alignas(4 * V) Floats {
  float v[V];
};

// A column-major matrix of `lines` columns of `len` floats (column c starts at c * ld)
// is written three times into `out`: piece j of column c starts at
// j * piece_stride + c * line_stride. Piece j holds the TF32 rounding of each value
// (big) when bit j of small_mask is clear, else the TF32 rounding of what that left
// out (small). Each thread handles V consecutive floats of one column.
template <int V>
__global__ void split_tf32_kernel(const float* __restrict__ x, int64_t ld, int64_t lines,
                                  int64_t len, float* __restrict__ out, int64_t piece_stride,
                                  int64_t line_stride, unsigned small_mask) {
  const int64_t per_line = len / V;
  const int64_t g = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (g >= lines * per_line) return;
  const int64_t c = g / per_line, i = (g - c * per_line) * V;
  const Floats<V> in = *reinterpret_cast<const Floats<V>*>(x + c * ld + i);
  Floats<V> big, small;
#pragma unroll
  for (int e = 0; e < V; ++e) {
    big.v[e] = __uint_as_float(to_tf32(in.v[e]));
    small.v[e] = __uint_as_float(to_tf32(in.v[e] - big.v[e]));
  }
#pragma unroll
  for (int j = 0; j < 3; ++j) {
    *reinterpret_cast<Floats<V>*>(out + j * piece_stride + c * line_stride + i) =
        (small_mask >> j & 1u) ? small : big;
  }
}

}  // namespace

bool split_tf32_pays(int device, int64_t m, int64_t n, int64_t k) {
  // m n k compared as doubles: the product of three int64 sizes can overflow.
  return split_tf32_mode() && m >= kSplitMinSide && n >= kSplitMinSide &&
         static_cast<double>(m) * n * k >= kSplitMinMacs && split_tf32_supported(device);
}

SplitOperand split_tf32(const float* x, bool trans, bool second, int64_t dim, int64_t k,
                        int64_t ld, int device) {
  // The reduction runs along each stored column (inner) or across the columns.
  const bool reduce_inner = trans != second;
  const int64_t len = reduce_inner ? k : dim, lines = reduce_inner ? dim : k;
  SplitOperand out{Tensor::Empty({3 * len * lines}, TensorOption().OnDevice(Device::Cuda(device))),
                   reduce_inner ? 3 * len : len};
  const int64_t piece_stride = reduce_inner ? len : lines * len;
  const int64_t line_stride = reduce_inner ? 3 * len : len;
  const unsigned small_mask = second ? 0b010u : 0b001u;  // A: small big big; B: big small big
  float* o = out.pieces.data_ptr<float>();
  const bool vec4 = len % 4 == 0 && ld % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0;
  if (vec4) {
    split_tf32_kernel<4><<<grid_for(lines * len, 4), kBlock, 0, current_stream()>>>(
        x, ld, lines, len, o, piece_stride, line_stride, small_mask);
  } else {
    split_tf32_kernel<1><<<grid_for(lines * len), kBlock, 0, current_stream()>>>(
        x, ld, lines, len, o, piece_stride, line_stride, small_mask);
  }
  ZERO_CUDA_CHECK(cudaGetLastError());
  return out;
}

}  // namespace cuda

bool split_tf32_supported(int device) {
  return cuda::device_attribute(device, cudaDevAttrComputeCapabilityMajor) >= 8;
}

}  // namespace zero::ops
