// Multi-tensor CUDA kernels for the optimiser: the AdamW step, the sum of squares for
// the gradient norm, the in-place scaling that clips gradients, and the one-thread
// kernel that turns the sum into the clip factor AdamW can apply instead. A GPT has ~80
// parameter tensors, many of them small (biases, LayerNorm vectors); one launch each
// would cost more in launch overhead than in arithmetic. These kernels cover many
// tensors per launch. They are the CUDA side of the optimiser kernels of tensor_ops.h.
// Parameters and moments are FP32; each gradient (and each optional copy of an updated
// parameter) has its own dtype, f32, bf16 or f16, recorded in the table, and every
// block, which covers one tensor, picks its loop by it (with_dtype).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "zero/kernels/clip_rule.h"
#include "zero/kernels/cuda/block_reduce.cuh"
#include "zero/kernels/cuda/cuda_common.cuh"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {
namespace {

using cuda::kBlock;

// Note [Multi-tensor launches]
// The kernels see a table of up to kMaxTensors tensors, passed *by value as a kernel
// argument*: it travels with the launch in the kernel's parameter space (constant
// memory), so there is no cudaMalloc, no host->device copy and nothing to keep alive
// or to race with the next step's table. (The gradients are new buffers after every
// backward, so a device-side table would have to be rebuilt and copied each step anyway.)
// Each tensor is cut into chunks of kChunk elements and each chunk is one block;
// `first_block[i]` is the first block of tensor i, so a block finds its tensor with a
// binary search over that prefix sum and its chunk by subtraction. Kernel arguments are
// limited to 4 KiB, which bounds kMaxTensors; a longer list (the reference GPT has 76
// tensors, GPT-2 small 148) is covered by a few launches of the same kernel, each
// over the next kMaxTensors tensors. This is the design of PyTorch's multi_tensor_apply
// and of apex's fused optimisers.
constexpr int kMaxTensors = 64;
constexpr int kChunk = 4 * kBlock;  // elements per block: four per thread

struct TensorTable {
  float* param[kMaxTensors];
  void* grad[kMaxTensors];  // of grad_dtype
  float* exp_avg[kMaxTensors];
  float* exp_avg_sq[kMaxTensors];
  void* copy[kMaxTensors];  // of copy_dtype; null for no copy of the updated param
  int64_t numel[kMaxTensors];
  float decay[kMaxTensors];             // 1 - lr * wd, or 1 without decay
  int32_t first_block[kMaxTensors + 1];  // prefix sums of the chunk counts
  DataType grad_dtype[kMaxTensors];
  DataType copy_dtype[kMaxTensors];
  int count;
};

// The per-step constants of AdamW, the same values the CPU kernel computes, and the
// device address of the optional gradient factor (null for none).
struct AdamWScalars {
  float beta1, beta2, eps, step_size, inv_sqrt_bc2;
  const float* grad_factor;
};

static_assert(sizeof(TensorTable) + sizeof(AdamWScalars) + 2 * sizeof(void*) <= 4096,
              "kernel arguments must fit in 4 KiB");

// The tensor and element range [begin, end) of chunk `block` (by default the block's own).
__device__ inline void locate(const TensorTable& table, int& tensor, int64_t& begin,
                              int64_t& end, int32_t block = static_cast<int32_t>(blockIdx.x)) {
  int lo = 0, hi = table.count - 1;  // last tensor whose first block is <= block
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (table.first_block[mid] <= block) lo = mid; else hi = mid - 1;
  }
  tensor = lo;
  begin = static_cast<int64_t>(block - table.first_block[lo]) * kChunk;
  end = min(begin + kChunk, table.numel[lo]);
}

// Calls f(p) with `ptr` cast to a pointer to the element type of `dtype` (a float type).
template <typename F>
__device__ inline void with_dtype(void* ptr, DataType dtype, F f) {
  switch (dtype) {
    case DataType::BF16: return f(static_cast<bf16*>(ptr));
    case DataType::F16: return f(static_cast<f16*>(ptr));
    default: return f(static_cast<float*>(ptr));
  }
}

