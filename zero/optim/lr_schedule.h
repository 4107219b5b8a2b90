/// @file
/// `lr_at`: the learning-rate schedule of GPT training, a linear warmup then a cosine
/// decay to a floor (nanoGPT's `get_lr`).
#pragma once

#include <cstdint>

namespace zero::optim {

/// The learning rate for 0-based step `step`:
///   - warmup, `step < warmup`: `lr_max * (step + 1) / warmup`, rising linearly so that
///     the last warmup step (step = warmup - 1) uses lr_max and step 0 already moves;
///   - decay, `warmup <= step < max_steps`: `lr_min + (lr_max - lr_min) * (1 + cos(pi * r)) / 2`
///     with `r = (step - warmup) / (max_steps - warmup)`, so step = warmup gives lr_max and
///     the curve approaches lr_min as step nears max_steps;
///   - after, `step >= max_steps`: `lr_min`.
/// @throws zero::Error unless 0 <= warmup <= max_steps, step >= 0 and 0 <= lr_min <= lr_max.
float lr_at(int64_t step, int64_t warmup, int64_t max_steps, float lr_max, float lr_min);

}  // namespace zero::optim
