// Tests of the loss-curve plot (zero/train/loss_curve.h): tick spacing, both series in
// their colours where the data says, robustness to empty and non-finite input, and the
// file, decoded back to the canvas's pixels.
#include "zero/train/loss_curve.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/data/test_files.h"
#include "tests/support/png_decode.h"
#include "zero/core/error.h"

namespace zero::train {
namespace {

int count(const Canvas& c, Rgb color) {
  int n = 0;
  for (int y = 0; y < c.height(); ++y) {
    for (int x = 0; x < c.width(); ++x) n += c.At(x, y) == color;
  }
  return n;
}

constexpr Rgb kTrain{31, 119, 180}, kVal{230, 110, 0};

TEST(LossCurveTest, NiceTickSteps) {
  EXPECT_DOUBLE_EQ(nice_tick_step(1.3, 6), 0.5);
  EXPECT_DOUBLE_EQ(nice_tick_step(4.0, 8), 0.5);
  EXPECT_DOUBLE_EQ(nice_tick_step(5000, 8), 1000);
  EXPECT_DOUBLE_EQ(nice_tick_step(1200, 8), 200);
  EXPECT_DOUBLE_EQ(nice_tick_step(10, 10), 1);
  EXPECT_THROW(nice_tick_step(0, 5), Error);
}

TEST(LossCurveTest, DrawsBothSeriesWhereTheDataIs) {
  std::vector<LossPoint> train, val;
  for (int s = 0; s <= 1000; s += 10) train.push_back({s, 4.0f - 2.0f * s / 1000});
  for (int s = 0; s <= 1000; s += 250) val.push_back({s, 4.2f - 2.0f * s / 1000});
  const Canvas c = draw_loss_curve(train, val, "test");
  EXPECT_GT(count(c, kTrain), 500);
  EXPECT_GT(count(c, kVal), 500);
  // The train line falls from left to right: its lowest pixel in the left quarter of
  // the plot is above (smaller y than) its lowest pixel in the right quarter. (Lowest,
  // because the legend at the top right holds a sample of each colour.)
  auto lowest_in = [&](int x0, int x1, Rgb color) {
    for (int y = c.height() - 1; y >= 0; --y) {
      for (int x = x0; x < x1; ++x) {
        if (c.At(x, y) == color) return y;
      }
    }
    return -1;
  };
  EXPECT_LT(lowest_in(100, 250, kTrain), lowest_in(550, 700, kTrain));
  EXPECT_LT(lowest_in(100, 250, kVal), lowest_in(550, 700, kVal));
  // No val series: no val colour at all (not even in the legend).
  EXPECT_EQ(count(draw_loss_curve(train, {}, "t"), kVal), 0);
}

TEST(LossCurveTest, EmptyAndNonFiniteInput) {
  const Canvas empty = draw_loss_curve({}, {}, "nothing yet");
  EXPECT_EQ(count(empty, kTrain) + count(empty, kVal), 0);
  const Canvas one = draw_loss_curve({{0, 4.2f}}, {{0, NAN}, {5, INFINITY}}, "one point");
  EXPECT_GT(count(one, kTrain), 0);
  EXPECT_EQ(count(one, kVal), 0);
}

TEST(LossCurveTest, WritesAPngFile) {
  const testing::TempDir dir;
  const std::string path = dir / "loss_curve.png";
  write_loss_curve_png(path, {{0, 4.0f}, {10, 3.0f}}, {{10, 3.1f}}, "file");
  const Canvas drawn = draw_loss_curve({{0, 4.0f}, {10, 3.0f}}, {{10, 3.1f}}, "file");
  const testing::DecodedPng png = testing::decode_png(testing::read_bytes(path));
  EXPECT_EQ(png.width, drawn.width());
  EXPECT_EQ(png.height, drawn.height());
  EXPECT_EQ(png.rgb, drawn.pixels()) << "the file shows exactly the canvas";
  EXPECT_THROW(write_loss_curve_png("/nonexistent-dir/x.png", {}, {}, "x"), Error);
}

}  // namespace
}  // namespace zero::train
