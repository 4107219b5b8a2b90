// Column sums (column_sum.cuh) in two passes, without atomics: blocks of 8 warps each
// sum a chunk of rows for 32 groups of columns, a lane reading one 16-byte group of a
// row at a time (8 BF16 or 4 FP32 columns), and write FP32 partials [chunks, cols];
// one more launch, a lane a column and 32 warps a block, sums the partials. A matrix of
// few rows takes that second kind of launch alone.
//
// Why not the general sum (reduce.cu): it reads one element a lane, 64 bytes a warp per
// BF16 row, and a bias gradient kept in FP32 for a 16-bit Linear first needs its [N, out]
// input widened to FP32. For 16-bit operands cuBLASLt's BGRADB epilogue ran as a kernel
// of its own after the weight gradient's GEMM; this one takes about as long (12.8 us
// for GPT-2's [8192, 768] in BF16, docs/speed_notes.md, item 46) and serves the other
// column sums as well.
//
// Each pass is short, so its time is the loads' latency more than their bytes: a warp
// keeps up to 8 rows' loads in flight, and the second pass (256 partial rows of a
// LayerNorm's or the GeLU pass's sums, or a chunked sum's 128) spreads them over 32
// warps, 8 rows a warp, one round of loads (item 68).
#include <algorithm>
#include <cstdint>

#include "zero/kernels/cuda/column_sum.cuh"
#include "zero/kernels/cuda/cuda_common.cuh"
#include "zero/kernels/dtype_dispatch.h"

namespace zero::ops::cuda {
namespace {

// kW consecutive elements of T, moved in one access.
template <typename T, int kW>
struct alignas(sizeof(T) * kW) Columns {
  T v[kW];
};

// Where the sums go: the columns [0, end[0]) to p[0], [end[0], end[1]) to p[1] and
// [end[1], end[2]) to p[2], each from its own first element; or, for the partials of
// several chunks, p[0] as [chunks, cols] with end[0] = end[1] = end[2] = cols.
template <typename T>
struct Outs {
  T* p[3];
  int64_t end[3];
};

// Block (32 kWarps threads) b.x covers the columns [32 kW b.x, 32 kW (b.x + 1)); b.y the
// rows [b.y rows_per_chunk, ...). Warp w takes rows w, w + kWarps, ... of the chunk; lane
// l columns 32 kW b.x + kW l + e.
template <typename TIn, typename TOut, int kW, int kWarps>
__global__ void __launch_bounds__(32 * kWarps)
column_sums_kernel(const TIn* x, int64_t ld, Outs<TOut> out, int64_t rows, int64_t cols,
                   int64_t rows_per_chunk) {
  __shared__ float share[kWarps][kW * 32];  // [warp][e * 32 + lane]: no bank conflict
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int64_t c0 = (static_cast<int64_t>(blockIdx.x) * 32 + lane) * kW;
  const int64_t begin = blockIdx.y * rows_per_chunk;
  const int64_t end = min(rows, begin + rows_per_chunk);
  float acc[kW] = {};
  if (c0 < cols) {
#pragma unroll 8
    for (int64_t r = begin + warp; r < end; r += kWarps) {
      const Columns<TIn, kW> g = *reinterpret_cast<const Columns<TIn, kW>*>(x + r * ld + c0);
#pragma unroll
      for (int e = 0; e < kW; ++e) acc[e] += static_cast<float>(g.v[e]);
    }
  }
#pragma unroll
  for (int e = 0; e < kW; ++e) share[warp][e * 32 + lane] = acc[e];
  __syncthreads();
  for (int t = threadIdx.x; t < kW * 32; t += 32 * kWarps) {
    float total = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) total += share[w][t];
    const int64_t c = (static_cast<int64_t>(blockIdx.x) * 32 + t % 32) * kW + t / 32;
    if (c < out.end[0]) {
      out.p[0][blockIdx.y * cols + c] = static_cast<TOut>(total);
    } else if (c < out.end[1]) {
      out.p[1][c - out.end[0]] = static_cast<TOut>(total);
    } else if (c < out.end[2]) {
      out.p[2][c - out.end[1]] = static_cast<TOut>(total);
    }
  }
}

template <typename TIn, typename TOut, int kW, int kWarps = kBlock / 32>
void launch(const TIn* x, int64_t ld, Outs<TOut> out, int64_t rows, int64_t cols,
            int64_t chunks) {
  const int64_t rows_per_chunk = (rows + chunks - 1) / chunks;
  const dim3 grid(static_cast<unsigned>((cols + 32 * kW - 1) / (32 * kW)),
                  static_cast<unsigned>((rows + rows_per_chunk - 1) / rows_per_chunk));
  column_sums_kernel<TIn, TOut, kW, kWarps><<<grid, 32 * kWarps, 0, current_stream()>>>(
      x, ld, out, rows, cols, rows_per_chunk);
  ZERO_CUDA_LAUNCH_CHECK();
}

// Up to this many rows are summed in one pass, a lane a column: the blocks of the
// 16-byte path would be too few to hide the loads' latency (a second pass over 256
// partials in 6 blocks took 8 us).
constexpr int64_t kOnePassRows = 256;

// Sums x [rows, cols] (row r at x + r ld) into out [cols]: in one pass for few rows,
// otherwise over at most 128 chunks of rows (in 16-byte groups where the rows allow),
// then the chunks' FP32 partials in one pass; `out` says where each column's sum goes.
template <typename TIn, typename TOut>
void column_sums_t(const TIn* x, int64_t ld, Outs<TOut> out, int64_t rows, int64_t cols,
                   Device device) {
  if (rows <= kOnePassRows) return launch<TIn, TOut, 1, 32>(x, ld, out, rows, cols, 1);
  constexpr int kWide = kPack<TIn>;
  const bool wide =
      cols % kWide == 0 && ld % kWide == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0;
  const int64_t per_block = 32 * (wide ? kWide : 1);
  // About 512 blocks, each chunk at least 32 rows (4 a warp), at most 128 chunks.
  const int64_t col_blocks = (cols + per_block - 1) / per_block;
  const int64_t wanted =
      std::clamp<int64_t>(512 / col_blocks, 1, std::min<int64_t>(128, rows / 32));
  // Rows split into `wanted` chunks of whole rows may fill fewer (5000 rows in 128 chunks
  // of 40 fill 125): the partials have a row for each chunk that has rows.
  const int64_t rows_per_chunk = (rows + wanted - 1) / wanted;
  const int64_t chunks = (rows + rows_per_chunk - 1) / rows_per_chunk;
  if (chunks == 1) return launch<TIn, TOut, 1, 32>(x, ld, out, rows, cols, 1);
  const Tensor partials = Tensor::Empty({chunks, cols}, TensorOption().OnDevice(device));
  const Outs<float> rows_out{{partials.data_ptr<float>()}, {cols, cols, cols}};
  if (wide) {
    launch<TIn, float, kWide>(x, ld, rows_out, rows, cols, chunks);
  } else {
    launch<TIn, float, 1>(x, ld, rows_out, rows, cols, chunks);
  }
  column_sums_t(partials.data_ptr<float>(), cols, out, chunks, cols, device);
}

}  // namespace

