// Plotting a loss curve onto a Canvas: ranges rounded out to nice ticks, a grid, axes,
// tick labels, the two series and a legend. All coordinates are pixels, y down.
#include "zero/train/loss_curve.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>

#include "zero/core/error.h"
#include "zero/io/png.h"

namespace zero::train {

namespace {

constexpr Rgb kInk{30, 30, 30};
constexpr Rgb kAxis{70, 70, 70};
constexpr Rgb kGrid{228, 228, 228};
constexpr Rgb kTrainColor{31, 119, 180};  // blue
constexpr Rgb kValColor{230, 110, 0};     // orange
constexpr Rgb kWhite{255, 255, 255};
constexpr int kScale = 2;  // font pixels are 2 x 2: 10 x 14 glyphs

struct Range {
  double lo, hi, step;
};

// [lo, hi] widened to multiples of a nice tick step.
Range nice_range(double lo, double hi, int max_ticks) {
  if (!(hi > lo)) {  // one value (or none): give it some room
    const double pad = std::max(0.5, std::abs(lo) * 0.1);
    lo -= pad;
    hi += pad;
  }
  const double step = nice_tick_step(hi - lo, max_ticks);
  return {std::floor(lo / step) * step, std::ceil(hi / step) * step, step};
}

// A tick label with as many decimals as the step needs ("1.5" for step 0.5, "2" for 1).
std::string tick_label(double value, double step) {
  const int decimals = std::max(0, static_cast<int>(std::ceil(-std::log10(step) - 1e-9)));
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, std::abs(value) < step * 1e-6 ? 0.0 : value);
  return buf;
}

std::vector<LossPoint> finite(const std::vector<LossPoint>& points) {
  std::vector<LossPoint> out;
  for (const LossPoint& p : points) {
    if (std::isfinite(p.loss)) out.push_back(p);
  }
  return out;
}

}  // namespace

double nice_tick_step(double range, int max_ticks) {
  ZERO_CHECK(range > 0 && std::isfinite(range) && max_ticks > 0,
             "nice_tick_step: expected a positive finite range and tick count, got range = ", range,
             ", max_ticks = ", max_ticks);
  const double raw = range / max_ticks;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * magnitude >= raw * (1 - 1e-9)) return m * magnitude;
  }
  return 10.0 * magnitude;
}

