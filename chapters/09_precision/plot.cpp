// Chapter 09 · the two figures: a general x-y plot on zero::train::Canvas (linear or
// log axes, several series, a legend), which gpu.cu uses for the roofline per precision,
// and the --curves mode, which reads the metrics.jsonl files of train_gpt runs
// (zero/train/metrics.h) and overlays their loss curves. The single-run loss curve that
// train_gpt draws itself is zero/train/loss_curve.cpp; this file follows its look.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "chapter.h"
#include "zero/core/error.h"
#include "zero/io/png.h"
#include "zero/train/loss_curve.h"
#include "zero/train/metrics.h"

namespace ch09 {

using zero::train::Canvas;
using zero::train::Rgb;

namespace {

constexpr Rgb kInk{30, 30, 30}, kAxis{70, 70, 70}, kGrid{228, 228, 228}, kMinor{242, 242, 242};
constexpr Rgb kWhite{255, 255, 255};
constexpr int kScale = 2;  // font pixels are 2 x 2

// One axis: data range [lo, hi] (in log10 units on a log axis), ticks every `step`.
struct Axis {
  bool log;
  double lo, hi, step;
  double map(double v) const { return ((log ? std::log10(v) : v) - lo) / (hi - lo); }
};

Axis make_axis(bool log, double lo, double hi) {
  if (log) {
    lo = std::floor(std::log10(lo));
    hi = std::max(std::ceil(std::log10(hi)), lo + 1);
    return {true, lo, hi, 1.0};
  }
  if (!(hi > lo)) {
    lo -= 0.5;
    hi += 0.5;
  }
  const double step = zero::train::nice_tick_step(hi - lo, 7);
  return {false, std::floor(lo / step) * step, std::ceil(hi / step) * step, step};
}

std::string tick_label(const Axis& a, double t) {
  char buf[32];
  if (a.log) {
    std::snprintf(buf, sizeof buf, "%g", std::pow(10.0, t));
  } else {
    const int decimals = std::max(0, static_cast<int>(std::ceil(-std::log10(a.step) - 1e-9)));
    std::snprintf(buf, sizeof buf, "%.*f", decimals, std::fabs(t) < a.step * 1e-6 ? 0.0 : t);
  }
  return buf;
}

bool usable(const PlotFrame& f, double x, double y) {
  return std::isfinite(x) && std::isfinite(y) && (!f.log_x || x > 0) && (!f.log_y || y > 0);
}

}  // namespace

Rgb precision_color(int i) {
  static const Rgb palette[] = {{31, 119, 180}, {44, 160, 44},   {230, 110, 0},
                                {214, 39, 40},  {148, 103, 189}, {140, 86, 75}};
  return palette[static_cast<size_t>(i) % 6];
}

Canvas draw_plot(const PlotFrame& frame, const std::vector<Series>& series, int width, int height) {
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo, y_lo = x_lo, y_hi = -x_lo;
  for (const Series& s : series) {
    for (const auto& [x, y] : s.points) {
      if (!usable(frame, x, y)) continue;
      x_lo = std::min(x_lo, x), x_hi = std::max(x_hi, x);
      y_lo = std::min(y_lo, y), y_hi = std::max(y_hi, y);
    }
  }
  if (!std::isfinite(x_lo)) x_lo = y_lo = 1, x_hi = y_hi = 10;  // nothing to draw
  const Axis xs = make_axis(frame.log_x, x_lo, x_hi), ys = make_axis(frame.log_y, y_lo, y_hi);
  Canvas canvas(width, height);
  const int glyph_h = Canvas::TextHeight(kScale);
  const int left = 24 + Canvas::TextWidth("00000", kScale), right = width - 28;
  const int top = 56, bottom = height - 64;
  auto px = [&](double x) {
    return left + static_cast<int>(std::lround(xs.map(x) * (right - left)));
  };
  auto py = [&](double y) {
    return bottom - static_cast<int>(std::lround(ys.map(y) * (bottom - top)));
  };
  auto value = [](const Axis& a, double t) { return a.log ? std::pow(10.0, t) : t; };

  // Minor grid lines at 2..9 of each decade on a log axis, then the ticks.
  for (double t = xs.lo; frame.log_x && t < xs.hi; t += 1) {
    for (int k = 2; k <= 9; ++k)
      canvas.Line(px(k * value(xs, t)), top, px(k * value(xs, t)), bottom, kMinor);
  }
  for (double t = ys.lo; frame.log_y && t < ys.hi; t += 1) {
    for (int k = 2; k <= 9; ++k)
      canvas.Line(left, py(k * value(ys, t)), right, py(k * value(ys, t)), kMinor);
  }
  for (double t = xs.lo; t <= xs.hi + xs.step * 1e-6; t += xs.step) {
    const int x = px(value(xs, t));
    canvas.Line(x, top, x, bottom, kGrid);
    canvas.Line(x, bottom, x, bottom + 5, kAxis);
    const std::string label = tick_label(xs, t);
    canvas.Text(x - Canvas::TextWidth(label, kScale) / 2, bottom + 10, label, kInk, kScale);
  }
  for (double t = ys.lo; t <= ys.hi + ys.step * 1e-6; t += ys.step) {
    const int y = py(value(ys, t));
    canvas.Line(left, y, right, y, kGrid);
    canvas.Line(left - 5, y, left, y, kAxis);
    const std::string label = tick_label(ys, t);
    canvas.Text(left - 10 - Canvas::TextWidth(label, kScale), y - glyph_h / 2, label, kInk, kScale);
  }
  canvas.Line(left, top, left, bottom, kAxis, 2);
  canvas.Line(left, bottom, right, bottom, kAxis, 2);
  canvas.Text((left + right - Canvas::TextWidth(frame.x_label, kScale)) / 2, bottom + 16 + glyph_h,
              frame.x_label, kInk, kScale);
  canvas.Text(std::max(4, left - Canvas::TextWidth(frame.y_label, kScale) / 2), top - 12 - glyph_h,
              frame.y_label, kInk, kScale);
  canvas.Text((width - Canvas::TextWidth(frame.title, kScale)) / 2, 12, frame.title, kInk, kScale);

  for (const Series& s : series) {
    bool have_prev = false;
    int x0 = 0, y0 = 0;
    for (const auto& [x, y] : s.points) {
      if (!usable(frame, x, y)) continue;
      const int x1 = px(x), y1 = py(y);
      if (s.line && have_prev) canvas.Line(x0, y0, x1, y1, s.color, s.thickness);
      if (s.marks) canvas.FillRect(x1 - 3, y1 - 3, x1 + 3, y1 + 3, s.color);
      x0 = x1, y0 = y1, have_prev = true;
    }
  }

  std::vector<const Series*> named;
  int text_w = 0;
  for (const Series& s : series) {
    if (s.name.empty()) continue;
    named.push_back(&s);
    text_w = std::max(text_w, Canvas::TextWidth(s.name, kScale));
  }
  if (!named.empty()) {
    const int row_h = glyph_h + 8, box_w = 40 + text_w + 16;
    const int x0 = frame.legend_left ? left + 10 : right - box_w - 10, y0 = top + 10;
    const int y1 = y0 + row_h * static_cast<int>(named.size()) + 8;
    canvas.FillRect(x0, y0, x0 + box_w, y1, kWhite);
    canvas.Line(x0, y0, x0 + box_w, y0, kAxis);
    canvas.Line(x0, y1, x0 + box_w, y1, kAxis);
    canvas.Line(x0, y0, x0, y1, kAxis);
    canvas.Line(x0 + box_w, y0, x0 + box_w, y1, kAxis);
    for (size_t i = 0; i < named.size(); ++i) {
      const int y = y0 + 8 + row_h * static_cast<int>(i);
      canvas.Line(x0 + 8, y + glyph_h / 2, x0 + 32, y + glyph_h / 2, named[i]->color, 3);
      canvas.Text(x0 + 40, y, named[i]->name, kInk, kScale);
    }
  }
  return canvas;
}

// ---------------------------------------------------------------- --curves

int overlay_curves(const std::string& png, const std::vector<std::string>& runs) {
  if (runs.empty()) {
    std::fprintf(stderr, "--curves %s: expected one or more NAME=metrics.jsonl, got none\n",
                 png.c_str());
    return 2;
  }
  std::printf("Loss curves overlaid (train: thin, val: thick with marks) -> %s\n", png.c_str());
  std::printf("  %-8s %7s %12s %10s %10s %11s %11s %9s\n", "run", "steps", "train (end)",
              "val (end)", "val best", "ms/step", "tokens/s", "mem GiB");
  std::vector<Series> series;
  for (size_t i = 0; i < runs.size(); ++i) {
    const size_t eq = runs[i].find('=');
    const std::string name = runs[i].substr(0, eq), path = runs[i].substr(eq + 1);
    int64_t skipped = 0;
    const std::vector<zero::train::StepMetrics> records = zero::train::read_metrics(path, &skipped);
    ZERO_CHECK(!records.empty(), "--curves: expected training records in ", path,
               " (the metrics.jsonl a train_gpt run writes), got none");
    std::vector<zero::train::LossPoint> all, train, val;
    zero::train::loss_points(records, &all, &val);
    // The last record of a run is its final evaluation alone: no training loss, no time.
    for (const auto& p : all) {
      if (std::isfinite(p.loss)) train.push_back(p);
    }
    ZERO_CHECK(!train.empty(), "--curves: expected training losses in ", path, ", got none");
    std::vector<double> ms, rate;
    double mem = 0, best = std::numeric_limits<double>::infinity(), train_end = 0;
    for (const auto& r : records) {
      if (r.ms > 0) ms.push_back(r.ms), rate.push_back(r.tokens_per_s);
      mem = std::max(mem, r.mem_gib);
    }
    if (ms.empty()) ms.push_back(NAN), rate.push_back(NAN);
    for (const auto& p : val) best = std::min(best, static_cast<double>(p.loss));
    // The mean of the last tenth of the logged training losses: one batch is noisy.
    const size_t tail = std::max<size_t>(1, train.size() / 10);
    for (size_t k = train.size() - tail; k < train.size(); ++k) train_end += train[k].loss / tail;
    std::sort(ms.begin(), ms.end());
    std::sort(rate.begin(), rate.end());
    std::printf("  %-8s %7lld %12.4f %10.4f %10.4f %11.1f %11.0f %9.2f\n", name.c_str(),
                static_cast<long long>(records.back().step), train_end,
                val.empty() ? NAN : val.back().loss, val.empty() ? NAN : best, ms[ms.size() / 2],
                rate[rate.size() / 2], mem);
    if (skipped > 0)
      std::printf("           (%lld unreadable line(s) skipped)\n", (long long)skipped);
    const Rgb c = precision_color(static_cast<int>(i));
    const Rgb light{static_cast<uint8_t>((c.r + 255) / 2), static_cast<uint8_t>((c.g + 255) / 2),
                    static_cast<uint8_t>((c.b + 255) / 2)};
    Series t{name + " train", light, {}, 1};
    for (const auto& p : train) t.points.emplace_back(p.step, p.loss);
    Series v{name + " val", c, {}, 2, true};
    for (const auto& p : val) v.points.emplace_back(p.step, p.loss);
    series.push_back(std::move(t));
    series.push_back(std::move(v));
  }
  std::printf("ms/step and tokens/s are medians over the logged steps; mem is the peak.\n");
  const Canvas canvas = draw_plot({"Training loss by precision", "step", "loss"}, series);
  zero::io::write_png(png, canvas.width(), canvas.height(), canvas.pixels());
  return 0;
}

}  // namespace ch09
