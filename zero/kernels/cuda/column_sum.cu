// Column sums (column_sum.cuh) in two passes, without atomics: blocks of 8 warps each
// sum a chunk of rows for 32 groups of columns, a lane reading one 16-byte group of a
// row at a time (8 BF16 or 4 FP32 columns), and write FP32 partials [chunks, cols];
// one more launch of the same kernel sums the partials in one chunk.
//
// Why not the general sum (reduce.cu) or cuBLASLt's BGRADB epilogue: the general
// column sum reads one element a lane, 64 bytes a warp per BF16 row, and a bias
// gradient kept in FP32 for a 16-bit Linear first needs its [N, out] input widened to
// FP32; and beside the weight gradient's GEMM, BGRADB ran as a kernel of its own at
// about half the memory bandwidth (docs/speed_notes.md, item 46).
#include <algorithm>
#include <cstdint>

#include "zero/kernels/cuda/column_sum.cuh"
#include "zero/kernels/cuda/cuda_common.cuh"
#include "zero/kernels/dtype_dispatch.h"

namespace zero::ops::cuda {
namespace {

constexpr int kRowLanes = kBlock / 32;  // warps of a block, each on its own rows

// kW consecutive elements of T, moved in one access.
template <typename T, int kW>
struct alignas(sizeof(T) * kW) Columns {
  T v[kW];
};

// Block (kBlock threads) b.x covers the columns [32 kW b.x, 32 kW (b.x + 1)); b.y the
// rows [b.y rows_per_chunk, ...). Warp w takes rows w, w + 8, ... of the chunk; lane l
// columns 32 kW b.x + kW l + e. out is [gridDim.y, cols].
template <typename TIn, typename TOut, int kW>
__global__ void column_sums_kernel(const TIn* x, int64_t ld, TOut* out, int64_t rows,
                                   int64_t cols, int64_t rows_per_chunk) {
  __shared__ float share[kRowLanes][kW * 32];  // [warp][e * 32 + lane]: no bank conflict
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int64_t c0 = (static_cast<int64_t>(blockIdx.x) * 32 + lane) * kW;
  const int64_t begin = blockIdx.y * rows_per_chunk;
  const int64_t end = min(rows, begin + rows_per_chunk);
  float acc[kW] = {};
  if (c0 < cols) {
    for (int64_t r = begin + warp; r < end; r += kRowLanes) {
      const Columns<TIn, kW> g = *reinterpret_cast<const Columns<TIn, kW>*>(x + r * ld + c0);
#pragma unroll
      for (int e = 0; e < kW; ++e) acc[e] += static_cast<float>(g.v[e]);
    }
  }
#pragma unroll
  for (int e = 0; e < kW; ++e) share[warp][e * 32 + lane] = acc[e];
  __syncthreads();
  for (int t = threadIdx.x; t < kW * 32; t += kBlock) {
    float total = 0.0f;
#pragma unroll
    for (int w = 0; w < kRowLanes; ++w) total += share[w][t];
    const int64_t c = (static_cast<int64_t>(blockIdx.x) * 32 + t % 32) * kW + t / 32;
    if (c < cols) out[blockIdx.y * cols + c] = static_cast<TOut>(total);
  }
}

// Sums x [rows, cols] (row r at x + r ld) into out [cols], in at most `max_chunks` chunks
// of rows (then a second pass over the chunks' FP32 partials).
template <typename TIn, typename TOut>
void column_sums_t(const TIn* x, int64_t ld, TOut* out, int64_t rows, int64_t cols,
                   Device device, int64_t max_chunks) {
  constexpr int kWide = kPack<TIn>;
  const bool wide =
      cols % kWide == 0 && ld % kWide == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0;
  const int64_t per_block = 32 * (wide ? kWide : 1);
  const int64_t col_blocks = (cols + per_block - 1) / per_block;
  // About 1024 blocks in all, each chunk at least 32 rows.
  int64_t chunks = std::clamp<int64_t>(1024 / col_blocks, 1, std::max<int64_t>(1, rows / 32));
  chunks = std::min(chunks, max_chunks);
  const int64_t rows_per_chunk = (rows + chunks - 1) / chunks;
  chunks = (rows + rows_per_chunk - 1) / rows_per_chunk;
  const auto launch = [&](auto* dst) {
    using D = std::remove_pointer_t<decltype(dst)>;
    const dim3 grid(static_cast<unsigned>(col_blocks), static_cast<unsigned>(chunks));
    if (wide) {
      column_sums_kernel<TIn, D, kWide>
          <<<grid, kBlock, 0, current_stream()>>>(x, ld, dst, rows, cols, rows_per_chunk);
    } else {
      column_sums_kernel<TIn, D, 1>
          <<<grid, kBlock, 0, current_stream()>>>(x, ld, dst, rows, cols, rows_per_chunk);
    }
    ZERO_CUDA_LAUNCH_CHECK();
  };
  if (chunks == 1) return launch(out);
  const Tensor partials = Tensor::Empty({chunks, cols}, TensorOption().OnDevice(device));
  launch(partials.data_ptr<float>());
  column_sums_t(partials.data_ptr<float>(), cols, out, chunks, cols, device, /*max_chunks=*/1);
}

}  // namespace

void column_sums(const Tensor& x, const Tensor& out) {
  ZERO_ASSERT(x.dim() == 2 && x.stride(1) == 1 && x.stride(0) >= x.size(1) &&
                  out.is_contiguous() && out.numel() == x.size(1) &&
                  (out.dtype() == x.dtype() || out.dtype() == DataType::F32),
              "column_sums: expected x [rows, cols] with rows of unit stride and contiguous "
              "out [cols] in x's dtype or F32");
  const int64_t rows = x.size(0), cols = x.size(1), ld = x.stride(0);
  if (cols == 0) return;
  set_device(x);
  dispatch_dtype<FloatTypes>(x.dtype(), "column_sums", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (rows == 0) {
      ZERO_CUDA_CHECK(cudaMemsetAsync(out.data(), 0, out.numel() * dtype_size(out.dtype()),
                                      current_stream()));
    } else if (out.dtype() == DataType::F32) {
      column_sums_t(x.data_ptr<T>(), ld, out.data_ptr<float>(), rows, cols, x.device(), rows);
    } else {
      column_sums_t(x.data_ptr<T>(), ld, out.data_ptr<T>(), rows, cols, x.device(), rows);
    }
  });
}

}  // namespace zero::ops::cuda
