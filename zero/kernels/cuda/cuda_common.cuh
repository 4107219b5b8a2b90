// Device helpers shared by the .cu files of kernels/cuda/: launch geometry, the
// stream every kernel is launched on, and vectorised-access tests.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "zero/core/cuda/cuda_check.cuh"
#include "zero/core/cuda_graph.h"
#include "zero/core/tensor.h"

// Note [Bad indices on the GPU]
// A kernel cannot throw. Checking ids or targets on the host before each launch
// would copy them back and synchronise every training step, so the CUDA kernels
// instead write NaN where an index is out of range (the embedding row, the loss),
// and the NaN surfaces in the next printed loss. The CPU kernels check and throw
// with the position and value; rerun on the CPU to find the culprit.

namespace zero::ops::cuda {

using zero::cuda::launch_stream;
using zero::cuda::philox_shift;

// 256 threads a block: 8 warps, enough to hide latency, small enough for many
// resident blocks per SM.
constexpr int kBlock = 256;

// Blocks needed to give each of `n` items one thread (at least 1 block).
inline unsigned int grid_for(int64_t n, int per_thread = 1) {
  const int64_t threads = (n + per_thread - 1) / per_thread;
  return static_cast<unsigned int>((threads + kBlock - 1) / kBlock > 0 ? (threads + kBlock - 1) / kBlock : 1);
}

// The stream Zero's kernels run on: the legacy default stream, so every kernel is
// ordered after the one before it and the caching allocator may reuse a block at once;
// while a CUDA graph captures, that graph's stream (Note [The step as one CUDA graph] in
// core/cuda/cuda_graph.cu). Side streams are the caller's (zero/core/stream.h, chapter
// 08), with the rule of Note [Tensors used on another stream] there.
inline cudaStream_t current_stream() { return static_cast<cudaStream_t>(launch_stream()); }

// Selects the tensor's GPU for the calls that follow.
inline void set_device(const Tensor& t) { ZERO_CUDA_CHECK(cudaSetDevice(t.device().index())); }

// True when `t` is contiguous and its first element is 16-byte aligned, so it can
// be read as float4.
inline bool vec4_ok(const Tensor& t) {
  return t.is_contiguous() && reinterpret_cast<uintptr_t>(t.data()) % 16 == 0;
}

// Elements of T in one 16-byte load: 4 floats, or 8 BF16 or F16 values, and the
// 16-byte group a thread loads or stores in one instruction.
template <typename T>
constexpr int kPack = 16 / sizeof(T);
template <typename T>
struct alignas(16) Pack {
  T v[kPack<T>];
};

// Attribute `attr` of GPU `device` (its SM count, compute capability, ...), asked of
// the driver once and remembered (cuda_common.cu).
int device_attribute(int device, cudaDeviceAttr attr);

}  // namespace zero::ops::cuda
