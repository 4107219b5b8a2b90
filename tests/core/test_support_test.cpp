// Tests of the comparisons the other tests rely on (tests/support/test_support.h): a
// helper that let a NaN through would make every test built on it unable to fail.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tests/support/test_support.h"
#include "zero/core/tensor.h"

namespace zero {
namespace {

TEST(TestSupportTest, MaxRelativeErrorIsTheLargestDifferenceOverTheLargestValue) {
  const Tensor expected = Tensor::From(std::vector<float>{1.0f, -4.0f, 2.0f}, {3});
  const Tensor actual = Tensor::From(std::vector<float>{1.5f, -4.0f, 2.25f}, {3});
  EXPECT_DOUBLE_EQ(testing::max_relative_error(actual, expected), 0.5 / 4.0);
  EXPECT_DOUBLE_EQ(testing::max_relative_error(expected, expected), 0.0);
}

TEST(TestSupportTest, MaxRelativeErrorOfANanIsInfinite) {
  const Tensor good = Tensor::From(std::vector<float>{1.0f, 2.0f}, {2});
  const Tensor bad = Tensor::From(std::vector<float>{1.0f, NAN}, {2});
  EXPECT_EQ(testing::max_relative_error(bad, good), INFINITY);
  EXPECT_EQ(testing::max_relative_error(good, bad), INFINITY);
}

TEST(TestSupportTest, MaxRelativeErrorOfDifferentShapesFails) {
  const Tensor two = Tensor::From(std::vector<float>{1.0f, 2.0f}, {2});
  const Tensor three = Tensor::From(std::vector<float>{1.0f, 2.0f, 3.0f}, {3});
  double error = 0.0;
  EXPECT_NONFATAL_FAILURE(error = testing::max_relative_error(two, three), "shapes differ");
  EXPECT_EQ(error, INFINITY);
}

TEST(TestSupportTest, ExpectCloseFailsOnANan) {
  const Tensor bad = Tensor::From(std::vector<float>{1.0f, NAN}, {2});
  EXPECT_NONFATAL_FAILURE(testing::expect_close(bad, std::vector<float>{1.0f, 2.0f}), "got nan");
}

}  // namespace
}  // namespace zero
