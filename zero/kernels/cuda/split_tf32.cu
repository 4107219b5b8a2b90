// The operand split of Note [FP32 GEMMs on TF32 Tensor Cores] (split_tf32.cuh).
#include <algorithm>
#include <cstdlib>
#include <string>

#include "zero/kernels/cuda/blas_common.cuh"
#include "zero/kernels/cuda/cuda_common.cuh"
#include "zero/kernels/cuda/split_tf32.cuh"
#include "zero/kernels/cuda/tf32.cuh"
#include "zero/kernels/precision.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {
namespace cuda {
namespace {

// V consecutive floats, loaded and stored as one access when V is 4.
template <int V>
struct alignas(4 * V) Floats {
  float v[V];
};

// The piece of x that piece j holds: its TF32 rounding (big) when bit j of small_mask
// is clear, else the TF32 rounding of what that left out (small).
__device__ inline float piece(float x, int j, unsigned small_mask) {
  const float big = __uint_as_float(to_tf32(x));
  return (small_mask >> j & 1u) ? __uint_as_float(to_tf32(x - big)) : big;
}

// Source: a column-major matrix of `lines` columns of `len` floats, column c at c * ld.
// The output is K-major: column c becomes the 3 len floats at out + 3 len c, its three
// pieces one after another. For a source whose reduction runs down each column (len is
// k). Each thread handles V consecutive floats of one column.
template <int V>
__global__ void split_columns_kernel(const float* __restrict__ x, int64_t ld, int64_t lines,
                                     int64_t len, float* __restrict__ out, unsigned small_mask) {
  const int64_t per_line = len / V;
  const int64_t g = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (g >= lines * per_line) return;
  const int64_t c = g / per_line, i = (g - c * per_line) * V;
  const Floats<V> in = *reinterpret_cast<const Floats<V>*>(x + c * ld + i);
#pragma unroll
  for (int j = 0; j < 3; ++j) {
    Floats<V> p;
#pragma unroll
    for (int e = 0; e < V; ++e) p.v[e] = piece(in.v[e], j, small_mask);
    *reinterpret_cast<Floats<V>*>(out + 3 * len * c + j * len + i) = p;
  }
}

// The same source, for a reduction that runs across the columns (lines is k): the output
// is its transpose, row i of the source becoming the kPieces lines floats at
// out + kPieces lines i (kPieces 3: the pieces above; 1: the values themselves, for
// k_major_copy). A 32 x 32 tile goes through shared memory so that both the reads (down
// a column) and the writes (along a row) are coalesced; the padding column keeps the
// transposed reads of the tile free of bank conflicts. Block: 32 x 8 threads; grid.y
// strides over the columns, so any k fits.
template <int kPieces>
__global__ void split_transpose_kernel(const float* __restrict__ x, int64_t ld, int64_t lines,
                                       int64_t len, float* __restrict__ out,
                                       unsigned small_mask) {
  __shared__ float tile[32][33];
  const int64_t i0 = static_cast<int64_t>(blockIdx.x) * 32;
  for (int64_t c0 = static_cast<int64_t>(blockIdx.y) * 32; c0 < lines; c0 += gridDim.y * 32) {
    for (int r = threadIdx.y; r < 32; r += 8) {
      const int64_t c = c0 + r, i = i0 + threadIdx.x;
      tile[r][threadIdx.x] = c < lines && i < len ? x[c * ld + i] : 0.0f;
    }
    __syncthreads();
    for (int r = threadIdx.y; r < 32; r += 8) {
      const int64_t i = i0 + r, c = c0 + threadIdx.x;
      if (i >= len || c >= lines) continue;
      const float v = tile[threadIdx.x][r];
      float* o = out + kPieces * lines * i + c;
      if constexpr (kPieces == 1) {
        *o = v;
      } else {
#pragma unroll
        for (int j = 0; j < kPieces; ++j) o[j * lines] = piece(v, j, small_mask);
      }
    }
    __syncthreads();  // the tile is refilled by the next column block
  }
}

template <int kPieces>
void launch_transpose(const float* x, int64_t ld, int64_t lines, int64_t len, float* out,
                      unsigned small_mask) {
  const dim3 grid(static_cast<unsigned>((len + 31) / 32),
                  static_cast<unsigned>(std::min<int64_t>((lines + 31) / 32, 65535)));
  split_transpose_kernel<kPieces><<<grid, dim3(32, 8), 0, current_stream()>>>(x, ld, lines, len,
                                                                             out, small_mask);
}

}  // namespace

bool split_tf32_pays(int device, int64_t m, int64_t n, int64_t k) {
  // m n k compared as doubles: the product of three int64 sizes can overflow.
  return split_tf32_mode() && m >= kSplitMinSide && n >= kSplitMinSide &&
         static_cast<double>(m) * n * k >= kSplitMinMacs && tf32_supported(device);
}

SplitOperand split_tf32(const float* x, bool trans, bool second, int64_t dim, int64_t k,
                        int64_t ld, int device) {
  // The reduction runs down each stored column (inner) or across the columns.
  const bool reduce_inner = trans != second;
  const int64_t len = reduce_inner ? k : dim, lines = reduce_inner ? dim : k;
  SplitOperand out{Tensor::Empty({3 * k * dim}, TensorOption().OnDevice(Device::Cuda(device))),
                   3 * k};
  const unsigned small_mask = second ? 0b010u : 0b001u;  // A: small big big; B: big small big
  float* o = out.pieces.data_ptr<float>();
  if (!reduce_inner) {
    launch_transpose<3>(x, ld, lines, len, o, small_mask);
  } else if (len % 4 == 0 && ld % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0) {
    split_columns_kernel<4><<<grid_for(lines * len, 4), kBlock, 0, current_stream()>>>(
        x, ld, lines, len, o, small_mask);
  } else {
    split_columns_kernel<1><<<grid_for(lines * len), kBlock, 0, current_stream()>>>(
        x, ld, lines, len, o, small_mask);
  }
  ZERO_CUDA_CHECK(cudaGetLastError());
  return out;
}

KMajor tf32_k_major(int64_t rows, int64_t in, int64_t out) {
  if (matmul_precision() != MatmulPrecision::kTf32 || rows < kKMajorMinRows ||
      rows < in || rows < out) {
    return KMajor::kNone;
  }
  const char* env = std::getenv("ZERO_TF32_WEIGHT_GRAD");
  const std::string choice = env == nullptr ? "auto" : env;
  if (choice == "nt") return KMajor::kNone;
  if (choice == "auto") {  // the smaller copy, for wide enough layers
    if (std::min(in, out) < kKMajorMinWidth) return KMajor::kNone;
    return out <= in ? KMajor::kGrad : KMajor::kInput;
  }
  if (choice == "g") return KMajor::kGrad;
  if (choice == "x") return KMajor::kInput;
  if (choice == "both") return KMajor::kBoth;
  ZERO_CHECK(false, "ZERO_TF32_WEIGHT_GRAD: expected nt, g, x, both or auto, got '", choice, "'");
  return KMajor::kNone;
}

bool tf32_copy_first_operand(bool trans_b, bool trans_a, int64_t n, int64_t m, int64_t k,
                             int64_t ldb) {
  static const bool enabled = [] {
    const char* env = std::getenv("ZERO_TF32_GRAD_X");
    const std::string choice = env == nullptr ? "auto" : env;
    ZERO_CHECK(choice == "auto" || choice == "nn", "ZERO_TF32_GRAD_X: expected auto or nn, got '",
               choice, "'");
    return choice == "auto";
  }();
  return enabled && matmul_precision() == MatmulPrecision::kTf32 && !trans_b && !trans_a &&
         ldb == n && 4 * n <= m && k >= 32 && std::min(n, k) < kKMajorMinWidth;
}

Tensor k_major_copy(const float* x, int64_t lines, int64_t len, int device) {
  Tensor out = Tensor::Empty({len, lines}, TensorOption().OnDevice(Device::Cuda(device)));
  if (out.numel() == 0) return out;
  launch_transpose<1>(x, len, lines, len, out.data_ptr<float>(), 0u);
  ZERO_CUDA_CHECK(cudaGetLastError());
  return out;
}

}  // namespace cuda

}  // namespace zero::ops