// The copy type of an entry without param_copy.
struct NoCopy {};

// ---------------------------------------------------------------- kernels

// Whether p is aligned for loads of 4 of its elements at a time.
template <typename T>
__device__ inline bool four_aligned(const T* p) {
  return reinterpret_cast<uintptr_t>(p) % (4 * sizeof(T)) == 0;
}

// Four consecutive elements at p (four_aligned) as floats: one 16-byte load for float, one
// 8-byte load for the 16-bit types; and the four stored back, each rounded once.
template <typename T>
__device__ inline void load4(const T* p, float (&x)[4]) {
  if constexpr (std::is_same_v<T, float>) {
    const float4 v = *reinterpret_cast<const float4*>(p);
    x[0] = v.x, x[1] = v.y, x[2] = v.z, x[3] = v.w;
  } else {
    const uint2 raw = *reinterpret_cast<const uint2*>(p);
    const T* h = reinterpret_cast<const T*>(&raw);
    for (int k = 0; k < 4; ++k) x[k] = static_cast<float>(h[k]);
  }
}
template <typename T>
__device__ inline void store4(T* p, const float (&x)[4]) {
  if constexpr (std::is_same_v<T, float>) {
    *reinterpret_cast<float4*>(p) = make_float4(x[0], x[1], x[2], x[3]);
  } else {
    uint2 raw;
    T* h = reinterpret_cast<T*>(&raw);
    for (int k = 0; k < 4; ++k) h[k] = static_cast<T>(x[k]);
    *reinterpret_cast<uint2*>(p) = raw;
  }
}

// One element's update: the moments m, v and the parameter p, from the gradient g.
// Every multiply-add is written out (fmaf, __fmul_rn), so that ptxas cannot contract the
// same formula differently in the kernel's two instances: with and without the clip
// factor, an update must be the same bits (Note [The clip factor on the device] in
// optim/grad_clip.cpp). Left to itself it did, and moved results by an ulp.
__device__ inline void adamw_update(float g, float& m, float& v, float& p, float decay,
                                    const AdamWScalars& s) {
  m = fmaf(1.0f - s.beta1, g, __fmul_rn(s.beta1, m));
  v = fmaf(__fmul_rn(1.0f - s.beta2, g), g, __fmul_rn(s.beta2, v));
  const float step = __fdiv_rn(__fmul_rn(s.step_size, m), fmaf(sqrtf(v), s.inv_sqrt_bc2, s.eps));
  p = fmaf(p, decay, -step);
}

// Elements [begin, end) of one tensor: G the gradient's type, C the copy's; with kFactor,
// each gradient is multiplied by `factor` (in a register, rounded to float as scale()
// would store it) before the update. The step moves about 30 bytes an element and no
// arithmetic to speak of, so it runs at the speed of its loads: when every array is
// aligned for it, each thread moves 4 elements of each with one wide load or store (as
// the element-wise kernels do), element by element otherwise and for the tail. The
// results are the same bits either way.
template <bool kFactor, typename G, typename C>
__device__ void adamw_range(float* p, const G* g, float* m, float* v, C* copy, float decay,
                            float factor, const AdamWScalars& s, int64_t begin, int64_t end) {
  constexpr bool kCopy = !std::is_same_v<C, NoCopy>;
  int64_t rest = begin;  // the first element left to the scalar loop
  bool vectors = four_aligned(p) && four_aligned(g) && four_aligned(m) && four_aligned(v);
  if constexpr (kCopy) vectors = vectors && four_aligned(copy);
  if (vectors) {
    for (int64_t i = begin + 4 * threadIdx.x; i + 4 <= end; i += 4 * blockDim.x) {
      float gi[4], mi[4], vi[4], pi[4];
      load4(g + i, gi), load4(m + i, mi), load4(v + i, vi), load4(p + i, pi);
      if constexpr (kFactor) {
        for (int k = 0; k < 4; ++k) gi[k] = __fmul_rn(gi[k], factor);
      }
      for (int k = 0; k < 4; ++k) adamw_update(gi[k], mi[k], vi[k], pi[k], decay, s);
      store4(m + i, mi), store4(v + i, vi), store4(p + i, pi);
      if constexpr (kCopy) store4(copy + i, pi);
    }
    rest = end - (end - begin) % 4;
  }
  for (int64_t i = rest + threadIdx.x; i < end; i += blockDim.x) {
    float gi = static_cast<float>(g[i]), mi = m[i], vi = v[i], pi = p[i];
    if constexpr (kFactor) gi = __fmul_rn(gi, factor);
    adamw_update(gi, mi, vi, pi, decay, s);
    m[i] = mi;
    v[i] = vi;
    p[i] = pi;
    if constexpr (kCopy) copy[i] = static_cast<C>(pi);
  }
}

