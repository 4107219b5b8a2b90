// CUDA LayerNorm over the last dimension, one warp per row: a row of a GPT (a few
// hundred to a few thousand floats) is too short to keep a block of threads busy, and a
// warp sums it with shuffles alone, no shared memory and no __syncthreads. Each pass
// over the row after the first reads it from L1. The forward saves each row's mean and
// 1/std; the backward recomputes x-hat from them. grad_weight and grad_bias are column
// sums over rows, done in chunks and then summed over the chunks (no atomics: the
// result is the same on every run).
//
// For rows of up to 1024 floats the backward is one pass: each warp takes a few rows,
// writes their grad_x and keeps its columns' shares of the two column sums in
// registers, and the block adds its warps' shares in a fixed order. Wider rows take
// two kernels, the second reading g and x again for the column sums. Either way grad_x
// may take in a gradient that x already had (the residual stream's, Note [Sums made by
// the op] in autograd/engine.cpp) as it is written.
//
// Every kernel is templated on the element type T of x, y, weight, bias and the
// gradients (f32, bf16, f16): it loads T into float and accumulates, normalises and
// sums columns in FP32, rounding once on each store. mean, rstd and the column partials
// are always FP32; grad_weight and grad_bias receive the FP32 totals in their dtype.
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <type_traits>

#include "zero/kernels/cuda/block_reduce.cuh"
#include "zero/kernels/cuda/column_sum.cuh"
#include "zero/kernels/cuda/cuda_common.cuh"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/dtype_dispatch.h"
#include "zero/kernels/tensor_ops.h"
#include "zero/kernels/views.h"

