// CUDA sums. A contiguous input is viewed as [outer, n, inner] with the reduced
// dimension in the middle:
//  - inner == 1 (a row reduction, e.g. over the last dimension): one block per row,
//    per-thread partials, then a CUB BlockReduce;
//  - inner > 1 (a column reduction, e.g. a bias gradient over rows): threads of a
//    block walk adjacent columns (coalesced) and split the rows; when there are
//    few columns the rows are also split across blocks, and a second pass sums
//    the per-block partials. No atomics, so results are deterministic.
// Sums of everything go through cub::DeviceReduce with a workspace from the cache.
// Means scale the sum on the device; maxima with their index use one thread per
// output (they are not on any hot path) and a two-level pass for the whole tensor.
#include <cub/cub.cuh>

#include <type_traits>

#include "zero/kernels/cuda/cuda_common.cuh"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/dtype_dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {
namespace {

using cuda::kBlock;

// Every kernel loads its element type TIn, accumulates in float and stores TOut: the
// partial sums of a two-pass reduction stay float whatever the tensors' dtype.
template <typename TIn, typename TOut>
__global__ void row_sum_kernel(const TIn* x, TOut* out, int64_t n) {
  using BlockReduce = cub::BlockReduce<float, kBlock>;
  __shared__ typename BlockReduce::TempStorage temp;
  const TIn* row = x + blockIdx.x * n;
  float acc = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += kBlock) acc += static_cast<float>(row[i]);
  const float total = BlockReduce(temp).Sum(acc);
  if (threadIdx.x == 0) out[blockIdx.x] = static_cast<TOut>(total);
}

// Block (32, 8): x over 32 adjacent columns, y over rows. blockIdx.z picks a chunk
// of `rows_per_chunk` rows; the result for chunk z goes to out[z][outer][inner].
constexpr int kColsPerBlock = 32, kRowSplit = 8;

template <typename TIn, typename TOut>
__global__ void column_sum_kernel(const TIn* x, TOut* out, int64_t outer, int64_t n,
                                  int64_t inner, int64_t rows_per_chunk) {
  __shared__ float partial[kRowSplit][kColsPerBlock + 1];  // +1: no bank conflicts
  const int64_t col = blockIdx.x * static_cast<int64_t>(kColsPerBlock) + threadIdx.x;
  const int64_t o = blockIdx.y;
  const int64_t row_begin = blockIdx.z * rows_per_chunk;
  const int64_t row_end = min(n, row_begin + rows_per_chunk);
  float acc = 0.0f;
  if (col < inner) {
    for (int64_t r = row_begin + threadIdx.y; r < row_end; r += kRowSplit) {
      acc += static_cast<float>(x[(o * n + r) * inner + col]);
    }
  }
  partial[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && col < inner) {
    float total = 0.0f;
    for (int k = 0; k < kRowSplit; ++k) total += partial[k][threadIdx.x];
    out[(blockIdx.z * outer + o) * inner + col] = static_cast<TOut>(total);
  }
}

// Sums contiguous x viewed as [outer, n, inner] over n into out [outer, inner].
template <typename TIn, typename TOut>
void sum_middle(const TIn* x, TOut* out, int64_t outer, int64_t n, int64_t inner,
                Device device) {
  if (inner == 1) {
    row_sum_kernel<<<static_cast<unsigned>(outer), kBlock, 0, cuda::current_stream()>>>(x, out, n);
    ZERO_CUDA_LAUNCH_CHECK();
    return;
  }
  const int64_t col_blocks = (inner + kColsPerBlock - 1) / kColsPerBlock;
  // Enough chunks to give the GPU ~1024 blocks, each chunk at least 64 rows.
  int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(n / 64, 1024 / std::max<int64_t>(1, col_blocks * outer)));
  const int64_t rows_per_chunk = (n + chunks - 1) / chunks;
  chunks = (n + rows_per_chunk - 1) / rows_per_chunk;
  const dim3 block(kColsPerBlock, kRowSplit);
  const dim3 grid(static_cast<unsigned>(col_blocks), static_cast<unsigned>(outer),
                  static_cast<unsigned>(chunks));
  if (chunks == 1) {
    column_sum_kernel<<<grid, block, 0, cuda::current_stream()>>>(x, out, outer, n, inner, rows_per_chunk);
    ZERO_CUDA_LAUNCH_CHECK();
    return;
  }
  Tensor partials = Tensor::Empty({chunks, outer, inner}, TensorOption().OnDevice(device));
  column_sum_kernel<<<grid, block, 0, cuda::current_stream()>>>(x, partials.data_ptr<float>(), outer, n, inner, rows_per_chunk);
  ZERO_CUDA_LAUNCH_CHECK();
  sum_middle(partials.data_ptr<float>(), out, 1, chunks, outer * inner, device);  // second pass
}

