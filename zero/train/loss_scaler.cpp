// Dynamic loss scaling: the scale and its backoff / growth rule (see loss_scaler.h).
#include "zero/train/loss_scaler.h"

#include <algorithm>
#include <cfloat>
#include <cmath>

#include "zero/core/error.h"

namespace zero::train {

namespace {

void check_scale(const char* what, float scale) {
  ZERO_CHECK(std::isfinite(scale) && scale > 0.0f, what, ": expected a finite, positive loss "
             "scale, got ", scale);
}

}  // namespace

LossScaler::LossScaler(bool enabled, LossScalerOptions options)
    : enabled_(enabled), options_(options), scale_(enabled ? options.init_scale : 1.0f) {
  check_scale("LossScaler", options.init_scale);
  ZERO_CHECK(options.growth_factor > 1.0f && std::isfinite(options.growth_factor),
             "LossScaler: expected a finite growth_factor > 1, got ", options.growth_factor);
  ZERO_CHECK(options.backoff_factor > 0.0f && options.backoff_factor < 1.0f,
             "LossScaler: expected backoff_factor in (0, 1), got ", options.backoff_factor);
  ZERO_CHECK(options.growth_interval >= 1, "LossScaler: expected growth_interval >= 1, got ",
             options.growth_interval);
}

bool LossScaler::Update(bool finite) {
  if (!enabled_) return finite;
  if (!finite) {
    scale_ = std::max(scale_ * options_.backoff_factor, FLT_MIN);
    good_steps_ = 0;
    return false;
  }
  if (++good_steps_ >= options_.growth_interval) {
    const float grown = scale_ * options_.growth_factor;
    if (std::isfinite(grown)) scale_ = grown;
    good_steps_ = 0;
  }
  return true;
}

void LossScaler::SetState(float scale, int64_t good_steps) {
  check_scale("LossScaler::SetState", scale);
  ZERO_CHECK(good_steps >= 0, "LossScaler::SetState: expected good_steps >= 0, got ",
             good_steps);
  ZERO_CHECK(enabled_ || scale == 1.0f, "LossScaler::SetState: a disabled scaler has scale 1, "
             "got ", scale);
  scale_ = scale;
  good_steps_ = good_steps;
}

}  // namespace zero::train