namespace zero::ops {
namespace {

using cuda::kBlock;
using cuda::warp_sum;  // block_reduce.cuh: every lane gets the warp's sum

constexpr int kRowsPerBlock = kBlock / 32;  // one warp per row

// Element i of p as a float (exact for every T).
template <typename T>
__device__ inline float load(const T* p, int64_t i) {
  return static_cast<float>(p[i]);
}

// `own` + `add` rounded to T, `own` already rounded to T, as the separate addition of a
// gradient to a gradient has it (Note [Sums made by the op] in autograd/engine.cpp).
// __fadd_rn is never fused with the product that made `own` into one multiply-add.
template <typename T>
__device__ inline T plus(T own, float add) {
  return static_cast<T>(__fadd_rn(static_cast<float>(own), add));
}

// kW consecutive elements of T, moved as one access of kW * sizeof(T) bytes.
template <typename T, int kW>
struct alignas(sizeof(T) * kW) Group {
  T v[kW];
};

// Each lane reads kW consecutive values at a time (one 16-byte access in BF16 where the
// row allows it; kW = 1 otherwise), the row's groups lane, lane + 32, ...
template <typename T, int kW>
__global__ void layer_norm_forward_kernel(const T* x, const T* w, const T* b, float eps, T* y,
                                          float* mean_out, float* rstd_out, int64_t N,
                                          int64_t C) {
  using G = Group<T, kW>;
  const int64_t r = blockIdx.x * static_cast<int64_t>(kRowsPerBlock) + threadIdx.x / 32;
  if (r >= N) return;  // a whole warp leaves together
  const int lane = threadIdx.x % 32;
  const T* row = x + r * C;
  const auto group = [](const T* p, int64_t c0) { return *reinterpret_cast<const G*>(p + c0); };
  float s = 0.0f;
  for (int64_t c0 = lane * kW; c0 < C; c0 += 32 * kW) {
    const G a = group(row, c0);
#pragma unroll
    for (int e = 0; e < kW; ++e) s += static_cast<float>(a.v[e]);
  }
  const float mean = warp_sum(s) / C;
  float v = 0.0f;  // second pass over the (cached) row: no cancellation as in E[x^2]-E[x]^2
  for (int64_t c0 = lane * kW; c0 < C; c0 += 32 * kW) {
    const G a = group(row, c0);
#pragma unroll
    for (int e = 0; e < kW; ++e) {
      const float d = static_cast<float>(a.v[e]) - mean;
      v += d * d;
    }
  }
  const float rstd = rsqrtf(warp_sum(v) / C + eps);
  for (int64_t c0 = lane * kW; c0 < C; c0 += 32 * kW) {
    const G a = group(row, c0), gw = group(w, c0), gb = group(b, c0);
    G out;
#pragma unroll
    for (int e = 0; e < kW; ++e) {
      out.v[e] = static_cast<T>((static_cast<float>(a.v[e]) - mean) * rstd *
                                    static_cast<float>(gw.v[e]) +
                                static_cast<float>(gb.v[e]));
    }
    *reinterpret_cast<G*>(y + r * C + c0) = out;
  }
  if (lane == 0) {
    mean_out[r] = mean;
    rstd_out[r] = rstd;
  }
}

// Whether every tensor's data is aligned to `bytes` (each row then is too when C is a
// multiple of the group).
inline bool all_aligned(std::initializer_list<const Tensor*> tensors, size_t bytes) {
  for (const Tensor* t : tensors) {
    if (reinterpret_cast<uintptr_t>(t->data()) % bytes != 0) return false;
  }
  return true;
}

// grad_x = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)), dxhat = g * w,
// plus add where it is not null.
template <typename T>
__global__ void layer_norm_grad_x_kernel(const T* g, const T* x, const T* w, const float* mean,
                                         const float* rstd, const T* add, T* gx, int64_t N,
                                         int64_t C) {
  const int64_t r = blockIdx.x * static_cast<int64_t>(kRowsPerBlock) + threadIdx.x / 32;
  if (r >= N) return;
  const int lane = threadIdx.x % 32;
  const int64_t base = r * C;
  const float mu = mean[r], rs = rstd[r];
  float s1 = 0.0f, s2 = 0.0f;
  for (int64_t i = lane; i < C; i += 32) {
    const float dxhat = load(g, base + i) * load(w, i);
    s1 += dxhat;
    s2 += dxhat * (load(x, base + i) - mu) * rs;
  }
  s1 = warp_sum(s1) / C;
  s2 = warp_sum(s2) / C;
  for (int64_t i = lane; i < C; i += 32) {
    const float xhat = (load(x, base + i) - mu) * rs;
    const T own = static_cast<T>(rs * (load(g, base + i) * load(w, i) - s1 - xhat * s2));
    gx[base + i] = add != nullptr ? plus(own, load(add, base + i)) : own;
  }
}

// The fused backward for C <= 32 * kCols: block b's warps take rows b * kRowsPerBlock *
// kFusedRowsPerWarp .. in turn (warp w every kRowsPerBlock-th row), write grad_x as
// layer_norm_grad_x_kernel does, and sum g * xhat and g for the columns they hold. The
// block's warps then add their sums in warp order into partial[b][0 or 1][c]. A lane
// holds the kW-wide groups lane, lane + 32, ... of a row, each read and written in one
// access, and the column sums build up in shared memory rather than in 2 * kCols
// registers, so that two blocks share an SM: with kW = 1 (one 2-byte load per value in
// BF16) and one block an SM (near 190 registers a thread), the kernel ran at a quarter
// of the memory bandwidth (docs/speed_notes.md, item 45). A lane's sum for its value m
// of the row sits at [m][lane] of the warp's rows, so the 32 lanes of one update hit
// 32 banks; stored by column (lane l at l * kW + e), eight lanes shared a bank and the
// updates ran eight times over (item 46).
// With kParts = 3 a third set of sums, of gx as written, gives the bias gradient of the
// Linear that made x (Note [Column sums made by the consumer] in autograd/engine.cpp).
constexpr int kFusedRowsPerWarp = 4;
template <typename T, int kCols, int kW, int kParts>
__global__ void __launch_bounds__(kBlock, 2) layer_norm_backward_fused_kernel(
    const T* g, const T* x, const T* w, const float* mean, const float* rstd, const T* add,
    T* gx, float* partial, int64_t N, int64_t C) {
  static_assert(kCols % kW == 0, "a lane holds whole groups");
  static_assert(kParts == 2 || kParts == 3, "weight and bias, and maybe gx");
  using G = Group<T, kW>;
  extern __shared__ float shares[];  // (kRowsPerBlock, kParts, kCols, 32)
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  // The warp's column sums, in its own rows of shares: each lane adds into its own
  // values only, so no other thread touches them until the block's sum below. Value m
  // of a lane is column (lane + 32 (m / kW)) kW + m % kW of the row.
  float* const share_w = shares + warp * kParts * kCols * 32 + lane;
  float* const share_b = share_w + kCols * 32;
  float* const share_x = share_b + kCols * 32;  // kParts == 3 only
#pragma unroll
  for (int m = 0; m < kCols; ++m) {
    share_w[m * 32] = share_b[m * 32] = 0.0f;
    if constexpr (kParts == 3) share_x[m * 32] = 0.0f;
  }
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock * kFusedRowsPerWarp;
  for (int k = 0; k < kFusedRowsPerWarp; ++k) {
    const int64_t r = first + k * kRowsPerBlock + warp;
    if (r >= N) break;
    const T* gr = g + r * C;
    const T* xr = x + r * C;
    const float mu = mean[r], rs = rstd[r];
    float gv[kCols], xhat[kCols], dxhat[kCols], s1 = 0.0f, s2 = 0.0f;
    // Rows of up to 24 values a lane (GPT-2's 768 columns) also load the residual's
    // gradient here, with g and x, so its latency is not paid again after the warp's
    // sums; wider rows would spill the registers it takes (docs/speed_notes.md, item 64).
    constexpr bool kEarlyAdd = kCols <= 24;
    G early[kEarlyAdd ? kCols / kW : 1];
#pragma unroll
    for (int q = 0; q < kCols / kW; ++q) {
      const int64_t c0 = (lane + 32 * q) * int64_t{kW};  // C % kW == 0: all of it or none
      G a{}, b{}, c{};
      if (c0 < C) {
        a = *reinterpret_cast<const G*>(gr + c0);
        b = *reinterpret_cast<const G*>(xr + c0);
        c = *reinterpret_cast<const G*>(w + c0);
        if (kEarlyAdd && add != nullptr) early[q] = *reinterpret_cast<const G*>(add + r * C + c0);
      }
#pragma unroll
      for (int e = 0; e < kW; ++e) {
        const int m = q * kW + e;
        gv[m] = c0 < C ? static_cast<float>(a.v[e]) : 0.0f;
        xhat[m] = c0 < C ? (static_cast<float>(b.v[e]) - mu) * rs : 0.0f;
        dxhat[m] = gv[m] * static_cast<float>(c.v[e]);  // 0 past the row
      }
    }
#pragma unroll
    for (int m = 0; m < kCols; ++m) {
      s1 += dxhat[m];
      s2 += dxhat[m] * xhat[m];
    }
    s1 = warp_sum(s1) / C;
    s2 = warp_sum(s2) / C;
#pragma unroll
    for (int q = 0; q < kCols / kW; ++q) {
      const int64_t c0 = (lane + 32 * q) * int64_t{kW};
      if (c0 >= C) continue;
      G out, more{};
      if constexpr (kEarlyAdd) {
        if (add != nullptr) more = early[q];
      } else if (add != nullptr) {
        more = *reinterpret_cast<const G*>(add + r * C + c0);
      }
#pragma unroll
      for (int e = 0; e < kW; ++e) {
        const int m = q * kW + e;
        out.v[e] = static_cast<T>(rs * (dxhat[m] - s1 - xhat[m] * s2));
        if (add != nullptr) out.v[e] = plus(out.v[e], static_cast<float>(more.v[e]));
      }
      *reinterpret_cast<G*>(gx + r * C + c0) = out;
#pragma unroll
      for (int e = 0; e < kW; ++e) {
        const int m = q * kW + e;
        share_w[m * 32] += gv[m] * xhat[m];
        share_b[m * 32] += gv[m];
        if constexpr (kParts == 3) share_x[m * 32] += static_cast<float>(out.v[e]);
      }
    }
  }
  __syncthreads();
  for (int64_t e = threadIdx.x; e < kParts * C; e += blockDim.x) {
    const int64_t part = e / C, c = e % C;  // partial[b][part][c]
    const int64_t slot = (part * kCols + (c / kW) / 32 * kW + c % kW) * 32 + (c / kW) % 32;
    float total = 0.0f;
    for (int v = 0; v < kRowsPerBlock; ++v) total += shares[v * kParts * kCols * 32 + slot];
    partial[blockIdx.x * kParts * C + e] = total;
  }
}

// The widest group, at most 16 bytes, that kCols values of T split into.
template <typename T, int kCols>
constexpr int group_width() {
  int width = cuda::kPack<T>;
  while (kCols % width != 0) width /= 2;
  return width;
}

// Per-chunk column partials: partial[chunk][0][c] = sum g * xhat, [1][c] = sum g.
template <typename T>
__global__ void layer_norm_grad_wb_kernel(const T* g, const T* x, const float* mean,
                                          const float* rstd, float* partial, int64_t N, int64_t C,
                                          int64_t rows_per_chunk) {
  const int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (c >= C) return;
  const int64_t begin = blockIdx.y * rows_per_chunk, end = min(N, begin + rows_per_chunk);
  float gw = 0.0f, gb = 0.0f;
  for (int64_t r = begin; r < end; ++r) {
    const float gi = load(g, r * C + c);
    gw += gi * (load(x, r * C + c) - mean[r]) * rstd[r];
    gb += gi;
  }
  partial[(blockIdx.y * 2 + 0) * C + c] = gw;
  partial[(blockIdx.y * 2 + 1) * C + c] = gb;
}

void layer_norm_forward_cuda(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps,
                             const Tensor& y, const Tensor& mean, const Tensor& rstd) {
  const int64_t C = x.size(-1), N = x.numel() / C;
  if (N == 0) return;
  cuda::set_device(x);
  const unsigned blocks = static_cast<unsigned>((N + kRowsPerBlock - 1) / kRowsPerBlock);
  dispatch_dtype<FloatTypes>(x.dtype(), "layer_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    constexpr int kW = cuda::kPack<T>;
    const bool groups = C % kW == 0 && all_aligned({&x, &weight, &bias, &y}, 16);
    const auto kernel =
        groups ? layer_norm_forward_kernel<T, kW> : layer_norm_forward_kernel<T, 1>;
    kernel<<<blocks, kBlock, 0, cuda::current_stream()>>>(
        x.data_ptr<T>(), weight.data_ptr<T>(), bias.data_ptr<T>(), eps, y.data_ptr<T>(),
        mean.data_ptr<float>(), rstd.data_ptr<float>(), N, C);
    ZERO_CUDA_LAUNCH_CHECK();
  });
}

// Writes grad_x (plus grad_x_add, if given) and returns the (chunks, parts, C) FP32
// column sums of row chunks: parts 2, or 3 with `sum_gx` where the fused kernel runs.
template <typename T>
Tensor layer_norm_backward_t(const Tensor& grad_y, const Tensor& x, const Tensor& weight,
                             const Tensor& mean, const Tensor& rstd, const Tensor& grad_x,
                             const Tensor& grad_x_add, bool sum_gx) {
  const T* add = grad_x_add.defined() ? grad_x_add.data_ptr<T>() : nullptr;
  const int64_t C = x.size(-1), N = x.numel() / C;
  const TensorOption f32 = TensorOption().OnDevice(x.device());
  Tensor partial;  // (chunks, parts, C) column sums of row chunks
  const auto fused = [&](auto cols, auto parts) {
    constexpr int kCols = decltype(cols)::value, kParts = decltype(parts)::value;
    const int64_t rows_per_block = int64_t{kRowsPerBlock} * kFusedRowsPerWarp;
    const int64_t blocks = (N + rows_per_block - 1) / rows_per_block;
    partial = Tensor::Empty({blocks, kParts, C}, f32);
    // 64 KiB at kCols = 32 with two parts, 96 KiB with three: two blocks an SM either way.
    const size_t shares = sizeof(float) * kRowsPerBlock * kParts * kCols * 32;
    constexpr int kW = group_width<T, kCols>();
    const bool groups =
        C % kW == 0 && all_aligned({&grad_y, &x, &weight, &grad_x}, sizeof(T) * kW) &&
        (add == nullptr || all_aligned({&grad_x_add}, sizeof(T) * kW));
    const auto kernel = groups ? layer_norm_backward_fused_kernel<T, kCols, kW, kParts>
                               : layer_norm_backward_fused_kernel<T, kCols, 1, kParts>;
    ZERO_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(shares)));
    kernel<<<static_cast<unsigned>(blocks), kBlock, shares, cuda::current_stream()>>>(
        grad_y.data_ptr<T>(), x.data_ptr<T>(), weight.data_ptr<T>(), mean.data_ptr<float>(),
        rstd.data_ptr<float>(), add, grad_x.data_ptr<T>(), partial.data_ptr<float>(), N, C);
    ZERO_CUDA_LAUNCH_CHECK();
  };
  const auto fused_parts = [&](auto cols) {
    if (sum_gx) return fused(cols, std::integral_constant<int, 3>{});
    fused(cols, std::integral_constant<int, 2>{});
  };
  if (C <= 32 * 4) {
    fused_parts(std::integral_constant<int, 4>{});
  } else if (C <= 32 * 12) {
    fused_parts(std::integral_constant<int, 12>{});
  } else if (C <= 32 * 24) {
    fused_parts(std::integral_constant<int, 24>{});
  } else if (C <= 32 * 32) {
    fused_parts(std::integral_constant<int, 32>{});
  } else {
    const unsigned blocks = static_cast<unsigned>((N + kRowsPerBlock - 1) / kRowsPerBlock);
    layer_norm_grad_x_kernel<T><<<blocks, kBlock, 0, cuda::current_stream()>>>(
        grad_y.data_ptr<T>(), x.data_ptr<T>(), weight.data_ptr<T>(), mean.data_ptr<float>(),
        rstd.data_ptr<float>(), add, grad_x.data_ptr<T>(), N, C);
    ZERO_CUDA_LAUNCH_CHECK();
    // Column sums in chunks of rows, then a deterministic sum over the chunks.
    const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(N / 32, 256));
    const int64_t rows_per_chunk = (N + chunks - 1) / chunks;
    partial = Tensor::Empty({chunks, 2, C}, f32);
    const dim3 grid(static_cast<unsigned>((C + kBlock - 1) / kBlock),
                    static_cast<unsigned>(chunks));
    layer_norm_grad_wb_kernel<T><<<grid, kBlock, 0, cuda::current_stream()>>>(
        grad_y.data_ptr<T>(), x.data_ptr<T>(), mean.data_ptr<float>(), rstd.data_ptr<float>(),
        partial.data_ptr<float>(), N, C, rows_per_chunk);
    ZERO_CUDA_LAUNCH_CHECK();
  }
  return partial;
}

