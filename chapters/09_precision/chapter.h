// Chapter 09: what the chapter's files share. main.cpp runs sections 1-2 (layouts and
// conversions, rounding error) and 5 (the roofline model), calls range.cpp for sections
// 3-4 (range, loss scaling, master weights), gpu.cu for section 6 (measured rates)
// and, in its --curves mode, plot.cpp to overlay training curves. plot.cpp also draws
// the roofline figure for gpu.cu.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "zero/train/canvas.h"

namespace ch09 {

struct Options {
  bool quick = false;  // small GPU sizes, few repetitions: the CTest run
  std::string figure;  // where the roofline PNG goes ("" = no figure)
};

// The precisions of the GEMM sweep with their H200 SXM datasheet peaks (dense, TFLOP/s):
// assumptions, printed as such. FP32 SGEMM runs on the FP32 units; the others on Tensor
// Cores. FP8 writes a BF16 result.
struct PrecisionSheet {
  const char* name;
  double tflops;
  int in_bytes, out_bytes;  // per element of A and B, and of C
};
constexpr PrecisionSheet kSheet[] = {{"FP32 SGEMM", 67, 4, 4},
                                     {"TF32", 495, 4, 4},
                                     {"BF16", 990, 2, 2},
                                     {"FP16", 990, 2, 2},
                                     {"FP8 E4M3", 1979, 1, 2}};
constexpr double kSheetHbmTBps = 4.8;  // HBM3e, datasheet

// Sections 3 and 4 (range.cpp): returns the number of failed checks.
int range_and_mixed_precision();

// Section 6 (gpu.cu, built only with CUDA): returns the number of failed checks.
int run_gpu_part(const Options& options);

// ---------------------------------------------------------------- plots (plot.cpp)

// One line (or row of marks) of a plot, in data coordinates.
struct Series {
  std::string name;  // legend entry; "" = not in the legend
  zero::train::Rgb color;
  std::vector<std::pair<double, double>> points;
  int thickness = 2;
  bool marks = false;  // a filled square at each point
  bool line = true;    // segments between consecutive points
};

struct PlotFrame {
  std::string title, x_label, y_label;
  bool log_x = false, log_y = false;  // log axes: ticks at powers of ten
  bool legend_left = false;           // the legend in the top-left corner (else top-right)
};

// The series on one canvas with axes, grid, tick labels, a legend and the title. Points
// that are not finite (or not positive on a log axis) are skipped.
zero::train::Canvas draw_plot(const PlotFrame& frame, const std::vector<Series>& series,
                              int width = 960, int height = 600);

// The palette of the figures, one colour per precision (FP32, TF32, BF16, FP16, FP8).
zero::train::Rgb precision_color(int i);

// The --curves mode: reads each NAME=metrics.jsonl run that train_gpt wrote, prints a
// summary row per run and draws their loss curves overlaid into `png`. Returns the exit
// status.
int overlay_curves(const std::string& png, const std::vector<std::string>& runs);

}  // namespace ch09
