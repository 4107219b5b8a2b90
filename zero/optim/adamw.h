/// @file
/// `AdamW`: Adam with decoupled weight decay, the optimiser GPTs are trained with.
///
/// The optimiser keeps two moments per parameter (`exp_avg`, `exp_avg_sq`, PyTorch's
/// names) and updates every parameter that has a gradient in `Step()` with one call of
/// the multi-tensor kernel `ops::adamw` (kernels/optimizer.cpp): on CUDA, one launch for
/// dozens of tensors. `Step(grad_factor)` also applies gradient clipping, as a factor
/// left on the device by `optim::clip_factor` (grad_clip.h), in that same pass.
/// Read next: optim/grad_clip.h, optim/lr_schedule.h.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "zero/core/tensor.h"

namespace zero::optim {

/// Hyper-parameters of AdamW. Defaults are nanoGPT's for the character GPT.
struct AdamWOptions {
  float lr = 1e-3f;            ///< Learning rate (change it per step with `SetLr`).
  float beta1 = 0.9f;          ///< Decay of the first moment.
  float beta2 = 0.99f;         ///< Decay of the second moment.
  float eps = 1e-8f;           ///< Added to the root of the second moment.
  float weight_decay = 0.1f;   ///< Decoupled decay, for parameters with dim >= 2 only.
};

/// AdamW over a fixed list of named parameters.
///
/// Weight decay applies to parameters of two or more dimensions (the matrices of the
/// Linear layers and the embedding tables) and not to vectors (biases, LayerNorm
/// weights and biases), as in nanoGPT: decaying a LayerNorm scale towards 0 or a bias
/// towards 0 is not a useful prior.
class AdamW {
 public:
  /// Moments start at zero on each parameter's device. Throws if a tensor is listed
  /// twice, is undefined or does not require grad.
  AdamW(std::vector<std::pair<std::string, Tensor>> named_params, AdamWOptions options = {});

  /// Advances the step count and updates, in place, every parameter that has a
  /// gradient (the others, and their moments, are left as they are). Records nothing
  /// for autograd.
  void Step();
  /// `Step()` with every gradient multiplied by `grad_factor`, a one-element F32 tensor on
  /// the parameters' device (element 1 of `clip_factor`), read there: nothing waits
  /// for the device. When the factor is not finite the update writes nothing (no
  /// parameter or moment changes) but the step is still counted, since only the device
  /// knows; a caller that later reads the factor, or the norm, and finds it not finite
  /// calls `UncountStep()`, so that the next step has the bias correction it would have
  /// had. @throws zero::Error if `grad_factor` is not such a tensor.
  void Step(const Tensor& grad_factor);
  /// Takes back the count of the last `Step`, whose update the device skipped (a
  /// non-finite `grad_factor`): `step()` goes down by one and nothing else changes.
  /// @throws zero::Error when `step()` is 0.
  void UncountStep();
  /// Drops every parameter's gradient.
  void ZeroGrad();

  /// `Step(grad_factor)` in two halves, for a step captured as a CUDA graph
  /// (core/cuda_graph.h): `PrepareStep` counts the step and writes its constants (from
  /// the learning rate and the count) to the device, `ApplyStep` launches the update,
  /// which reads them there. Captured, `ApplyStep` is replayed as it was, and the
  /// `PrepareStep` before each replay gives it that step's learning rate and bias
  /// correction. CUDA parameters only.
  void PrepareStep();
  /// The update of the step `PrepareStep` counted; see `PrepareStep`.
  void ApplyStep(const Tensor& grad_factor);

  /// Sets the learning rate used by the next `Step()`.
  void SetLr(float lr);
  /// The current learning rate.
  float lr() const { return options_.lr; }
  /// Number of `Step` calls so far, less those taken back by `UncountStep` (the bias
  /// correction uses step() after the increment).
  int64_t step() const { return step_; }
  /// The hyper-parameters.
  const AdamWOptions& options() const { return options_; }
  /// True when parameter `name` gets weight decay; throws for an unknown name.
  bool decays(const std::string& name) const;

  /// The moments by name, "<param>.exp_avg" and "<param>.exp_avg_sq" for each parameter
  /// in order: the live tensors, for saving.
  std::vector<std::pair<std::string, Tensor>> NamedState() const;
  /// Copies moments saved by `NamedState()` (from any device) into this optimiser and
  /// sets the step count. Throws, naming the tensor, on a missing, unknown or
  /// mis-shaped entry.
  void LoadState(const std::vector<std::pair<std::string, Tensor>>& state, int64_t step);

 private:
  struct Slot {
    std::string name;
    Tensor param;
    Tensor exp_avg;     // m
    Tensor exp_avg_sq;  // v
    bool decay;
  };
  // Step and Step(grad_factor): `grad_factor` undefined for none.
  void StepWith(const Tensor& grad_factor);
  // The update of step step_; `scalars` defined to read its constants on the device.
  void Update(const Tensor& grad_factor, const Tensor& scalars);
  void CheckFactor(const Tensor& grad_factor) const;

  std::vector<Slot> slots_;
  AdamWOptions options_;
  int64_t step_ = 0;
  Tensor scalars_;  // PrepareStep's constants on the device (3 F32)
};

}  // namespace zero::optim
