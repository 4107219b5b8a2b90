/// @file
/// A tiny RGB raster, enough to draw a loss curve: pixels, lines, rectangles and text.
///
/// `Canvas` has the few drawing operations a plot needs, text included, in a built-in
/// 5x7 bitmap font, so that a plot needs no font files or graphics library. Its
/// `pixels()` are what io::write_png (io/png.h) saves. Read next: loss_curve.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace zero::train {

/// An sRGB colour, 8 bits a channel.
struct Rgb {
  uint8_t r = 0;  ///< Red.
  uint8_t g = 0;  ///< Green.
  uint8_t b = 0;  ///< Blue.
  /// Equal when all three channels are.
  bool operator==(const Rgb& o) const { return r == o.r && g == o.g && b == o.b; }
};

/// A width x height RGB raster, (0, 0) at the top left. Drawing outside is clipped.
class Canvas {
 public:
  /// A canvas filled with `background`. @throws zero::Error unless both sizes are positive.
  Canvas(int width, int height, Rgb background = {255, 255, 255});
  /// Width in pixels.
  int width() const { return width_; }
  /// Height in pixels.
  int height() const { return height_; }
  /// The colour at (x, y); (x, y) must be inside.
  Rgb At(int x, int y) const;
  /// Sets one pixel (ignored outside the canvas).
  void Set(int x, int y, Rgb color);
  /// Fills the rectangle [x0, x1] x [y0, y1] (inclusive, any corner order).
  void FillRect(int x0, int y0, int x1, int y1, Rgb color);
  /// A straight line from (x0, y0) to (x1, y1) (Bresenham), `thickness` pixels wide.
  void Line(int x0, int y0, int x1, int y1, Rgb color, int thickness = 1);
  /// Draws `text` with its top-left corner at (x, y) in the 5x7 font, each font pixel a
  /// `scale` x `scale` square. Lower-case letters are drawn as capitals; characters the
  /// font lacks as '?'.
  void Text(int x, int y, const std::string& text, Rgb color, int scale = 1);
  /// Width in pixels that `Text` would cover for `text` at `scale`.
  static int TextWidth(const std::string& text, int scale = 1);
  /// Height in pixels of one line of text at `scale`.
  static int TextHeight(int scale = 1) { return 7 * scale; }
  /// The pixels, row by row, 3 bytes (R, G, B) each.
  const std::vector<uint8_t>& pixels() const { return pixels_; }

 private:
  int width_, height_;
  std::vector<uint8_t> pixels_;
};

}  // namespace zero::train
