// CUDA sums. A contiguous input is viewed as [outer, n, inner] with the reduced
// dimension in the middle:
//  - inner == 1 (a row reduction, e.g. over the last dimension): one block per row,
//    per-thread partials, then a CUB BlockReduce;
//  - inner > 1 (a column reduction, e.g. a bias gradient over rows): threads of a
//    block walk adjacent columns (coalesced) and split the rows; when there are
//    few columns the rows are also split across blocks, and a second pass sums
//    the per-block partials. No atomics, so results are deterministic.
// Sums of everything go through cub::DeviceReduce with a workspace from the cache.
#include <cub/cub.cuh>

#include "zero/kernels/cuda/cuda_common.cuh"
#include "zero/kernels/cuda/cuda_ops.h"

namespace zero::ops {
namespace {

using cuda::kBlock;

__global__ void row_sum_kernel(const float* x, float* out, int64_t n) {
  using BlockReduce = cub::BlockReduce<float, kBlock>;
  __shared__ typename BlockReduce::TempStorage temp;
  const float* row = x + blockIdx.x * n;
  float acc = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += kBlock) acc += row[i];
  const float total = BlockReduce(temp).Sum(acc);
  if (threadIdx.x == 0) out[blockIdx.x] = total;
}

// Block (32, 8): x over 32 adjacent columns, y over rows. blockIdx.z picks a chunk
// of `rows_per_chunk` rows; the result for chunk z goes to out[z][outer][inner].
constexpr int kColsPerBlock = 32, kRowSplit = 8;

__global__ void column_sum_kernel(const float* x, float* out, int64_t outer, int64_t n,
                                  int64_t inner, int64_t rows_per_chunk) {
  __shared__ float partial[kRowSplit][kColsPerBlock + 1];  // +1: no bank conflicts
  const int64_t col = blockIdx.x * static_cast<int64_t>(kColsPerBlock) + threadIdx.x;
  const int64_t o = blockIdx.y;
  const int64_t row_begin = blockIdx.z * rows_per_chunk;
  const int64_t row_end = min(n, row_begin + rows_per_chunk);
  float acc = 0.0f;
  if (col < inner) {
    for (int64_t r = row_begin + threadIdx.y; r < row_end; r += kRowSplit) {
      acc += x[(o * n + r) * inner + col];
    }
  }
  partial[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && col < inner) {
    float total = 0.0f;
    for (int k = 0; k < kRowSplit; ++k) total += partial[k][threadIdx.x];
    out[(blockIdx.z * outer + o) * inner + col] = total;
  }
}

// Sums contiguous x viewed as [outer, n, inner] over n into out [outer, inner].
void sum_middle(const float* x, float* out, int64_t outer, int64_t n, int64_t inner,
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

Tensor contiguous(const Tensor& x) {
  if (x.is_contiguous()) return x;
  Tensor c = Tensor::Empty(x.sizes(), x.options());
  copy_cuda(x, c);
  return c;
}

}  // namespace

void sum_cuda(const Tensor& x, int dim, const Tensor& out) {
  if (out.numel() == 0) return;
  cuda::set_device(x);
  const Tensor xc = contiguous(x);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; ++d) outer *= x.size(d);
  for (int d = dim + 1; d < x.dim(); ++d) inner *= x.size(d);
  const Tensor dst = out.is_contiguous() ? out : Tensor::Empty(out.sizes(), out.options());
  if (x.size(dim) == 0) {
    fill_cuda(dst, 0.0f);
  } else {
    sum_middle(xc.data_ptr<float>(), dst.data_ptr<float>(), outer, x.size(dim), inner, x.device());
  }
  if (!dst.SharesStorage(out)) copy_cuda(dst, out);
}

void sum_all_cuda(const Tensor& x, const Tensor& out) {
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

}  // namespace zero::ops
