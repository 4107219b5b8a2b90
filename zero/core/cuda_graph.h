/// @file
/// `CudaGraph`: a piece of host code's GPU work, captured once and replayed as one launch.
///
/// A training step of a fixed shape launches the same few hundred kernels, with the same
/// arguments, every time. Launched one by one, each costs the host a few microseconds and
/// the GPU a gap of a microsecond or two between kernels. Captured into a CUDA graph, the
/// whole step is one `cudaGraphLaunch`. Three things must then hold, and this header
/// provides them (see Note [The step as one CUDA graph] in core/cuda/cuda_graph.cu):
/// the kernels are launched on a capturing stream (`launch_stream()`), the memory they
/// touch stays theirs (Note [Blocks a graph uses] in tensor_context.h), and what changes
/// from step to step is read on the device: the data by copies into fixed inputs, the
/// learning rate by AdamW's scalars (optim/adamw.h), the random numbers by a shift of
/// the Philox offsets (`philox_shift()`).
#pragma once

#include <cstdint>
#include <functional>

namespace zero::cuda {

/// The stream this host thread launches Zero's kernels on: the legacy default stream
/// (null), or the capturing stream while a `CudaGraph` captures.
void* launch_stream();

/// Null, or while a `CudaGraph` captures, the device address of a word added to every
/// Philox offset that this thread's kernels draw from, so that each replay draws new
/// numbers (the graph's `Replay(shift)` sets it). Kernels read it once, at their start.
const uint64_t* philox_shift();

/// One captured piece of GPU work on one device. Move-less; its destructor waits for
/// its last replay, then gives its memory back to the allocator.
class CudaGraph {
 public:
  /// An empty graph for GPU `device`.
  explicit CudaGraph(int device);
  ~CudaGraph();
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;

  /// Runs `work` on the host with every kernel it launches recorded, not run. Throws
  /// (and leaves this graph empty) if `work` throws or does something a graph cannot
  /// hold: a copy to the host, a wait for the GPU, a launch on another stream.
  void Capture(const std::function<void()>& work);
  /// Queues the captured work on the legacy default stream, its Philox offsets moved by
  /// `shift` words (a multiple of 4, so that every kernel's Philox blocks move whole).
  void Replay(uint64_t shift = 0);
  /// True after a successful `Capture`.
  bool captured() const { return exec_ != nullptr; }

 private:
  void Release();

  int device_;
  void* stream_ = nullptr;    // cudaStream_t the capture ran on
  void* exec_ = nullptr;      // cudaGraphExec_t
  uint64_t* shift_ = nullptr;  // device word read through philox_shift()
  uint64_t last_shift_ = 0;    // its value
  bool pool_kept_ = false;    // BeginGraph called on the device's allocator
};

}  // namespace zero::cuda
