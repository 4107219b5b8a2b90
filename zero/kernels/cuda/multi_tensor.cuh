// The multi-tensor table the optimiser's CUDA kernels share: AdamW (optimizer.cu) and
// the sum of squares, scaling and clip factor of gradient clipping (grad_clip.cu). A GPT
// has ~80 parameter tensors, many of them small (biases, LayerNorm vectors); one launch
// each would cost more in launch overhead than in arithmetic, so each of these kernels
// covers many tensors per launch. Parameters and moments are FP32; each gradient (and
// each optional copy of an updated parameter) has its own dtype, f32, bf16 or f16,
// recorded in the table, and every block, which covers one tensor, picks its loop by it
// (with_dtype).
#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

#include "zero/kernels/cuda/cuda_common.cuh"

namespace zero::ops::cuda {

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
  bool decays[kMaxTensors];             // whether weight decay applies
  int32_t first_block[kMaxTensors + 1];  // prefix sums of the chunk counts
  DataType grad_dtype[kMaxTensors];
  DataType copy_dtype[kMaxTensors];
  int count;
};

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

inline float* rows_of(const Tensor& t) { return t.data_ptr<float>(); }

}  // namespace zero::ops::cuda