// True when (v, i) should replace (bv, bi) as the maximum: NaN beats numbers (it
// propagates, as in PyTorch and the CPU kernel), larger beats smaller, and among
// equals the earlier index wins.
__device__ bool max_better(float v, int64_t i, float bv, int64_t bi) {
  if (isnan(v) != isnan(bv)) return isnan(v);
  if (!isnan(v) && v != bv) return v > bv;
  return i < bi;
}

// One thread per output of [outer, inner]: max over n and the first index reaching it.
template <typename T>
__global__ void max_middle_kernel(const T* x, T* values, int32_t* indices, int64_t outer,
                                  int64_t n, int64_t inner) {
  const int64_t o = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (o >= outer * inner) return;
  const T* p = x + (o / inner) * n * inner + o % inner;
  float best = static_cast<float>(p[0]);
  int32_t arg = 0;
  for (int64_t k = 1; k < n; ++k) {
    const float v = static_cast<float>(p[k * inner]);
    if (max_better(v, k, best, arg)) {
      best = v;
      arg = static_cast<int32_t>(k);
    }
  }
  values[o] = static_cast<T>(best);
  indices[o] = arg;
}

// Stage 1 of max_all: each block finds the max of its chunk (first index on ties).
template <typename T>
__global__ void max_chunks_kernel(const T* x, int64_t n, int64_t chunk, float* values,
                                  int64_t* indices) {
  __shared__ float best_v[kBlock];
  __shared__ int64_t best_i[kBlock];
  const int64_t begin = blockIdx.x * chunk, end = min(n, begin + chunk);
  float bv = -INFINITY;
  int64_t bi = begin < n ? begin : 0;
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const float v = static_cast<float>(x[i]);
    if (max_better(v, i, bv, bi)) {
      bv = v;
      bi = i;
    }
  }
  best_v[threadIdx.x] = bv;
  best_i[threadIdx.x] = bi;
  __syncthreads();
  for (int stride = kBlock / 2; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) {
      const float ov = best_v[threadIdx.x + stride];
      const int64_t oi = best_i[threadIdx.x + stride];
      if (max_better(ov, oi, best_v[threadIdx.x], best_i[threadIdx.x])) {
        best_v[threadIdx.x] = ov;
        best_i[threadIdx.x] = oi;
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    values[blockIdx.x] = best_v[0];
    indices[blockIdx.x] = best_i[0];
  }
}

// Stage 2: one thread scans the per-block results in order.
template <typename T>
__global__ void max_final_kernel(const float* values, const int64_t* indices, int64_t blocks,
                                 T* value, int32_t* index) {
  float bv = values[0];
  int64_t bi = indices[0];
  for (int64_t b = 1; b < blocks; ++b) {
    if (max_better(values[b], indices[b], bv, bi)) {
      bv = values[b];
      bi = indices[b];
    }
  }
  *value = static_cast<T>(bv);
  *index = static_cast<int32_t>(bi);
}

// Backward of max over the middle of [outer, n, inner]: one thread per element of
// grad_x, which gets its column's gradient where k is the saved index, else 0.
template <typename T>
__global__ void max_backward_kernel(const T* grad_values, const int32_t* indices, T* grad_x,
                                    int64_t outer, int64_t n, int64_t inner) {
  const int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e >= outer * n * inner) return;
  const int64_t k = (e / inner) % n, column = (e / (n * inner)) * inner + e % inner;
  grad_x[e] = indices[column] == k ? grad_values[column] : T(0.0f);
}

template <typename T>
__global__ void scale_kernel(T* x, int64_t n, float s) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) x[i] = static_cast<T>(static_cast<float>(x[i]) * s);
}

// ---------------------------------------------------------------- launchers

