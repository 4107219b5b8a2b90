// CUDA pieces of the chunked cross-entropy behind linear_cross_entropy: the count of
// non-ignored targets (kept on the device, so no chunk synchronises with the host),
// the forward of one chunk (row logsumexp, then one block adds the chunk's summed
// losses / count to the loss, in a fixed order so the result is deterministic), and
// the backward done in place on the chunk's logits (optionally also written transposed),
// or both in one kernel that reads each row once (Note [A chunk's rows read once]).
// A target outside [0, V) gives a NaN loss: see Note [Bad indices on the GPU]. The
// chunk's logits (and the transposed gradient) may be f32, bf16 or f16 (the kernels'
// T): each is loaded into float and each gradient rounded once; lse, count and the loss
// are FP32.
#include <algorithm>
#include <cstdint>

#include "zero/kernels/cuda/block_reduce.cuh"
#include "zero/kernels/cuda/cross_entropy.cuh"
#include "zero/kernels/cuda/cuda_common.cuh"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/dtype_dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {
namespace {

constexpr int kRowThreads = 256;
constexpr int kReduceThreads = 1024;

__global__ void count_kernel(const int32_t* targets, int ignore_index, int64_t n, float* count) {
  __shared__ float scratch[32];
  float c = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    c += targets[i] != ignore_index ? 1.0f : 0.0f;
  }
  c = cuda::block_sum(c, scratch);
  if (threadIdx.x == 0) *count = c;
}

// Row i of the chunk: lse[i] = logsumexp(logits[i]); row_loss[i] = lse - logits[i, t]
// (0 when ignored, NaN when t is out of range).
template <typename T>
__global__ void chunk_rows_kernel(const T* logits, const int32_t* targets, int ignore_index,
                                  float* lse, float* row_loss, int64_t V) {
  cuda::cross_entropy_row(logits + blockIdx.x * V, targets[blockIdx.x], ignore_index, V,
                          &lse[blockIdx.x], &row_loss[blockIdx.x]);
}

// One block: loss += sum(row_loss) / count (nothing when count is 0).
__global__ void chunk_mean_kernel(const float* row_loss, int64_t n, const float* count,
                                  float* loss) {
  __shared__ float scratch[32];
  float s = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += row_loss[i];
  s = cuda::block_sum(s, scratch);
  if (threadIdx.x == 0 && *count > 0.0f) *loss += s / *count;
}

// Row i of the chunk, in place: logits -> grad_loss / count * (softmax - onehot(t)).
template <typename T>
__global__ void chunk_backward_kernel(T* logits, const int32_t* targets, const float* lse,
                                      const float* grad_loss, const float* count,
                                      int ignore_index, int64_t V) {
  const int32_t t = targets[blockIdx.x];
  const float scale = t == ignore_index || *count == 0.0f ? 0.0f : *grad_loss / *count;
  T* row = logits + blockIdx.x * V;
  cuda::cross_entropy_grad_row<T>(row, row, t, lse[blockIdx.x], scale, V);
}

// Note [A chunk's rows read once]
// When the gradient is wanted in the forward (Note [Gradients in the forward pass] in
// autograd/ops/fused_ops.cpp), a chunk's forward (logsumexp) and backward (softmax -
// onehot) would each read every row: for GPT-2's BF16 chunks, 2048 rows of 50304
// values, 206 MB a time, and a row read by the second kernel is long gone from L2. But
// a GPT-2 row is 6288 packs of 16 bytes, at most 7 a thread of a 1024-thread block,
// and that fits in registers. So one block loads its row once, keeps it through the two
// block reductions (the maximum, then the sum of exponentials against it: two passes
// over registers, not the online rescaling that a single read from memory needs), and
// turns the same registers into the gradient it writes back: one read and one write of
// the chunk where there were two reads and a write. Rows of more than kRowPacks packs a
// thread, or not in 16-byte packs, take the two kernels.
constexpr int kRowPacks = 8;
constexpr int kMaxRowThreads = 1024;

// Row i of the chunk: lse[i], row_loss[i] (as chunk_rows_kernel), and the row in place
// turned into its gradient (as chunk_backward_kernel). blockDim.x * kRowPacks >= the
// row's packs, and the row is in 16-byte packs.
// An empty asm that claims to change p's bits: the compiler must convert them to float
// again at their next use, instead of keeping the floats of every pack alive from one
// pass over the row to the next (with 16-bit T, twice the registers, which spilled).
template <typename T>
__device__ inline void convert_again(cuda::Pack<T>& p) {
  uint32_t* words = reinterpret_cast<uint32_t*>(p.v);
#pragma unroll
  for (int i = 0; i < 4; ++i) asm volatile("" : "+r"(words[i]));
}

