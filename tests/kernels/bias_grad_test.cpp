// Tests of a Linear's bias gradient, the column sums of grad_out [N, out] that
// ops::linear_backward_params writes (on CUDA column_sum.cu's two-pass kernel for 16-bit
// operands): against float64 sums of the same values, in every float dtype, with the
// gradient in grad_out's dtype or in FP32, on shapes that take the 16-byte path (GPT-2's
// MLP, 8192 x 3072, in two passes; the char model's 16384 x 384), its scalar fallback
// (widths that are not a multiple of 8, one not of 4) and one chunk of rows; the same
// bits on every run; and no rows is a zero gradient.
#include <cmath>
#include <string>
#include <vector>

#include "tests/kernels/half_support.h"
#include "tests/support/test_support.h"
#include "zero/kernels/tensor_ops.h"

namespace zero {
namespace {

using testing::as;
using testing::cpu_f32;
using testing::empty;
using testing::rounded_randn;
using testing::unit_roundoff;

class BiasGradTest : public testing::DeviceTest {};

// Float64 column sums of g (exact for these sizes: each term is a float) and of |g|.
void reference(const std::vector<float>& g, int64_t rows, int64_t cols, std::vector<double>& sum,
               std::vector<double>& magnitude) {
  sum.assign(cols, 0.0);
  magnitude.assign(cols, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      sum[c] += g[r * cols + c];
      magnitude[c] += std::fabs(double{g[r * cols + c]});
    }
  }
}

TEST_P(BiasGradTest, IsTheColumnSumInEveryDtype) {
  struct Case {
    int64_t rows, cols;
  };
  // 1089 and 5000 rows fill fewer chunks of whole rows than were asked for (34 chunks of
  // 33 rows fill 33, 128 of 40 fill 125): sums over unwritten partial rows came of that.
  const Case cases[] = {{8192, 3072}, {1000, 36}, {33, 40},     {7, 768},
                        {5000, 37},   {1089, 37}, {1089, 768}, {16384, 384}};
  for (DataType dtype : {DataType::F32, DataType::BF16, DataType::F16}) {
    for (const Case& s : cases) {
      const Tensor g32 = rounded_randn({s.rows, s.cols}, dtype, 41 + s.cols);  // F32, CPU
      std::vector<double> want, magnitude;
      reference(g32.ToVector<float>(), s.rows, s.cols, want, magnitude);
      for (DataType out_dtype : {dtype, DataType::F32}) {
        SCOPED_TRACE(std::string(to_string(dtype)) + " into " + to_string(out_dtype) + ", [" +
                     std::to_string(s.rows) + ", " + std::to_string(s.cols) + "]");
        const Tensor gb = empty({s.cols}, out_dtype, device());
        ops::linear_backward_params(as(g32, dtype, device()), empty({s.rows, 8}, dtype, device()),
                                    Tensor(), gb);
        const std::vector<float> got = cpu_f32(gb).ToVector<float>();
        // FP32 accumulation over `rows` terms, then one rounding to the output's dtype.
        const double u_out = out_dtype == DataType::F32 ? 0x1p-24 : unit_roundoff(out_dtype);
        for (int64_t c = 0; c < s.cols; ++c) {
          const double tol = s.rows * 0x1p-24 * magnitude[c] + u_out * std::fabs(want[c]);
          ASSERT_NEAR(got[c], want[c], tol) << "column " << c;
        }
      }
    }
  }
}

// The column sums add their terms in a fixed order (column_sum.cuh), so the same sum
// again, with other shapes between, gives the same bits.
TEST_P(BiasGradTest, GivesTheSameBitsEveryTime) {
  for (DataType dtype : {DataType::F32, DataType::BF16}) {
    const Tensor g = as(rounded_randn({16384, 384}, dtype, 7), dtype, device());
    const Tensor other = as(rounded_randn({4000, 1152}, dtype, 8), dtype, device());
    std::vector<float> first;
    for (int run = 0; run < 3; ++run) {
      const Tensor gb = empty({384}, DataType::F32, device());
      ops::linear_backward_params(g, empty({16384, 8}, dtype, device()), Tensor(), gb);
      ops::linear_backward_params(other, empty({4000, 8}, dtype, device()), Tensor(),
                                  empty({1152}, DataType::F32, device()));
      const std::vector<float> got = cpu_f32(gb).ToVector<float>();
      if (run == 0) first = got;
      ASSERT_EQ(got, first) << to_string(dtype) << ", run " << run;
    }
  }
}

TEST_P(BiasGradTest, NoRowsIsZero) {
  for (DataType dtype : {DataType::F32, DataType::BF16}) {
    const Tensor gb = empty({24}, DataType::F32, device());
    ops::linear_backward_params(empty({0, 24}, dtype, device()), empty({0, 8}, dtype, device()),
                                Tensor(), gb);
    EXPECT_EQ(gb.To(Device::Cpu()).ToVector<float>(), std::vector<float>(24, 0.0f));
  }
}

ZERO_INSTANTIATE_DEVICE_TEST(BiasGradTest);

}  // namespace
}  // namespace zero
