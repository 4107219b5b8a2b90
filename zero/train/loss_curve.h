/// @file
/// `write_loss_curve_png`: the training and validation loss against the step, as a PNG.
///
/// `train_gpt` redraws the picture at every evaluation, so a run in progress can be
/// watched with any image viewer and a finished run leaves its curve beside its
/// checkpoints. Drawn on the small raster of canvas.h, saved by io::write_png.
/// Read next: metrics.h (the same numbers as a JSONL log).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "zero/train/canvas.h"

namespace zero::train {

/// One point of a loss curve.
struct LossPoint {
  int64_t step = 0;   ///< Optimiser step the loss was measured at.
  float loss = 0.0f;  ///< Mean cross-entropy, in nats per token.
};

/// Draws the curves onto a `width` x `height` canvas: axes with numbered ticks, light
/// grid lines, `train` as a thin blue line, `val` as a thicker orange line with a mark
/// at each point, a legend and `title` on top. Points whose loss is not finite are
/// skipped; either series may be empty.
Canvas draw_loss_curve(const std::vector<LossPoint>& train, const std::vector<LossPoint>& val,
                       const std::string& title, int width = 800, int height = 500);

/// `draw_loss_curve(train, val, title)` written to `path` as a PNG (replacing it atomically).
/// @throws zero::Error if the file cannot be written.
void write_loss_curve_png(const std::string& path, const std::vector<LossPoint>& train,
                          const std::vector<LossPoint>& val, const std::string& title);

/// The spacing of about `max_ticks` "nice" ticks (1, 2 or 5 times a power of ten)
/// covering `range` (> 0): e.g. 0.2 for a range of 1.3 and 6 ticks.
double nice_tick_step(double range, int max_ticks);

}  // namespace zero::train