// kFactor: s.grad_factor is set. Every thread reads the factor (one cached load) and,
// when it is not finite, the whole launch writes nothing: a skipped step, decided on
// the device. Without a factor this is the plain kernel, with no load and no multiply.
template <bool kFactor>
__global__ void adamw_multi_kernel(TensorTable table, AdamWScalars s) {
  float factor = 1.0f;
  if constexpr (kFactor) {
    factor = *s.grad_factor;
    if (!isfinite(factor)) return;
  }
  int t;
  int64_t begin, end;
  locate(table, t, begin, end);
  float* p = table.param[t];
  float* m = table.exp_avg[t];
  float* v = table.exp_avg_sq[t];
  const float decay = table.decay[t];
  with_dtype(table.grad[t], table.grad_dtype[t], [&](auto* g) {
    if (table.copy[t] == nullptr) {
      return adamw_range<kFactor>(p, g, m, v, static_cast<NoCopy*>(nullptr), decay, factor, s,
                                  begin, end);
    }
    with_dtype(table.copy[t], table.copy_dtype[t], [&](auto* c) {
      adamw_range<kFactor>(p, g, m, v, c, decay, factor, s, begin, end);
    });
  });
}

// One partial sum of squares per block, written to partials[blockIdx.x]. A block of one
// chunk, four values a thread, spent more time in its block sum than in its loads (GPT-2:
// 0.28 ms for 0.5 GB, a third of the memory bandwidth), so each of at most
// kSquaresBlocks blocks takes the chunks blockIdx.x, blockIdx.x + gridDim.x, ... of the
// table (docs/speed_notes.md, item 46). The assignment is fixed: the same sum every run.
constexpr int32_t kSquaresBlocks = 1024;
__global__ void sum_of_squares_kernel(TensorTable table, int32_t chunks, float* partials) {
  __shared__ float shared[32];
  float acc = 0.0f;
  for (int32_t chunk = blockIdx.x; chunk < chunks; chunk += gridDim.x) {
    int t;
    int64_t begin, end;
    locate(table, t, begin, end, chunk);
    with_dtype(table.grad[t], table.grad_dtype[t], [&](auto* g) {
      const int64_t i = begin + 4 * static_cast<int64_t>(threadIdx.x);
      if (i + 4 <= end && four_aligned(g + i)) {
        float x[4];
        load4(g + i, x);
        acc += (x[0] * x[0] + x[1] * x[1]) + (x[2] * x[2] + x[3] * x[3]);
        return;
      }
      for (int64_t j = i; j < min(i + 4, end); ++j) {
        const float gj = static_cast<float>(g[j]);
        acc += gj * gj;
      }
    });
  }
  acc = cuda::block_sum(acc, shared);
  if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

// One block sums the partials in a fixed order, so the norm is the same on every run;
// four sums a thread keep four loads in flight (docs/speed_notes.md, item 42).
constexpr int kPartialsThreads = 1024;
__global__ void sum_partials_kernel(const float* partials, int64_t n, float* out) {
  __shared__ float shared[32];
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  const int64_t stride = 4 * static_cast<int64_t>(blockDim.x);
  for (int64_t i = threadIdx.x; i < n; i += stride) {
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const int64_t j = i + k * static_cast<int64_t>(blockDim.x);
      if (j < n) acc[k] += partials[j];
    }
  }
  const float total = cuda::block_sum((acc[0] + acc[1]) + (acc[2] + acc[3]), shared);
  if (threadIdx.x == 0) out[0] = total;
}