Canvas draw_loss_curve(const std::vector<LossPoint>& train_points,
                       const std::vector<LossPoint>& val_points, const std::string& title,
                       int width, int height) {
  const std::vector<LossPoint> train = finite(train_points), val = finite(val_points);
  Canvas canvas(width, height);

  // Data ranges over both series.
  double x_max = 1, y_lo = std::numeric_limits<double>::infinity(), y_hi = -y_lo;
  for (const auto* series : {&train, &val}) {
    for (const LossPoint& p : *series) {
      x_max = std::max(x_max, static_cast<double>(p.step));
      y_lo = std::min(y_lo, static_cast<double>(p.loss));
      y_hi = std::max(y_hi, static_cast<double>(p.loss));
    }
  }
  if (!std::isfinite(y_lo)) y_lo = y_hi = 0;  // nothing to draw: an empty 0..1-ish frame
  const Range xs = nice_range(0, x_max, 8);
  const Range ys = nice_range(y_lo, y_hi, 6);

  // The plot area, leaving room for the title above and the tick labels left and below.
  const int left = 20 + Canvas::TextWidth("00.00", kScale), right = width - 24;
  const int top = 56, bottom = height - 64;
  auto px = [&](double step) {
    return left + static_cast<int>(std::lround((step - xs.lo) / (xs.hi - xs.lo) * (right - left)));
  };
  auto py = [&](double loss) {
    return bottom -
           static_cast<int>(std::lround((loss - ys.lo) / (ys.hi - ys.lo) * (bottom - top)));
  };
  const int glyph_h = Canvas::TextHeight(kScale);

  // Grid lines and tick labels.
  for (double x = xs.lo; x <= xs.hi + xs.step * 1e-6; x += xs.step) {
    canvas.Line(px(x), top, px(x), bottom, kGrid);
    canvas.Line(px(x), bottom, px(x), bottom + 5, kAxis);
    const std::string label = tick_label(x, xs.step);
    canvas.Text(px(x) - Canvas::TextWidth(label, kScale) / 2, bottom + 10, label, kInk, kScale);
  }
  for (double y = ys.lo; y <= ys.hi + ys.step * 1e-6; y += ys.step) {
    canvas.Line(left, py(y), right, py(y), kGrid);
    canvas.Line(left - 5, py(y), left, py(y), kAxis);
    const std::string label = tick_label(y, ys.step);
    canvas.Text(left - 10 - Canvas::TextWidth(label, kScale), py(y) - glyph_h / 2, label, kInk,
                kScale);
  }
  // Axes, axis names and the title.
  canvas.Line(left, top, left, bottom, kAxis, 2);
  canvas.Line(left, bottom, right, bottom, kAxis, 2);
  canvas.Text((left + right - Canvas::TextWidth("step", kScale)) / 2, bottom + 16 + glyph_h, "step",
              kInk, kScale);
  canvas.Text(left - Canvas::TextWidth("loss", kScale) / 2, top - 12 - glyph_h, "loss", kInk,
              kScale);
  canvas.Text((width - Canvas::TextWidth(title, kScale)) / 2, 14, title, kInk, kScale);

  // The series: val drawn last so its marks sit on top of the noisier train line.
  for (size_t i = 1; i < train.size(); ++i) {
    canvas.Line(px(train[i - 1].step), py(train[i - 1].loss), px(train[i].step), py(train[i].loss),
                kTrainColor, 1);
  }
  if (train.size() == 1)
    canvas.FillRect(px(train[0].step) - 1, py(train[0].loss) - 1, px(train[0].step) + 1,
                    py(train[0].loss) + 1, kTrainColor);
  for (size_t i = 0; i < val.size(); ++i) {
    const int x = px(val[i].step), y = py(val[i].loss);
    if (i > 0) canvas.Line(px(val[i - 1].step), py(val[i - 1].loss), x, y, kValColor, 2);
    canvas.FillRect(x - 3, y - 3, x + 3, y + 3, kValColor);
  }

  // Legend in the top-right corner of the plot: a short line of each colour and its name.
  struct Entry {
    const char* name;
    Rgb color;
  };
  std::vector<Entry> entries;
  if (!train.empty()) entries.push_back({"train", kTrainColor});
  if (!val.empty()) entries.push_back({"val", kValColor});
  if (!entries.empty()) {
    const int row_h = glyph_h + 8, box_w = 40 + Canvas::TextWidth("train", kScale) + 16;
    const int x0 = right - box_w - 10, y0 = top + 10;
    const int y1 = y0 + row_h * static_cast<int>(entries.size()) + 8;
    canvas.FillRect(x0, y0, x0 + box_w, y1, kWhite);
    for (auto [ax, ay, bx, by] :
         {std::array<int, 4>{x0, y0, x0 + box_w, y0}, std::array<int, 4>{x0, y1, x0 + box_w, y1},
          std::array<int, 4>{x0, y0, x0, y1}, std::array<int, 4>{x0 + box_w, y0, x0 + box_w, y1}}) {
      canvas.Line(ax, ay, bx, by, kAxis);
    }
    for (size_t i = 0; i < entries.size(); ++i) {
      const int y = y0 + 8 + row_h * static_cast<int>(i);
      canvas.Line(x0 + 8, y + glyph_h / 2, x0 + 32, y + glyph_h / 2, entries[i].color, 3);
      canvas.Text(x0 + 40, y, entries[i].name, kInk, kScale);
    }
  }
  return canvas;
}

void write_loss_curve_png(const std::string& path, const std::vector<LossPoint>& train,
                          const std::vector<LossPoint>& val, const std::string& title) {
  const Canvas canvas = draw_loss_curve(train, val, title);
  io::write_png(path, canvas.width(), canvas.height(), canvas.pixels());
}

}  // namespace zero::train
