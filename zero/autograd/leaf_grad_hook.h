/// @file
/// A thread-local hook that `Backward()` calls as soon as a leaf's gradient is final.
///
/// Data-parallel training (zero/distributed/data_parallel.h) all-reduces gradients while the
/// backward pass is still running: the last layers' gradients are ready long before the
/// first layers'. For that it must know the moment a parameter has received its *last*
/// contribution in this pass. A weight used twice (GPT's tied token embedding, read by
/// the first and the last layer) receives two, far apart. The engine knows the order of
/// the whole pass before it starts, so it finds, for every leaf, the last op that sends
/// it a gradient, and calls the hook right after that op. Read next: engine.cpp.
#pragma once

#include <functional>

#include "zero/core/tensor.h"

namespace zero::autograd {

/// Called once per leaf (that requires grad and is reached) in each `Backward()`, right
/// after its `.Grad()` has received the pass's last contribution, with the leaf itself.
/// Runs with gradient recording off; an exception it throws leaves `Backward()`.
using LeafGradHook = std::function<void(const Tensor& leaf)>;

/// Installs a `LeafGradHook` on this thread for its lifetime, then restores the
/// previous one (guards nest).
class LeafGradHookGuard {
 public:
  /// Makes `hook` the hook of every `Backward()` this thread runs while the guard lives.
  explicit LeafGradHookGuard(LeafGradHook hook);
  ~LeafGradHookGuard();
  LeafGradHookGuard(const LeafGradHookGuard&) = delete;             ///< Not copyable.
  LeafGradHookGuard& operator=(const LeafGradHookGuard&) = delete;  ///< Not copyable.

 private:
  LeafGradHook hook_;
  const LeafGradHook* previous_;
};

/// The hook installed on this thread, or null when there is none (for the engine).
const LeafGradHook* current_leaf_grad_hook();

}  // namespace zero::autograd
