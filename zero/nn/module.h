/// @file
/// `Module`: a named tree of parameters and submodules, the base of every layer.
///
/// A layer registers its parameters (leaf tensors that require grad) and its sublayers
/// under names; the module tree then answers the questions a trainer asks of a model:
/// every parameter with its dotted name (for the optimiser and checkpoints), the
/// parameter count, training or evaluation mode, the dtype it computes in, and moving
/// everything to a device. Names follow PyTorch, so "transformer.h.0.attn.c_attn.weight"
/// means the same here as in nanoGPT. Read next: nn/layers.h (Linear, LayerNorm, ...),
/// nn/gpt.h.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "zero/core/tensor.h"

namespace zero::nn {

/// Base class of every layer: parameters and submodules registered by name.
///
/// Modules are not copyable: a copy would share parameters by accident. Hold them by
/// `std::shared_ptr` (what `RegisterModule` takes) or as direct members.
class Module {
 public:
  /// An empty module in training mode.
  Module() = default;
  /// Not copyable (a copy would alias the parameters).
  Module(const Module&) = delete;
  /// Not assignable.
  Module& operator=(const Module&) = delete;
  /// Destroys the module and releases its parameters.
  virtual ~Module() = default;

  /// Every parameter with its dotted name, recursively: this module's own parameters in
  /// registration order, then each submodule's (in registration order), prefixed by
  /// the submodule's name, e.g. "transformer.h.0.attn.c_attn.weight".
  std::vector<std::pair<std::string, Tensor>> NamedParameters() const;
  /// The tensors of `NamedParameters()`, in the same order.
  std::vector<Tensor> Parameters() const;
  /// Total number of elements over all parameters.
  int64_t NumParameters() const;

  /// Sets training mode (`on`) or evaluation mode on this module and all submodules
  /// (dropout is active only in training mode).
  void Train(bool on = true);
  /// `Train(false)`.
  void Eval() { Train(false); }
  /// True in training mode (the default).
  bool is_training() const { return training_; }

  /// Sets the dtype this module and all its submodules compute in: F32 (the default),
  /// BF16 or F16. The parameters stay F32 master weights; each Forward casts them, and
  /// its input, to this dtype where it uses them (Note [Mixed precision]).
  /// @throws zero::Error for I32.
  void SetComputeDtype(DataType dtype);
  /// The dtype the module computes in (`SetComputeDtype`).
  DataType compute_dtype() const { return compute_dtype_; }

  /// Moves every parameter (and its gradient) to `device` in place: every `Tensor`
  /// handle to a parameter, in this module or held elsewhere (an optimiser), stays valid
  /// and now reads the moved data. See Note [Moving parameters in place].
  void To(Device device);
  /// Drops every parameter's gradient.
  void ZeroGrad();
  /// Device of the parameters (the CPU for a module without any).
  Device device() const;

 protected:
  /// Registers `value` as a parameter called `name` and marks it a leaf that requires
  /// grad. Returns the stored handle (stable for the module's lifetime); throws if
  /// `name` is taken, empty or holds a '.'.
  Tensor& RegisterParameter(const std::string& name, Tensor value);
  /// Registers `module` as the submodule `name` and returns it; same naming rules.
  template <typename M>
  std::shared_ptr<M> RegisterModule(const std::string& name, std::shared_ptr<M> module) {
    AddModule_(name, module);
    return module;
  }

 private:
  void CheckName_(const std::string& name) const;
  void AddModule_(const std::string& name, std::shared_ptr<Module> module);
  void CollectParameters_(const std::string& prefix,
                          std::vector<std::pair<std::string, Tensor>>& out) const;

  // A deque, so the references RegisterParameter returns survive later registrations.
  std::deque<std::pair<std::string, Tensor>> parameters_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> modules_;
  bool training_ = true;
  DataType compute_dtype_ = DataType::F32;
};

// Note [Mixed precision]
// Parameters are always FP32: the master weights that the optimiser updates and that
// checkpoints save. A module set to compute in BF16 or F16 casts each parameter to that
// dtype where its Forward uses it (`to_dtype`, one graph node per use), so activations
// flow in 16 bits, and each parameter's gradient comes back in FP32: the ops that make
// parameter gradients write them in FP32 from their FP32 sums, and the engine passes
// them by the cast (Note [Gradients past a cast] in autograd/engine.cpp); a cast's
// backward widens any other gradient. AdamW, gradient clipping, the gradient norm and
// checkpoints therefore see FP32 only, and need no change. Inside the kernels every product, sum and statistic
// (softmax, LayerNorm, logsumexp) accumulates in FP32 and each result is rounded once
// into 16 bits. The shape is PyTorch autocast's, with one difference: here every op of
// the model computes in the module's dtype, the residual stream included, as llm.c
// does; only the loss comes out in FP32. F16's narrow range needs loss scaling during
// training (zero/train/loss_scaler.h); BF16 has FP32's range and needs none.

/// A module that only holds other modules under names: the containers of a model's
/// name tree ("transformer", "h"), like PyTorch's `ModuleDict` and `ModuleList`.
class ModuleDict : public Module {
 public:
  /// Registers `module` under `name` (e.g. "wte", or "0" for the first block) and returns it.
  template <typename M>
  std::shared_ptr<M> Add(const std::string& name, std::shared_ptr<M> module) {
    return RegisterModule(name, std::move(module));
  }
};

/// Puts a module in evaluation mode for the guard's lifetime, then restores the mode
/// the module had (its own flag, applied to the whole tree again).
class EvalGuard {
 public:
  /// Calls `module.Eval()`, remembering `module.is_training()`.
  explicit EvalGuard(Module& module);
  /// Calls `module.Train(previous mode)`.
  ~EvalGuard();
  /// Not copyable.
  EvalGuard(const EvalGuard&) = delete;
  /// Not assignable.
  EvalGuard& operator=(const EvalGuard&) = delete;

 private:
  Module& module_;
  bool was_training_;
};

}  // namespace zero::nn
