// CUDA pieces of the chunked cross-entropy behind linear_cross_entropy: the count of
// non-ignored targets (kept on the device, so no chunk synchronises with the host),
// the forward of one chunk (row logsumexp, then one block adds the chunk's summed
// losses / count to the loss, in a fixed order so the result is deterministic), and
// the backward done in place on the chunk's logits (optionally also written transposed).
// A target outside [0, V) gives a NaN loss: see Note [Bad indices on the GPU]. The
// chunk's logits (and the transposed gradient) may be f32, bf16 or f16 (the kernels'
// T): each is loaded into float and each gradient rounded once; lse, count and the loss
// are FP32. A chunk's rows are ld = logits.stride(0) values apart, V of them used: the
// op pads a vocabulary that is not a multiple of 8 (Note [A padded head] in
// autograd/ops/fused_ops.cpp).
#include <cstdlib>
#include <string>

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
                                  float* lse, float* row_loss, int64_t V, int64_t ld) {
  cuda::cross_entropy_row(logits + blockIdx.x * ld, targets[blockIdx.x], ignore_index, V,
                          &lse[blockIdx.x], &row_loss[blockIdx.x]);
}

// Note [One read of the head's rows]
// When the forward also makes the gradient (Note [Gradients in the forward pass] in
// autograd/ops/fused_ops.cpp), a chunk's row is read for its logsumexp, then read
// again and written as its gradient. A GPT-2 row is 50304 values and a chunk 2048 rows:
// the second read misses L2, and reading the row back from global memory in the same
// kernel gained nothing (docs/speed_notes.md, item 63). So this kernel keeps the row in
// shared memory (98 KB in BF16, 197 KB in FP32) between the two: pack k goes back to
// the thread that loaded it, and only the block's reductions need barriers. Rows that
// do not fit, or cannot be read in 16-byte packs, take the two kernels. At 49
// registers a thread one block of 1024 threads fills an SM; two blocks of 512 a row
// (BF16 rows fit twice in an SM's shared memory), whose barriers and writes could
// overlap each other's reads, were no faster (item 64). ZERO_CE_ONE_PASS=0 takes the
// two kernels always, to time one against the other.
constexpr int kOnePassThreads = 1024;

template <typename T>
__global__ void __launch_bounds__(kOnePassThreads)
chunk_rows_grad_kernel(T* logits, const int32_t* targets, int ignore_index,
                       const float* grad_loss, const float* count, float* lse,
                       float* row_loss, int64_t V, int64_t ld) {
  extern __shared__ float4 kept_storage[];  // (V / kPack) packs of the row
  __shared__ float scratch[2][32];
  using P = cuda::Pack<T>;
  constexpr int N = cuda::kPack<T>;
  P* const kept = reinterpret_cast<P*>(kept_storage);
  P* const packs = reinterpret_cast<P*>(logits + blockIdx.x * ld);
  const int64_t n_packs = V / N, step = blockDim.x;
  float m = -INFINITY, s = 0.0f;
  for (int64_t i = threadIdx.x; i < n_packs; i += cuda::kRowUnroll * step) {
    float x[cuda::kRowUnroll * N];
#pragma unroll
    for (int u = 0; u < cuda::kRowUnroll; ++u) {
      const int64_t k = i + u * step;
      P p;
      if (k < n_packs) kept[k] = p = packs[k];
#pragma unroll
      for (int e = 0; e < N; ++e) {
        x[u * N + e] = k < n_packs ? static_cast<float>(p.v[e]) : -INFINITY;
      }
    }
    cuda::fold_group<true>(x, cuda::kRowUnroll * N, m, s);
  }
  const float l = cuda::row_logsumexp(m, s, scratch);  // its barriers publish `kept`
  const int32_t t = targets[blockIdx.x];
  if (threadIdx.x == 0) {
    lse[blockIdx.x] = l;
    const bool valid = t >= 0 && t < V;
    row_loss[blockIdx.x] =
        t == ignore_index ? 0.0f : (valid ? l - static_cast<float>(kept[t / N].v[t % N]) : NAN);
  }
  const float scale = t == ignore_index || *count == 0.0f ? 0.0f : *grad_loss / *count;
  // The target's one-hot term lives in one pack: the other packs skip the index test
  // (scale * (prob - 0) is scale * prob, so the bits are those of the formula applied to all).
  // A negative t names no value here (t % N < 0), whatever pack t / N is.
  const int64_t target_pack = t / N;
  const int target_value = t % N;
  for (int64_t k = threadIdx.x; k < n_packs; k += step) {
    P p = kept[k];
    if (k != target_pack) {
#pragma unroll
      for (int e = 0; e < N; ++e) {
        p.v[e] = static_cast<T>(scale * cuda::exp_approx<true>(static_cast<float>(p.v[e]) - l));
      }
    } else {
#pragma unroll
      for (int e = 0; e < N; ++e) {
        const float prob = cuda::exp_approx<true>(static_cast<float>(p.v[e]) - l);
        p.v[e] = static_cast<T>(scale * (prob - (e == target_value ? 1.0f : 0.0f)));
      }
    }
    packs[k] = p;
  }
}

