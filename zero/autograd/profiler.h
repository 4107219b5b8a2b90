/// @file
/// A per-op time breakdown of a training step: how long each op's forward and backward
/// took on the device, summed by name, so a learner can see where a step's time goes.
///
/// While enabled, every op (`TensorOp::Apply` for the forward, `RunBackward` for the
/// backward) and every `profiler::Scope` the trainer opens around non-op work (gradient
/// accumulation, clipping, AdamW) records its start and end. On CUDA those are events
/// on the stream the kernels use, so the figures are GPU time and the host is never
/// stopped while recording; on the CPU, where kernels finish before they return, they
/// are host clock readings. Only the outermost scope counts: the matmuls an op's backward
/// calls are part of that backward, so the rows add up to the profiled time without
/// counting anything twice. Profiling costs a few microseconds per op; it is off by
/// default.
///
/// On the CPU each row is split further, with the time accounts of
/// zero/core/time_accounts.h: the time inside kernels, the time inside the memory pool,
/// and the rest of the op's time, which is the framework's own: recording the autograd
/// graph, creating tensors, checking arguments and dispatching. A small model's step is
/// hundreds of small ops, and this is where their fixed costs show. Read next:
/// zero/train/trainer.h (`Trainer::Profile`).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "zero/core/device.h"

namespace zero::profiler {

/// One line of the breakdown: a name and the time spent under it.
struct Row {
  std::string name;    ///< The op and pass ("OpLinear backward") or the scope's name.
  int64_t calls = 0;   ///< How many times it ran while recording.
  double ms = 0;       ///< Total milliseconds, summed over the calls.
  double kernel_ms = 0;     ///< Of `ms`, inside kernels (CPU only; 0 on CUDA).
  double allocator_ms = 0;  ///< Of `ms`, inside the memory pool (CPU only; 0 on CUDA).
};

/// Starts recording the work of `device` (discarding anything recorded before).
void Start(Device device);
/// Stops recording, waits for the device, and returns the rows, longest first.
std::vector<Row> Stop();
/// True between `Start` and `Stop`.
bool recording();

/// Times everything done during its lifetime under `name` (a string literal: the
/// pointer is kept), unless an enclosing scope already does.
class Scope {
 public:
  /// Opens a scope named `name`.
  explicit Scope(const char* name, const char* pass = nullptr);
  /// Closes it.
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  bool active_ = false;
};

/// The rows as an aligned table with each row's share of `total_ms` (the step's time).
/// When the rows have CPU splits, each row also shows its kernel, allocator and other
/// (autograd and dispatch) time, and a last line sums the step into those accounts.
std::string format_table(const std::vector<Row>& rows, double total_ms, int64_t steps);

}  // namespace zero::profiler
