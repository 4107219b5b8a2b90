// Tests of the raster the loss curve is drawn on (zero/train/canvas.h): rectangles and
// lines land on the pixels they name, drawing outside is clipped, text uses the 5x7 font.
#include "zero/train/canvas.h"

#include <gtest/gtest.h>

#include "zero/core/error.h"

namespace zero::train {
namespace {

constexpr Rgb kWhite{255, 255, 255}, kBlack{0, 0, 0}, kRed{200, 0, 0}, kBlue{0, 0, 255};

TEST(CanvasTest, RectanglesAndLinesCoverTheirPixels) {
  Canvas c(300, 250, kWhite);
  EXPECT_EQ(c.pixels().size(), 300u * 250u * 3u);
  c.FillRect(30, 40, 10, 20, kRed);  // corners in any order
  EXPECT_EQ(c.At(10, 20), kRed);
  EXPECT_EQ(c.At(30, 40), kRed);
  EXPECT_EQ(c.At(20, 30), kRed);
  EXPECT_EQ(c.At(31, 40), kWhite);
  EXPECT_EQ(c.At(9, 20), kWhite);
  c.Line(0, 249, 299, 0, kBlue);
  EXPECT_EQ(c.At(0, 249), kBlue);
  EXPECT_EQ(c.At(299, 0), kBlue);
  c.Line(100, 100, 200, 100, kBlack, 3);  // 3 wide: one row above and below
  for (int y : {99, 100, 101}) EXPECT_EQ(c.At(150, y), kBlack) << y;
  EXPECT_EQ(c.At(150, 102), kWhite);
}

TEST(CanvasTest, DrawingOutsideIsClippedAndReadingOutsideIsRefused) {
  Canvas c(10, 10, kWhite);
  c.FillRect(-5, -5, 2, 2, kRed);
  c.Line(-20, 5, 30, 5, kBlue);
  c.Set(10, 10, kBlack);
  EXPECT_EQ(c.At(0, 0), kRed);
  EXPECT_EQ(c.At(9, 5), kBlue);
  EXPECT_EQ(c.At(9, 9), kWhite);
  EXPECT_THROW(c.At(10, 0), Error);
  EXPECT_THROW(Canvas(0, 10), Error);
}

TEST(CanvasTest, TextUsesTheFont) {
  Canvas c(40, 20);
  c.Text(1, 1, "1", kBlack);  // '1': the middle column is set on rows 0..6
  for (int row = 0; row < 7; ++row) EXPECT_EQ(c.At(3, 1 + row), kBlack) << row;
  EXPECT_EQ(c.At(1, 1), kWhite);
  EXPECT_EQ(Canvas::TextWidth("ab", 2), 22);
  EXPECT_EQ(Canvas::TextHeight(2), 14);
  Canvas lower(40, 20), upper(40, 20);
  lower.Text(0, 0, "step", kBlack);
  upper.Text(0, 0, "STEP", kBlack);
  EXPECT_EQ(lower.pixels(), upper.pixels());
  Canvas unknown(40, 20), question(40, 20);  // a character the font lacks is drawn as '?'
  unknown.Text(0, 0, "#", kBlack);
  question.Text(0, 0, "?", kBlack);
  EXPECT_EQ(unknown.pixels(), question.pixels());
}

}  // namespace
}  // namespace zero::train
