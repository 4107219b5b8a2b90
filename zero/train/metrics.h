/// @file
/// `MetricsLog`: one JSON object per logged training step, appended to a `.jsonl` file.
///
/// A line looks like
/// `{"step":100,"loss":2.1234,"val_loss":2.2011,"lr":0.001,"ms":45.2,"tokens_per_s":362000,"mfu":0.123,"mem_gib":1.2,"dtype":"bf16","skipped":0}`
/// (`val_loss` only on steps that were evaluated, `mfu` only when a peak is known,
/// `dtype`, `skipped` and `loss_scale` when the trainer gave them, `loss_scale` in F16). JSON
/// Lines survive a crash mid-run (every complete line is a record) and load with one call
/// in Python (`pandas.read_json(path, lines=True)`). The loss curve is redrawn from it.
/// Read next: loss_curve.h.
#pragma once

#include <cstdint>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "zero/train/loss_curve.h"

namespace zero::train {

/// What is recorded about one training step.
struct StepMetrics {
  int64_t step = 0;               ///< Optimiser steps done when it was measured.
  float loss = 0.0f;              ///< Training loss of that step's batch.
  std::optional<float> val_loss;  ///< Mean validation loss, when evaluated at this step.
  float lr = 0.0f;                ///< Learning rate the step used.
  double ms = 0.0;                ///< Wall time of the step, milliseconds.
  double tokens_per_s = 0.0;      ///< Training tokens processed per second.
  std::optional<double> mfu;      ///< Model FLOPs utilisation, 0..1 (see flops.h).
  double mem_gib = 0.0;           ///< Peak memory of the device's allocator, GiB.
  /// The dtype the model computes in, as `--dtype` names it ("fp32", "bf16", "fp16").
  std::optional<std::string> dtype;
  /// Updates skipped so far in the run for a non-finite gradient norm.
  std::optional<int64_t> skipped;
  /// The loss scale after the step (F16 runs, loss_scaler.h).
  std::optional<float> loss_scale;
};

/// The JSON line of one record (no trailing newline).
std::string to_json_line(const StepMetrics& m);
/// Parses a line written by `to_json_line`. @throws zero::Error on malformed input.
StepMetrics from_json_line(const std::string& line);

/// The console line of a record, e.g.
/// `step 100/5000 | loss 2.1234 | lr 1.00e-03 | 45.2 ms | 362k tok/s | mfu 12.3% | mem 1.2 GiB`
/// (the mfu part only when known, memory in MiB below 1 GiB; a val_loss is not part of
/// it), then the dtype when known (` | bf16`), then ` | scale 65536 | skipped 2` with a
/// loss scale, or ` | skipped 2` alone when some updates were skipped.
std::string format_log_line(const StepMetrics& m, int64_t max_steps);

/// A rate in a few characters: 950, 3.1k, 362k, 1.25M.
std::string format_rate(double per_second);

/// Reads every record of a metrics file; a missing file reads as empty. A line that is
/// not a record (the last line cut short by a crash, or a line damaged by hand) is
/// skipped and counted in `*skipped` when given, so one bad line never makes a run
/// impossible to resume.
std::vector<StepMetrics> read_metrics(const std::string& path, int64_t* skipped = nullptr);

/// The (step, loss) points of `records`, and the (step, val_loss) points of those that
/// have one, ready for `write_loss_curve_png`.
void loss_points(const std::vector<StepMetrics>& records, std::vector<LossPoint>* train,
                 std::vector<LossPoint>* val);

/// Appends records to a JSONL file, flushing each line.
///
/// Crash safety: a new or resumed log is first written whole through
/// `io::write_file_atomically` (so a crash then leaves the old file or the new one, never
/// a cut one); after that each record is one appended line, and a crash can at worst cut
/// the last line, which `read_metrics` skips.
class MetricsLog {
 public:
  /// Starts a log at `path`. With `resume_step` < 0 any existing file is replaced;
  /// otherwise the records of a resumed run are kept up to and including step
  /// `resume_step` (later ones belong to steps the resumed run will redo), and lines
  /// that are not records are dropped (counted by `skipped_lines`).
  /// @throws zero::Error if the file cannot be written.
  explicit MetricsLog(const std::string& path, int64_t resume_step = -1);
  /// Appends one record. @throws zero::Error if the write fails.
  void Write(const StepMetrics& m);
  /// Every record written so far, including those kept from a resumed run.
  const std::vector<StepMetrics>& records() const { return records_; }
  /// The file written to.
  const std::string& path() const { return path_; }
  /// Lines of a resumed log that were not records and were dropped.
  int64_t skipped_lines() const { return skipped_; }

 private:
  std::string path_;
  std::ofstream out_;  // append-only after the atomic start: see "Crash safety" above
  std::vector<StepMetrics> records_;
  int64_t skipped_ = 0;
};

}  // namespace zero::train
