// Exercise 03: a two-number model of what a copy between host and GPU costs.
//
// A copy of n bytes takes about  t(n) = latency + n / bandwidth : a fixed price per
// call (driver work, setting up the DMA engine, a round trip over PCIe) plus the
// time to stream the bytes over the link. Chapter 03's program measures copies from
// 1 KB to 256 MB, fits this model to them with fit_copy_model() and prints what it
// predicts. Plain C++, so tests/exercises/03_device checks it without a GPU.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "zero/core/error.h"

namespace ch03 {

/// One measured copy: its size and how long it took.
struct CopySample {
  double bytes;
  double seconds;
};

/// t(n) = latency_s + n / bytes_per_s.
struct CopyModel {
  double latency_s = 0.0;    // the fixed cost of one call, whatever its size
  double bytes_per_s = 0.0;  // the link's bandwidth, reached by very large copies

  // Predicted time of one copy of `bytes`.
  double Seconds(double bytes) const {
    // BEGIN SOLUTION ex03.1: the fixed latency plus the time to stream the bytes
    return latency_s + bytes / bytes_per_s;
    // END SOLUTION
  }

  // The bandwidth one copy of `bytes` achieves: below n_1/2 the latency dominates.
  double EffectiveBytesPerS(double bytes) const { return bytes / Seconds(bytes); }

  // n_1/2: the copy size that reaches half of `bytes_per_s` (Hockney's half-performance
  // length), where streaming takes exactly as long as the latency.
  double HalfBandwidthBytes() const {
    // BEGIN SOLUTION ex03.2: the size whose streaming time equals the latency
    return latency_s * bytes_per_s;
    // END SOLUTION
  }
};

// Fits the model to measurements. Plain least squares on t would be ruled by the
// largest copies (1% noise on a 10 ms copy is 100 us, ten times a typical latency),
// so minimise the *relative* error sum(((a + b n_i - t_i) / t_i)^2) instead: a
// weighted least-squares line with weights 1 / t_i^2. Then the small copies fix the
// latency a and the large ones the slope b = 1 / bandwidth.
// Throws zero::Error for a time that is not positive, when all sizes are equal (no
// slope to fit) and when the fitted time does not grow with size. latency_s is never
// negative: an intercept that noise pushes below zero becomes 0.
inline CopyModel fit_copy_model(const std::vector<CopySample>& samples) {
  ZERO_CHECK(samples.size() >= 2, "fit_copy_model: expected at least two measurements, got ",
             samples.size());
  // BEGIN SOLUTION ex03.3: weighted least squares of seconds on bytes, weights 1 / seconds^2
  // Weighted means first, then centred sums: numerically safe although n spans 1e3..1e9.
  double w_sum = 0, n_mean = 0, t_mean = 0;
  for (const CopySample& s : samples) {
    ZERO_CHECK(s.seconds > 0, "fit_copy_model: expected positive times, got ", s.seconds);
    const double w = 1.0 / (s.seconds * s.seconds);
    w_sum += w;
    n_mean += w * s.bytes;
    t_mean += w * s.seconds;
  }
  n_mean /= w_sum;
  t_mean /= w_sum;
  double snn = 0, snt = 0;
  for (const CopySample& s : samples) {
    const double w = 1.0 / (s.seconds * s.seconds);
    snn += w * (s.bytes - n_mean) * (s.bytes - n_mean);
    snt += w * (s.bytes - n_mean) * (s.seconds - t_mean);
  }
  ZERO_CHECK(snn > 0, "fit_copy_model: expected at least two different sizes");
  const double slope = snt / snn;  // seconds per byte
  ZERO_CHECK(slope > 0, "fit_copy_model: expected time to grow with size, got slope ", slope);
  CopyModel model;
  model.bytes_per_s = 1.0 / slope;
  // Noise can push the intercept slightly below zero; a call never takes negative time.
  model.latency_s = std::max(0.0, t_mean - slope * n_mean);
  return model;
  // END SOLUTION
}

// How well a model describes measurements: the largest |predicted / measured - 1|.
inline double worst_relative_error(const CopyModel& model, const std::vector<CopySample>& samples) {
  double worst = 0;
  for (const CopySample& s : samples) {
    worst = std::max(worst, std::abs(model.Seconds(s.bytes) / s.seconds - 1.0));
  }
  return worst;
}

}  // namespace ch03
