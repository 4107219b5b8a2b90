/// @file
/// `LossScaler`: dynamic loss scaling, which keeps FP16 gradients inside FP16's range.
///
/// F16 holds magnitudes from 6e-8 (subnormal) to 65504. Many gradients of a language
/// model are smaller than the low end and would round to zero, so the loss is multiplied
/// by a large scale S before the backward (every gradient is then S times larger), and
/// the FP32 gradients are divided by S again, with the clip, as the optimiser step reads them.
/// S is found as training runs, by the rule of PyTorch's `torch.amp.GradScaler`:
///
/// - a step whose gradients hold an inf or a NaN (their global norm is not finite) made
///   S too large: the update is skipped and S halved;
/// - after `growth_interval` good steps in a row, S is doubled, to use the range again.
///
/// BF16 has FP32's range and FP32 needs no help: their runs use a disabled scaler, whose
/// scale is 1 and whose rule does nothing. Read next: trainer.h (where it is applied).
#pragma once

#include <cstdint>

namespace zero::train {

/// The settings of dynamic loss scaling (PyTorch's GradScaler defaults).
struct LossScalerOptions {
  float init_scale = 65536.0f;     ///< S at the first step: 2^16.
  float growth_factor = 2.0f;      ///< S is multiplied by this after a run of good steps.
  float backoff_factor = 0.5f;     ///< S is multiplied by this after a non-finite step.
  int64_t growth_interval = 2000;  ///< Good steps in a row before S grows.
};

/// The loss scale S and its update rule (see the file comment).
class LossScaler {
 public:
  /// A scaler that scales when `enabled` (F16 training); a disabled one has scale 1.
  /// @throws zero::Error unless init_scale is finite and positive, growth_factor > 1,
  /// backoff_factor in (0, 1) and growth_interval >= 1.
  explicit LossScaler(bool enabled = false, LossScalerOptions options = {});

  /// Whether the scaler scales (F16); a disabled scaler never changes.
  bool enabled() const { return enabled_; }
  /// S: what the loss is multiplied by before the backward (1 when disabled).
  float scale() const { return scale_; }
  /// Good steps in a row since S last changed.
  int64_t good_steps() const { return good_steps_; }
  /// The settings.
  const LossScalerOptions& options() const { return options_; }

  /// Applies the rule after a step whose gradients were `finite` (or not): halves S
  /// (backoff) and restarts the count after a non-finite step, doubles it (growth) after
  /// `growth_interval` finite steps in a row. S stays a finite, positive float: it never
  /// grows past FLT_MAX nor shrinks below the smallest normal float. Returns `finite`,
  /// i.e. whether the step's update should be applied. A disabled scaler only returns it.
  bool Update(bool finite);

  /// Restores a saved state (a resumed run): S and the count of good steps (a count of
  /// growth_interval or more grows S at the next good step).
  /// @throws zero::Error unless `scale` is finite and positive (1 for a disabled scaler)
  /// and `good_steps` >= 0.
  void SetState(float scale, int64_t good_steps);

 private:
  bool enabled_;
  LossScalerOptions options_;
  float scale_;
  int64_t good_steps_ = 0;
};

}  // namespace zero::train