template <typename T>
void sum_typed(const Tensor& x, int dim, const Tensor& out) {
  if (out.numel() == 0) return;
  cuda::set_device(x);
  const Tensor xc = contiguous(x);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; ++d) outer *= x.size(d);
  for (int d = dim + 1; d < x.dim(); ++d) inner *= x.size(d);
  const Tensor dst = contiguous_output(out);
  if (x.size(dim) == 0) {
    fill(dst, 0.0f);
  } else {
    sum_middle(xc.data_ptr<T>(), dst.data_ptr<T>(), outer, x.size(dim), inner, x.device());
  }
  if (!dst.SharesStorage(out)) copy(dst, out);
}

template <typename T>
void sum_all_typed(const Tensor& x, const Tensor& out) {
  if constexpr (!std::is_same_v<T, float>) {
    // A 16-bit input is widened to float (exactly), summed there, and the one result
    // rounded back: cub's sum then accumulates in float, as every other sum here does.
    const TensorOption f32 = TensorOption().OnDevice(x.device());
    const Tensor wide = Tensor::Empty(x.sizes(), f32), total = Tensor::Empty(out.sizes(), f32);
    convert(x, wide);
    sum_all_typed<float>(wide, total);
    convert(total, out);
    return;
  }
  cuda::set_device(x);
  const Tensor xc = contiguous(x);
  const int n = static_cast<int>(xc.numel());
  ZERO_CHECK(xc.numel() == n, "sum: more than 2^31 elements is not supported on CUDA yet");
  size_t temp_bytes = 0;
  ZERO_CUDA_CHECK(cub::DeviceReduce::Sum(nullptr, temp_bytes, xc.data_ptr<float>(),
                                         out.data_ptr<float>(), n, cuda::current_stream()));
  // The workspace comes from the caching allocator, so repeated sums never cudaMalloc.
  Tensor temp = Tensor::Empty({static_cast<int64_t>((temp_bytes + 3) / 4)}, xc.options());
  ZERO_CUDA_CHECK(cub::DeviceReduce::Sum(temp.data(), temp_bytes, xc.data_ptr<float>(),
                                         out.data_ptr<float>(), n, cuda::current_stream()));
}

template <typename T>
void mean_typed(const Tensor& x, int dim, const Tensor& out) {
  sum_typed<T>(x, dim, out);
  const int64_t n = out.numel();
  if (n == 0 || x.size(dim) == 0) return;
  scale_kernel<<<cuda::grid_for(n), kBlock, 0, cuda::current_stream()>>>(
      out.data_ptr<T>(), n, 1.0f / static_cast<float>(x.size(dim)));
  ZERO_CUDA_LAUNCH_CHECK();
}

template <typename T>
void mean_all_typed(const Tensor& x, const Tensor& out) {
  sum_all_typed<T>(x, out);
  scale_kernel<<<1, 1, 0, cuda::current_stream()>>>(out.data_ptr<T>(), 1,
                                                    1.0f / static_cast<float>(x.numel()));
  ZERO_CUDA_LAUNCH_CHECK();
}

template <typename T>
void max_typed(const Tensor& x, int dim, const Tensor& values, const Tensor& indices) {
  cuda::set_device(x);
  const Tensor xc = contiguous(x);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; ++d) outer *= x.size(d);
  for (int d = dim + 1; d < x.dim(); ++d) inner *= x.size(d);
  const Tensor v = contiguous_output(values);
  const Tensor i = contiguous_output(indices);
  if (outer * inner > 0) {
    max_middle_kernel<<<cuda::grid_for(outer * inner), kBlock, 0, cuda::current_stream()>>>(
        xc.data_ptr<T>(), v.data_ptr<T>(), i.data_ptr<int32_t>(), outer, x.size(dim), inner);
    ZERO_CUDA_LAUNCH_CHECK();
  }
  if (!v.SharesStorage(values)) copy(v, values);
  if (!i.SharesStorage(indices)) copy(i, indices);
}