// Whether chunk_rows_grad_kernel takes rows of V values T, ld apart, at `logits` on the
// current device, or the two kernels must.
template <typename T>
bool one_pass_fits(const void* logits, int64_t V, int64_t ld) {
  static const bool enabled = [] {
    const char* env = std::getenv("ZERO_CE_ONE_PASS");
    return env == nullptr || std::string(env) != "0";
  }();
  const int64_t bytes = V * static_cast<int64_t>(sizeof(T));
  // Short rows leave most of 1024 threads idle; the two kernels use 256 a row.
  if (!enabled || V % cuda::kPack<T> != 0 || ld % cuda::kPack<T> != 0 ||
      reinterpret_cast<uintptr_t>(logits) % 16 != 0 || V < 8 * kOnePassThreads) {
    return false;
  }
  int device = 0;
  ZERO_CUDA_CHECK(cudaGetDevice(&device));
  const int most = cuda::device_attribute(device, cudaDevAttrMaxSharedMemoryPerBlockOptin);
  return bytes + 2 * 32 * 4 <= most;  // the row and the static scratch
}

// Note [Short rows a warp each]
// The row kernels give a row a block of 256 threads (1024 in one pass), sized for GPT-2's
// 50304 words. A character vocabulary (65 or 193 words) then leaves most of each block
// idle, and the char model's 8192-row chunk took 31 us in the two kernels for 1 MB
// (docs/speed_notes.md, item 79). Rows of up to 32 kSmallPerLane values take a warp each
// instead: lane l holds values l, l + 32, ... in registers, the warp's shuffles make the
// row's maximum and sum, and, when asked, the same kernel writes the gradient over the
// row, as the one-pass kernel does. The target's value comes from its lane by shuffle,
// not from memory, which other lanes may already have overwritten.
constexpr int kSmallPerLane = 8;

template <typename T>
__global__ void small_rows_kernel(T* logits, const int32_t* targets, int ignore_index,
                                  const float* grad_loss, const float* count, float* lse,
                                  float* row_loss, int64_t n, int64_t V, int64_t ld) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x / 32) + threadIdx.x / 32;
  if (i >= n) return;
  const int lane = threadIdx.x % 32;
  T* row = logits + i * ld;
  float x[kSmallPerLane];
  float m = -INFINITY;
#pragma unroll
  for (int k = 0; k < kSmallPerLane; ++k) {
    const int64_t j = lane + 32 * k;
    x[k] = j < V ? static_cast<float>(row[j]) : -INFINITY;
    m = fmaxf(m, x[k]);
  }
  m = cuda::warp_max(m);
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < kSmallPerLane; ++k) s += x[k] == -INFINITY ? 0.0f : __expf(x[k] - m);
  const float l = m + __logf(cuda::warp_sum(s));
  const int32_t t = targets[i];
  const bool valid = t >= 0 && t < V;
  float target_x = 0.0f;  // the target's logit, held by lane t % 32 in x[t / 32]
#pragma unroll
  for (int k = 0; k < kSmallPerLane; ++k) target_x = valid && k == t / 32 ? x[k] : target_x;
  target_x = __shfl_sync(0xffffffffu, target_x, valid ? t % 32 : 0);
  if (lane == 0) {
    lse[i] = l;
    row_loss[i] = t == ignore_index ? 0.0f : (valid ? l - target_x : NAN);
  }
  if (grad_loss == nullptr) return;
  const float scale = t == ignore_index || *count == 0.0f ? 0.0f : *grad_loss / *count;