template <typename T>
__global__ void __launch_bounds__(kMaxRowThreads) chunk_rows_with_grad_kernel(
    T* logits, const int32_t* targets, int ignore_index, const float* grad_loss,
    const float* count, float* lse, float* row_loss, int V) {
  __shared__ float scratch[2][32];
  constexpr int N = cuda::kPack<T>;
  T* row = logits + static_cast<int64_t>(blockIdx.x) * V;
  cuda::Pack<T>* packs = reinterpret_cast<cuda::Pack<T>*>(row);
  // This thread's packs are threadIdx.x + u blockDim.x for u < mine.
  const int n_packs = V / N, step = static_cast<int>(blockDim.x);
  const int mine = (n_packs - static_cast<int>(threadIdx.x) + step - 1) / step;
  const int32_t t = targets[blockIdx.x];
  const bool valid = t >= 0 && t < V;
  // Read before any thread writes the row, which comes after the reductions' barriers.
  const float x_t = threadIdx.x == 0 && valid ? static_cast<float>(row[t]) : 0.0f;
  cuda::Pack<T> p[kRowPacks];
#pragma unroll
  for (int u = 0; u < kRowPacks; ++u) {
    if (u < mine) p[u] = packs[threadIdx.x + u * step];
  }
  float m = -INFINITY;
#pragma unroll
  for (int u = 0; u < kRowPacks; ++u) {
#pragma unroll
    for (int e = 0; e < N; ++e) m = u < mine ? fmaxf(m, static_cast<float>(p[u].v[e])) : m;
  }
  m = cuda::block_max(m, scratch[0]);
#pragma unroll
  for (int u = 0; u < kRowPacks; ++u) convert_again(p[u]);
  const float base = m == -INFINITY ? 0.0f : m;  // a row all -inf: exponentials of -inf
  float s = 0.0f;
#pragma unroll
  for (int u = 0; u < kRowPacks; ++u) {
#pragma unroll
    for (int e = 0; e < N; ++e) s += u < mine ? __expf(static_cast<float>(p[u].v[e]) - base) : 0.0f;
  }
  const float l = base + __logf(cuda::block_sum(s, scratch[1]));
#pragma unroll
  for (int u = 0; u < kRowPacks; ++u) convert_again(p[u]);
  if (threadIdx.x == 0) {
    lse[blockIdx.x] = l;
    row_loss[blockIdx.x] = t == ignore_index ? 0.0f : (valid ? l - x_t : NAN);
  }
  const float scale = t == ignore_index || *count == 0.0f ? 0.0f : *grad_loss / *count;
#pragma unroll
  for (int u = 0; u < kRowPacks; ++u) {
    if (u >= mine) break;
    const int k = threadIdx.x + u * step;
#pragma unroll
    for (int e = 0; e < N; ++e) {
      const float d = __expf(static_cast<float>(p[u].v[e]) - l) - (k * N + e == t ? 1.0f : 0.0f);
      p[u].v[e] = static_cast<T>(scale * d);
    }
    packs[k] = p[u];
  }
}

// The same in 32 x 32 tiles, also writing the gradient transposed into [V, n]: each
// block reads its tile along rows and writes both outputs along their rows, the
// transposed one through shared memory (a padded row keeps the column reads free of
// bank conflicts). block = (32, 8).
constexpr int kTransposeTile = 32;
template <typename T>
__global__ void chunk_backward_transposed_kernel(T* logits, T* transposed,
                                                 const int32_t* targets, const float* lse,
                                                 const float* grad_loss, const float* count,
                                                 int ignore_index, int64_t n, int64_t V) {
  __shared__ float tile[kTransposeTile][kTransposeTile + 1];
  const int64_t j0 = static_cast<int64_t>(blockIdx.x) * kTransposeTile;
  const int64_t i0 = static_cast<int64_t>(blockIdx.y) * kTransposeTile;
  const float norm = *count == 0.0f ? 0.0f : *grad_loss / *count;
  for (int y = threadIdx.y; y < kTransposeTile; y += blockDim.y) {
    const int64_t i = i0 + y, j = j0 + threadIdx.x;
    if (i >= n || j >= V) continue;
    const int32_t t = targets[i];
    const float scale = t == ignore_index ? 0.0f : norm;
    const float x = static_cast<float>(logits[i * V + j]);
    const float d = scale * (__expf(x - lse[i]) - (j == t ? 1.0f : 0.0f));
    logits[i * V + j] = static_cast<T>(d);
    tile[y][threadIdx.x] = d;
  }
  __syncthreads();
  for (int y = threadIdx.y; y < kTransposeTile; y += blockDim.y) {
    const int64_t j = j0 + y, i = i0 + threadIdx.x;
    if (i < n && j < V) transposed[j * n + i] = static_cast<T>(tile[threadIdx.x][y]);
  }
}

void cross_entropy_count_cuda(const Tensor& targets, int ignore_index, int64_t /*vocab*/,
                              const Tensor& count) {
  // Targets are range-checked by the chunk kernels: a bad one makes the loss NaN.
  cuda::set_device(targets);
  count_kernel<<<1, kReduceThreads, 0, cuda::current_stream()>>>(
      targets.data_ptr<int32_t>(), ignore_index, targets.numel(), count.data_ptr<float>());
  ZERO_CUDA_LAUNCH_CHECK();
}

