// The warmup + cosine learning-rate schedule (see optim/lr_schedule.h for the formula).
// Warmup keeps the first updates small while Adam's second-moment estimates are still
// noisy; the cosine spends most of the run at high rates and lands gently on lr_min.
#include "zero/optim/lr_schedule.h"

#include <cmath>

#include "zero/core/error.h"

namespace zero::optim {

float lr_at(int64_t step, int64_t warmup, int64_t max_steps, float lr_max, float lr_min) {
  ZERO_CHECK(warmup >= 0 && warmup <= max_steps, "lr_at: expected 0 <= warmup <= max_steps, "
             "got warmup = ", warmup, ", max_steps = ", max_steps);
  ZERO_CHECK(step >= 0, "lr_at: expected a step >= 0, got ", step);
  ZERO_CHECK(lr_min >= 0.0f && lr_min <= lr_max, "lr_at: expected 0 <= lr_min <= lr_max, got "
             "lr_min = ", lr_min, ", lr_max = ", lr_max);
  if (step < warmup) {
    return static_cast<float>(static_cast<double>(lr_max) * static_cast<double>(step + 1) /
                              static_cast<double>(warmup));
  }
  if (step >= max_steps) return lr_min;
  const double kPi = 3.14159265358979323846;
  const double ratio = static_cast<double>(step - warmup) / static_cast<double>(max_steps - warmup);
  const double coeff = 0.5 * (1.0 + std::cos(kPi * ratio));  // 1 -> 0
  return static_cast<float>(lr_min + coeff * (static_cast<double>(lr_max) - lr_min));
}

}  // namespace zero::optim