template <typename T>
void max_all_typed(const Tensor& x, const Tensor& value, const Tensor& index) {
  cuda::set_device(x);
  const Tensor xc = contiguous(x);
  const int64_t n = xc.numel();
  const int64_t blocks = std::min<int64_t>(1024, (n + kBlock - 1) / kBlock);
  const int64_t chunk = (n + blocks - 1) / blocks;
  Tensor vals = Tensor::Empty({blocks}, xc.options().WithDtype(DataType::F32));
  Tensor idx = Tensor::Empty({2 * blocks}, xc.options().WithDtype(DataType::I32));  // int64 storage
  max_chunks_kernel<<<static_cast<unsigned>(blocks), kBlock, 0, cuda::current_stream()>>>(
      xc.data_ptr<T>(), n, chunk, vals.data_ptr<float>(), reinterpret_cast<int64_t*>(idx.data()));
  ZERO_CUDA_LAUNCH_CHECK();
  max_final_kernel<<<1, 1, 0, cuda::current_stream()>>>(
      vals.data_ptr<float>(), reinterpret_cast<const int64_t*>(idx.data()), blocks,
      value.data_ptr<T>(), index.data_ptr<int32_t>());
  ZERO_CUDA_LAUNCH_CHECK();
}

template <typename T>
void max_backward_typed(const Tensor& grad_values, const Tensor& indices, int dim,
                        const Tensor& grad_x) {
  if (grad_x.numel() == 0) return;
  cuda::set_device(grad_x);
  const Tensor g = contiguous(grad_values), idx = contiguous(indices);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; ++d) outer *= grad_x.size(d);
  for (int d = dim + 1; d < grad_x.dim(); ++d) inner *= grad_x.size(d);
  const Tensor dst = contiguous_output(grad_x);
  max_backward_kernel<<<cuda::grid_for(grad_x.numel()), kBlock, 0, cuda::current_stream()>>>(
      g.data_ptr<T>(), idx.data_ptr<int32_t>(), dst.data_ptr<T>(), outer, grad_x.size(dim),
      inner);
  ZERO_CUDA_LAUNCH_CHECK();
  if (!dst.SharesStorage(grad_x)) copy(dst, grad_x);
}

// ---------------------------------------------------------------- entry points
// Each picks the instantiation for the input's dtype (dtype_dispatch.h).

void sum_cuda(const Tensor& x, int dim, const Tensor& out) {
  dispatch_dtype<FloatTypes>(x.dtype(), "sum", [&](auto tag) {
    sum_typed<typename decltype(tag)::type>(x, dim, out);
  });
}

void sum_all_cuda(const Tensor& x, const Tensor& out) {
  dispatch_dtype<FloatTypes>(x.dtype(), "sum", [&](auto tag) {
    sum_all_typed<typename decltype(tag)::type>(x, out);
  });
}

void mean_cuda(const Tensor& x, int dim, const Tensor& out) {
  dispatch_dtype<FloatTypes>(x.dtype(), "mean", [&](auto tag) {
    mean_typed<typename decltype(tag)::type>(x, dim, out);
  });
}

void mean_all_cuda(const Tensor& x, const Tensor& out) {
  dispatch_dtype<FloatTypes>(x.dtype(), "mean", [&](auto tag) {
    mean_all_typed<typename decltype(tag)::type>(x, out);
  });
}

void max_cuda(const Tensor& x, int dim, const Tensor& values, const Tensor& indices) {
  dispatch_dtype<FloatTypes>(x.dtype(), "max", [&](auto tag) {
    max_typed<typename decltype(tag)::type>(x, dim, values, indices);
  });
}

void max_all_cuda(const Tensor& x, const Tensor& value, const Tensor& index) {
  dispatch_dtype<FloatTypes>(x.dtype(), "max", [&](auto tag) {
    max_all_typed<typename decltype(tag)::type>(x, value, index);
  });
}

void max_backward_cuda(const Tensor& grad_values, const Tensor& indices, int dim,
                       const Tensor& grad_x) {
  dispatch_dtype<FloatTypes>(grad_x.dtype(), "max backward", [&](auto tag) {
    max_backward_typed<typename decltype(tag)::type>(grad_values, indices, dim, grad_x);
  });
}

}  // namespace

ZERO_REGISTER_KERNEL(sum, kCuda, sum_cuda);
ZERO_REGISTER_KERNEL(sum_all, kCuda, sum_all_cuda);
ZERO_REGISTER_KERNEL(mean, kCuda, mean_cuda);
ZERO_REGISTER_KERNEL(mean_all, kCuda, mean_all_cuda);
ZERO_REGISTER_KERNEL(max, kCuda, max_cuda);
ZERO_REGISTER_KERNEL(max_all, kCuda, max_all_cuda);
ZERO_REGISTER_KERNEL(max_backward, kCuda, max_backward_cuda);

}  // namespace zero::ops