void layer_norm_backward_cuda(const Tensor& grad_y, const Tensor& x, const Tensor& weight,
                              const Tensor& mean, const Tensor& rstd, const Tensor& grad_x,
                              const Tensor& grad_weight, const Tensor& grad_bias,
                              const Tensor& grad_x_add, const Tensor& grad_x_sums) {
  const int64_t C = x.size(-1), N = x.numel() / C;
  cuda::set_device(x);
  if (N == 0) {
    for (const Tensor* t : {&grad_weight, &grad_bias, &grad_x_sums}) {
      if (t->defined()) fill(*t, 0.0f);
    }
    return;
  }
  Tensor partial;  // (chunks, parts, C), FP32 whatever the dtype
  dispatch_dtype<FloatTypes>(x.dtype(), "layer_norm backward", [&](auto tag) {
    partial = layer_norm_backward_t<typename decltype(tag)::type>(
        grad_y, x, weight, mean, rstd, grad_x, grad_x_add, grad_x_sums.defined());
  });
  // The chunks' sums into each gradient, in its dtype: the columns [0, C), [C, 2C) and
  // [2C, 3C) of partial seen as [chunks, parts C], in one launch where all share a dtype.
  const int64_t parts = partial.size(1);
  const Tensor rows = reshaped(partial, {partial.size(0), parts * C});
  const auto columns = [&](int64_t begin, int64_t end) {
    return Tensor(meta_slice(rows.meta(), 1, begin, end, 1), rows.node());
  };
  if (parts == 3 && grad_x_sums.dtype() == grad_weight.dtype()) {
    cuda::column_sums(rows, grad_weight, grad_bias, grad_x_sums);
    return;
  }
  cuda::column_sums(columns(0, 2 * C), grad_weight, grad_bias);
  if (parts == 3) {
    cuda::column_sums(columns(2 * C, 3 * C), grad_x_sums);
  } else if (grad_x_sums.defined()) {  // rows too wide for the fused kernel: a pass of its own
    cuda::column_sums(reshaped(grad_x, {N, C}), grad_x_sums);
  }
}

}  // namespace

ZERO_REGISTER_KERNEL(layer_norm_forward, kCuda, layer_norm_forward_cuda);
ZERO_REGISTER_KERNEL(layer_norm_backward, kCuda, layer_norm_backward_cuda);

}  // namespace zero::ops