void cross_entropy_chunk_backward_cuda(const Tensor& logits, const Tensor& targets,
                                       const Tensor& lse, const Tensor& grad_loss,
                                       const Tensor& count, int ignore_index,
                                       const Tensor& transposed);

void cross_entropy_chunk_forward_cuda(const Tensor& logits, const Tensor& targets,
                                      int ignore_index, const Tensor& count, const Tensor& lse,
                                      const Tensor& loss, const Tensor& grad_loss) {
  const int64_t n = logits.size(0), V = logits.size(1);
  cuda::set_device(logits);
  Tensor row_loss = Tensor::Empty({n}, lse.options());  // (n) FP32
  bool with_grad = false;
  dispatch_dtype<FloatTypes>(logits.dtype(), "cross_entropy_chunk_forward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t n_packs = V / cuda::kPack<T>;
    // Note [A chunk's rows read once]: about 4 packs a thread, up to kRowPacks.
    const int threads = static_cast<int>(
        std::clamp<int64_t>((n_packs + 4 * 32 - 1) / (4 * 32) * 32, 32, kMaxRowThreads));
    with_grad = grad_loss.defined() && V % cuda::kPack<T> == 0 && V <= (int64_t{1} << 30) &&
                reinterpret_cast<uintptr_t>(logits.data_ptr<T>()) % 16 == 0 &&
                n_packs <= int64_t{kRowPacks} * threads;
    if (with_grad) {
      chunk_rows_with_grad_kernel<T><<<static_cast<unsigned>(n), threads, 0,
                                       cuda::current_stream()>>>(
          logits.data_ptr<T>(), targets.data_ptr<int32_t>(), ignore_index,
          grad_loss.data_ptr<float>(), count.data_ptr<float>(), lse.data_ptr<float>(),
          row_loss.data_ptr<float>(), static_cast<int>(V));
    } else {
      chunk_rows_kernel<T><<<static_cast<unsigned>(n), kRowThreads, 0,
                             cuda::current_stream()>>>(
          logits.data_ptr<T>(), targets.data_ptr<int32_t>(), ignore_index,
          lse.data_ptr<float>(), row_loss.data_ptr<float>(), V);
    }
    ZERO_CUDA_LAUNCH_CHECK();
  });
  chunk_mean_kernel<<<1, kReduceThreads, 0, cuda::current_stream()>>>(
      row_loss.data_ptr<float>(), n, count.data_ptr<float>(), loss.data_ptr<float>());
  ZERO_CUDA_LAUNCH_CHECK();
  if (grad_loss.defined() && !with_grad) {
    cross_entropy_chunk_backward_cuda(logits, targets, lse, grad_loss, count, ignore_index,
                                      Tensor());
  }
}

void cross_entropy_chunk_backward_cuda(const Tensor& logits, const Tensor& targets,
                                       const Tensor& lse, const Tensor& grad_loss,
                                       const Tensor& count, int ignore_index,
                                       const Tensor& transposed) {
  const int64_t n = logits.size(0), V = logits.size(1);
  cuda::set_device(logits);
  dispatch_dtype<FloatTypes>(logits.dtype(), "cross_entropy_chunk_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (transposed.defined()) {
      ZERO_CHECK(n <= int64_t{65535} * kTransposeTile,
                 "cross_entropy_chunk_backward: a transposed gradient takes chunks of at most ",
                 int64_t{65535} * kTransposeTile, " rows, got ", n);
      const dim3 grid(static_cast<unsigned>((V + kTransposeTile - 1) / kTransposeTile),
                      static_cast<unsigned>((n + kTransposeTile - 1) / kTransposeTile));
      chunk_backward_transposed_kernel<T><<<grid, dim3(kTransposeTile, 8), 0,
                                            cuda::current_stream()>>>(
          logits.data_ptr<T>(), transposed.data_ptr<T>(), targets.data_ptr<int32_t>(),
          lse.data_ptr<float>(), grad_loss.data_ptr<float>(), count.data_ptr<float>(),
          ignore_index, n, V);
      ZERO_CUDA_LAUNCH_CHECK();
      return;
    }
    chunk_backward_kernel<T><<<static_cast<unsigned>(n), kRowThreads, 0,
                               cuda::current_stream()>>>(
        logits.data_ptr<T>(), targets.data_ptr<int32_t>(), lse.data_ptr<float>(),
        grad_loss.data_ptr<float>(), count.data_ptr<float>(), ignore_index, V);
    ZERO_CUDA_LAUNCH_CHECK();
  });
}

}  // namespace

ZERO_REGISTER_KERNEL(cross_entropy_count, kCuda, cross_entropy_count_cuda);
ZERO_REGISTER_KERNEL(cross_entropy_chunk_forward, kCuda, cross_entropy_chunk_forward_cuda);
ZERO_REGISTER_KERNEL(cross_entropy_chunk_backward, kCuda, cross_entropy_chunk_backward_cuda);

}  // namespace zero::ops