__global__ void scale_multi_kernel(TensorTable table, float factor) {
  int t;
  int64_t begin, end;
  locate(table, t, begin, end);
  with_dtype(table.grad[t], table.grad_dtype[t], [&](auto* g) {
    using T = std::remove_pointer_t<decltype(g)>;
    for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
      g[i] = static_cast<T>(static_cast<float>(g[i]) * factor);
    }
  });
}

// The CUDA twin of clip_factor_cpu (cpu/optimizer_cpu.cpp): both are clip_rule.h, so the
// norm and factor are clip_grad_norm's to the bit (Note [The clip factor on the device],
// optim/grad_clip.cpp).
__global__ void clip_factor_kernel(const float* sum_sq, float max_norm, float grad_scale,
                                   float* out) {
  const float norm = clip_norm(sum_sq[0], grad_scale);
  out[0] = norm;
  out[1] = clip_factor_value(norm, max_norm, grad_scale);
}

// ---------------------------------------------------------------- launchers

// Fills tables of at most kMaxTensors non-empty entries and calls `launch(table, blocks,
// blocks_before)` for each; `add(table, i, entry)` stores entry's pointers at row i.
template <typename Entry, typename Add, typename Launch>
void for_each_table(const std::vector<Entry>& entries, Add add, Launch launch) {
  TensorTable table{};
  int64_t blocks_before = 0;
  auto flush = [&] {
    if (table.count == 0) return;
    const int32_t blocks = table.first_block[table.count];
    launch(table, blocks, blocks_before);
    blocks_before += blocks;
    table = TensorTable{};
  };
  for (const Entry& entry : entries) {
    const int64_t n = add(table, table.count, entry);
    if (n == 0) continue;  // an empty tensor gets no block (and its row is reused)
    table.numel[table.count] = n;
    table.first_block[table.count + 1] =
        table.first_block[table.count] + static_cast<int32_t>((n + kChunk - 1) / kChunk);
    if (++table.count == kMaxTensors) flush();
  }
  flush();
}

float* rows_of(const Tensor& t) { return t.data_ptr<float>(); }

void adamw_cuda(const std::vector<AdamWTensor>& tensors, const AdamWParams& hp) {
  if (tensors.empty()) return;
  cuda::set_device(tensors.front().param);
  // In double, as the CPU kernel does: beta^step underflows gracefully there.
  const double step = static_cast<double>(hp.step);
  const float bc1 = static_cast<float>(1.0 - std::pow(static_cast<double>(hp.beta1), step));
  const float bc2 = static_cast<float>(1.0 - std::pow(static_cast<double>(hp.beta2), step));
  const float* factor = hp.grad_factor.defined() ? rows_of(hp.grad_factor) : nullptr;
  const AdamWScalars s{hp.beta1, hp.beta2, hp.eps, hp.lr / bc1, 1.0f / std::sqrt(bc2), factor};
  const float decay = 1.0f - hp.lr * hp.weight_decay;
  for_each_table(
      tensors,
      [&](TensorTable& table, int i, const AdamWTensor& e) {
        table.param[i] = rows_of(e.param);
        table.grad[i] = e.grad.data();
        table.grad_dtype[i] = e.grad.dtype();
        table.exp_avg[i] = rows_of(e.exp_avg);
        table.exp_avg_sq[i] = rows_of(e.exp_avg_sq);
        table.copy[i] = e.param_copy.defined() ? e.param_copy.data() : nullptr;
        table.copy_dtype[i] = e.param_copy.defined() ? e.param_copy.dtype() : DataType::F32;
        table.decay[i] = e.decay ? decay : 1.0f;
        return e.param.numel();
      },
      [&](const TensorTable& table, int32_t blocks, int64_t) {
        if (factor == nullptr) {
          adamw_multi_kernel<false><<<blocks, kBlock, 0, cuda::current_stream()>>>(table, s);
        } else {
          adamw_multi_kernel<true><<<blocks, kBlock, 0, cuda::current_stream()>>>(table, s);
        }
        ZERO_CUDA_LAUNCH_CHECK();
      });
}

