// Tests of the vectorisable exp and tanh of kernels/cpu/vector_math.h against the C
// library's, which are their reference: within about 1e-15 relative over the ranges the
// kernels use, and the right values at the ends (0 and infinity for exp, +-1 for tanh,
// NaN for NaN).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "zero/kernels/cpu/vector_math.h"

namespace {

using zero::ops::exp_double;
using zero::ops::tanh_double;

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(VectorMathTest, ExpMatchesTheLibraryToAFewUlps) {
  for (double x = -700.0; x <= 700.0; x += 0.0137) {
    const double want = std::exp(x);
    EXPECT_NEAR(exp_double(x), want, 1e-15 * want) << "x = " << x;
  }
  for (double x = -1e-3; x <= 1e-3; x += 1.7e-6) {
    EXPECT_NEAR(exp_double(x), std::exp(x), 1e-15) << "x = " << x;
  }
}

TEST(VectorMathTest, ExpAtTheEnds) {
  EXPECT_EQ(exp_double(0.0), 1.0);
  EXPECT_EQ(exp_double(-kInf), 0.0);
  EXPECT_EQ(exp_double(-800.0), 0.0);
  EXPECT_EQ(exp_double(kInf), kInf);
  EXPECT_EQ(exp_double(800.0), kInf);
  EXPECT_TRUE(std::isnan(exp_double(std::nan(""))));
  // Subnormal results, down to where the library's also round to 0.
  EXPECT_NEAR(exp_double(-740.0), std::exp(-740.0), 1e-3 * std::exp(-740.0));
}

TEST(VectorMathTest, TanhMatchesTheLibraryToAFewUlps) {
  for (double x = -20.0; x <= 20.0; x += 0.00731) {
    const double want = std::tanh(x);
    EXPECT_NEAR(tanh_double(x), want, 4e-15 * std::fabs(want) + 1e-300) << "x = " << x;
  }
  for (double x = -0.3; x <= 0.3; x += 1.3e-4) {  // around the switch to the series
    const double want = std::tanh(x);
    EXPECT_NEAR(tanh_double(x), want, 4e-15 * std::fabs(want)) << "x = " << x;
  }
}

TEST(VectorMathTest, TanhAtTheEnds) {
  EXPECT_EQ(tanh_double(0.0), 0.0);
  EXPECT_EQ(tanh_double(1e-300), 1e-300);
  EXPECT_EQ(tanh_double(kInf), 1.0);
  EXPECT_EQ(tanh_double(-kInf), -1.0);
  EXPECT_EQ(tanh_double(400.0), 1.0);
  EXPECT_TRUE(std::isnan(tanh_double(std::nan(""))));
}

}  // namespace