#pragma unroll
  for (int k = 0; k < kSmallPerLane; ++k) {
    const int64_t j = lane + 32 * k;
    if (j < V) row[j] = static_cast<T>(scale * (__expf(x[k] - l) - (j == t ? 1.0f : 0.0f)));
  }
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
                                      int ignore_index, int64_t V, int64_t ld) {
  const int32_t t = targets[blockIdx.x];
  const float scale = t == ignore_index || *count == 0.0f ? 0.0f : *grad_loss / *count;
  T* row = logits + blockIdx.x * ld;
  cuda::cross_entropy_grad_row<T>(row, row, t, lse[blockIdx.x], scale, V);
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
                                                 int ignore_index, int64_t n, int64_t V,
                                                 int64_t ld) {
  __shared__ float tile[kTransposeTile][kTransposeTile + 1];
  const int64_t j0 = static_cast<int64_t>(blockIdx.x) * kTransposeTile;
  const int64_t i0 = static_cast<int64_t>(blockIdx.y) * kTransposeTile;
  const float norm = *count == 0.0f ? 0.0f : *grad_loss / *count;
  for (int y = threadIdx.y; y < kTransposeTile; y += blockDim.y) {
    const int64_t i = i0 + y, j = j0 + threadIdx.x;
    if (i >= n || j >= V) continue;
    const int32_t t = targets[i];
    const float scale = t == ignore_index ? 0.0f : norm;
    const float x = static_cast<float>(logits[i * ld + j]);
    const float d = scale * (__expf(x - lse[i]) - (j == t ? 1.0f : 0.0f));
    logits[i * ld + j] = static_cast<T>(d);
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

void cross_entropy_chunk_forward_cuda(const Tensor& logits, const Tensor& targets,
                                      int ignore_index, const Tensor& count, const Tensor& lse,
                                      const Tensor& loss, const Tensor& grad_loss) {
  const int64_t n = logits.size(0), V = logits.size(1), ld = logits.stride(0);
  cuda::set_device(logits);
  Tensor row_loss = Tensor::Empty({n}, lse.options());  // (n) FP32
  dispatch_dtype<FloatTypes>(logits.dtype(), "cross_entropy_chunk_forward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const unsigned rows = static_cast<unsigned>(n);
    if (V <= 32 * kSmallPerLane) {  // Note [Short rows a warp each]
      constexpr int kRowsABlock = kRowThreads / 32;
      small_rows_kernel<T><<<static_cast<unsigned>((n + kRowsABlock - 1) / kRowsABlock),
                             kRowThreads, 0, cuda::current_stream()>>>(
          logits.data_ptr<T>(), targets.data_ptr<int32_t>(), ignore_index,
          grad_loss.defined() ? grad_loss.data_ptr<float>() : nullptr, count.data_ptr<float>(),
          lse.data_ptr<float>(), row_loss.data_ptr<float>(), n, V, ld);
      ZERO_CUDA_LAUNCH_CHECK();
      return;
    }
    if (grad_loss.defined() && one_pass_fits<T>(logits.data(), V, ld)) {
      const size_t bytes = static_cast<size_t>(V) * sizeof(T);
      // Set at every launch, not once: a process may run this on more than one GPU.
      ZERO_CUDA_CHECK(cudaFuncSetAttribute(chunk_rows_grad_kernel<T>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(bytes)));
      chunk_rows_grad_kernel<T><<<rows, kOnePassThreads, bytes, cuda::current_stream()>>>(
          logits.data_ptr<T>(), targets.data_ptr<int32_t>(), ignore_index,
          grad_loss.data_ptr<float>(), count.data_ptr<float>(), lse.data_ptr<float>(),
          row_loss.data_ptr<float>(), V, ld);
      ZERO_CUDA_LAUNCH_CHECK();
      return;
    }
    chunk_rows_kernel<T><<<rows, kRowThreads, 0, cuda::current_stream()>>>(
        logits.data_ptr<T>(), targets.data_ptr<int32_t>(), ignore_index, lse.data_ptr<float>(),
        row_loss.data_ptr<float>(), V, ld);
    ZERO_CUDA_LAUNCH_CHECK();
    if (!grad_loss.defined()) return;
    chunk_backward_kernel<T><<<rows, kRowThreads, 0, cuda::current_stream()>>>(
        logits.data_ptr<T>(), targets.data_ptr<int32_t>(), lse.data_ptr<float>(),
        grad_loss.data_ptr<float>(), count.data_ptr<float>(), ignore_index, V, ld);
    ZERO_CUDA_LAUNCH_CHECK();
  });
  chunk_mean_kernel<<<1, kReduceThreads, 0, cuda::current_stream()>>>(
      row_loss.data_ptr<float>(), n, count.data_ptr<float>(), loss.data_ptr<float>());
  ZERO_CUDA_LAUNCH_CHECK();
}

void cross_entropy_chunk_backward_cuda(const Tensor& logits, const Tensor& targets,
                                       const Tensor& lse, const Tensor& grad_loss,
                                       const Tensor& count, int ignore_index,
                                       const Tensor& transposed) {
  const int64_t n = logits.size(0), V = logits.size(1), ld = logits.stride(0);
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
          ignore_index, n, V, ld);
      ZERO_CUDA_LAUNCH_CHECK();
      return;
    }
    chunk_backward_kernel<T><<<static_cast<unsigned>(n), kRowThreads, 0,
                               cuda::current_stream()>>>(
        logits.data_ptr<T>(), targets.data_ptr<int32_t>(), lse.data_ptr<float>(),
        grad_loss.data_ptr<float>(), count.data_ptr<float>(), ignore_index, V, ld);
    ZERO_CUDA_LAUNCH_CHECK();
  });
}

}  // namespace

ZERO_REGISTER_KERNEL(cross_entropy_count, kCuda, cross_entropy_count_cuda);
ZERO_REGISTER_KERNEL(cross_entropy_chunk_forward, kCuda, cross_entropy_chunk_forward_cuda);
ZERO_REGISTER_KERNEL(cross_entropy_chunk_backward, kCuda, cross_entropy_chunk_backward_cuda);

}  // namespace zero::ops