void column_sums(const Tensor& x, const Tensor& out, const Tensor& out2, const Tensor& out3) {
  const int64_t first = out.numel(), second = first + (out2.defined() ? out2.numel() : 0);
  const int64_t third = second + (out3.defined() ? out3.numel() : 0);
  const auto fits = [&](const Tensor& o) {
    return !o.defined() || (o.is_contiguous() && o.dtype() == out.dtype());
  };
  ZERO_ASSERT(x.dim() == 2 && x.stride(1) == 1 && x.stride(0) >= x.size(1) &&
                  out.is_contiguous() && third == x.size(1) && fits(out2) && fits(out3) &&
                  (out2.defined() || !out3.defined()),
              "column_sums: expected x [rows, cols] with rows of unit stride and contiguous "
              "out [cols], or outputs of one dtype with cols elements together");
  const int64_t rows = x.size(0), cols = x.size(1), ld = x.stride(0);
  if (cols == 0) return;
  set_device(x);
  if (rows == 0) {
    for (const Tensor& o : {out, out2, out3}) {
      if (!o.defined() || o.numel() == 0) continue;
      ZERO_CUDA_CHECK(cudaMemsetAsync(o.data(), 0, o.numel() * dtype_size(o.dtype()),
                                      current_stream()));
    }
    return;
  }
  dispatch_dtype<FloatTypes>(x.dtype(), "column_sums", [&](auto in_tag) {
    dispatch_dtype<FloatTypes>(out.dtype(), "column_sums", [&](auto out_tag) {
      using TIn = typename decltype(in_tag)::type;
      using TOut = typename decltype(out_tag)::type;
      const auto ptr = [](const Tensor& o) { return o.defined() ? o.data_ptr<TOut>() : nullptr; };
      const Outs<TOut> where{{out.data_ptr<TOut>(), ptr(out2), ptr(out3)}, {first, second, third}};
      column_sums_t(x.data_ptr<TIn>(), ld, where, rows, cols, x.device());
    });
  });
}

}  // namespace zero::ops::cuda