Tensor sum_of_squares_cuda(const std::vector<Tensor>& tensors) {
  ZERO_ASSERT(!tensors.empty(), "sum_of_squares_cuda needs at least one tensor");
  cuda::set_device(tensors.front());
  int64_t total_blocks = 0, tables = 1, filled = 0;  // an upper bound on the launches
  for (const Tensor& t : tensors) {
    total_blocks += (t.numel() + kChunk - 1) / kChunk;
    if (t.numel() > 0 && ++filled % kMaxTensors == 0) ++tables;
  }
  const TensorOption opt = TensorOption().OnDevice(tensors.front().device());  // FP32
  Tensor out = Tensor::Zeros({1}, opt);  // stays 0 when every tensor is empty
  if (total_blocks == 0) return out;
  Tensor partials = Tensor::Empty({std::min(total_blocks, tables * kSquaresBlocks)}, opt);
  auto add = [](TensorTable& table, int i, const Tensor& t) {
    table.grad[i] = t.data();
    table.grad_dtype[i] = t.dtype();
    return t.numel();
  };
  int64_t used = 0;  // partials written so far
  for_each_table(tensors, add, [&](const TensorTable& table, int32_t blocks, int64_t) {
    const int32_t grid = std::min(blocks, kSquaresBlocks);
    ZERO_ASSERT(used + grid <= partials.numel(), "sum_of_squares_cuda: ", used + grid,
                " partials for ", partials.numel());
    sum_of_squares_kernel<<<grid, kBlock, 0, cuda::current_stream()>>>(
        table, blocks, rows_of(partials) + used);
    ZERO_CUDA_LAUNCH_CHECK();
    used += grid;
  });
  sum_partials_kernel<<<1, kPartialsThreads, 0, cuda::current_stream()>>>(rows_of(partials),
                                                                      used, rows_of(out));
  ZERO_CUDA_LAUNCH_CHECK();
  return out;
}

void scale_cuda(const std::vector<Tensor>& tensors, float factor) {
  if (tensors.empty()) return;
  cuda::set_device(tensors.front());
  auto add = [](TensorTable& table, int i, const Tensor& t) {
    table.grad[i] = t.data();
    table.grad_dtype[i] = t.dtype();
    return t.numel();
  };
  for_each_table(tensors, add, [&](const TensorTable& table, int32_t blocks, int64_t) {
    scale_multi_kernel<<<blocks, kBlock, 0, cuda::current_stream()>>>(table, factor);
    ZERO_CUDA_LAUNCH_CHECK();
  });
}

void clip_factor_cuda(const Tensor& sum_sq, float max_norm, float grad_scale, const Tensor& out) {
  cuda::set_device(out);
  clip_factor_kernel<<<1, 1, 0, cuda::current_stream()>>>(rows_of(sum_sq), max_norm, grad_scale,
                                                          rows_of(out));
  ZERO_CUDA_LAUNCH_CHECK();
}

}  // namespace

ZERO_REGISTER_KERNEL(adamw, kCuda, adamw_cuda);
ZERO_REGISTER_KERNEL(sum_of_squares, kCuda, sum_of_squares_cuda);
ZERO_REGISTER_KERNEL(scale, kCuda, scale_cuda);
ZERO_REGISTER_KERNEL(clip_factor, kCuda, clip_factor_cuda);

}  // namespace zero::ops
