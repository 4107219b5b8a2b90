// Tests of the matrix product (autograd/ops/matmul_op.cpp, kernels/matmul.cpp,
// kernels/cpu/matmul_cpu.cpp): values against a naive double-precision loop written
// here for 2-d, batched, broadcast-batch and transposed or strided inputs; gradients
// against finite differences for each; and the errors for mismatched shapes.
#include <string>

#include "tests/support/test_support.h"
#include "zero/kernels/tensor_ops.h"

namespace zero {
namespace {

using testing::error_message;

using testing::check_gradients;
using testing::expect_close;
using testing::randn_leaf;

// a [..., M, K] @ b [..., K, N] for an expected output shape `out` [..., M, N], in
// double, with batch indices broadcast the NumPy way (size-1 or missing dims repeat).
std::vector<float> reference_matmul(const Tensor& a, const Tensor& b, const Shape& out) {
  const std::vector<float> va = a.ToVector<float>(), vb = b.ToVector<float>();
  const int nd = static_cast<int>(out.size());
  const int64_t M = out[nd - 2], N = out[nd - 1], K = a.size(-1);
  const int64_t batch = shape_numel(Shape(out.begin(), out.end() - 2));
  // Index of out-batch position `i` within operand t's (right-aligned) batch dims.
  auto batch_index = [&](const Tensor& t, int64_t i) {
    int64_t index = 0, scale = 1;
    for (int d = nd - 3, td = t.dim() - 3; d >= 0; --d, --td) {
      const int64_t coord = i % out[d];
      i /= out[d];
      if (td >= 0) {
        index += (t.size(td) == 1 ? 0 : coord) * scale;
        scale *= t.size(td);
      }
    }
    return index;
  };
  std::vector<float> result(batch * M * N);
  for (int64_t p = 0; p < batch; ++p) {
    // data() + offset, not &v[offset]: with K == 0 (or M or N) the vector is empty, and
    // indexing an empty vector is undefined behaviour even when nothing is read.
    const float* pa = va.data() + batch_index(a, p) * M * K;
    const float* pb = vb.data() + batch_index(b, p) * K * N;
    for (int64_t i = 0; i < M; ++i) {
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0.0;
        for (int64_t k = 0; k < K; ++k) acc += double(pa[i * K + k]) * pb[k * N + j];
        result[(p * M + i) * N + j] = static_cast<float>(acc);
      }
    }
  }
  return result;
}

void expect_contains(const std::string& message, const std::string& part) {
  EXPECT_NE(message.find(part), std::string::npos)
      << "the message \"" << message << "\" does not mention \"" << part << "\"";
}

class MatMulOpTest : public testing::DeviceTest {
 protected:
  void ExpectMatchesReference(const Tensor& a, const Tensor& b, const Shape& out_shape) {
    const Tensor c = matmul(a, b);
    ASSERT_EQ(c.sizes(), out_shape);
    expect_close(c, reference_matmul(a, b, out_shape), 1e-5f, 1e-5f);
  }
};

TEST_P(MatMulOpTest, HandComputedProduct) {
  Tensor a = Tensor::From({1, 2, 3, 4, 5, 6}, {2, 3}).To(device());
  Tensor b = Tensor::From({1, 0, 0, 1, 1, 1}, {3, 2}).To(device());
  expect_close(matmul(a, b), {4, 5, 10, 11});
}

TEST_P(MatMulOpTest, TwoDimensionalMatchesNaive) {
  ExpectMatchesReference(randn_leaf({5, 7}, device(), 1), randn_leaf({7, 9}, device(), 2), {5, 9});
  // Large enough for several tiles of the blocked kernel and for threads.
  ExpectMatchesReference(randn_leaf({150, 70}, device(), 3), randn_leaf({70, 530}, device(), 4),
                         {150, 530});
}

TEST_P(MatMulOpTest, BatchedMatchesNaive) {
  ExpectMatchesReference(randn_leaf({4, 5, 7}, device(), 1), randn_leaf({4, 7, 3}, device(), 2),
                         {4, 5, 3});
  // Many small matrices: the batch is spread over threads instead.
  ExpectMatchesReference(randn_leaf({64, 33, 20}, device(), 3),
                         randn_leaf({64, 20, 17}, device(), 4), {64, 33, 17});
}

TEST_P(MatMulOpTest, BroadcastsBatchDimensions) {
  ExpectMatchesReference(randn_leaf({2, 1, 4, 5}, device(), 1),
                         randn_leaf({3, 5, 6}, device(), 2), {2, 3, 4, 6});
  ExpectMatchesReference(randn_leaf({2, 3, 4, 5}, device(), 3), randn_leaf({5, 6}, device(), 4),
                         {2, 3, 4, 6});
  ExpectMatchesReference(randn_leaf({4, 5}, device(), 5), randn_leaf({2, 5, 3}, device(), 6),
                         {2, 4, 3});
}

TEST_P(MatMulOpTest, AcceptsTransposedAndStridedViews) {
  const Tensor at = randn_leaf({7, 5}, device(), 1).Transpose(0, 1);     // (5, 7), row stride 1
  const Tensor bt = randn_leaf({2, 9, 7}, device(), 2).Transpose(1, 2);  // (2, 7, 9)
  ExpectMatchesReference(at, bt, {2, 5, 9});
  // Every other column: neither stride is 1, so the kernel copies it first.
  const Tensor strided = randn_leaf({5, 14}, device(), 3).Slice(1, 0, 14, 2);  // (5, 7)
  ExpectMatchesReference(strided, bt, {2, 5, 9});
  // A stride-0 (expanded) batch dimension.
  const Tensor expanded = randn_leaf({1, 5, 7}, device(), 4).Expand({2, 5, 7});
  ExpectMatchesReference(expanded, bt, {2, 5, 9});
}

TEST_P(MatMulOpTest, ZeroSizedDimensions) {
  // K = 0: the product is all zeros. (Zeros, not Randn: Randn rejects [3, 0] because
  // TensorMeta::is_contiguous() is false for a 0-size last dimension.)
  const Tensor empty_k = Tensor::Zeros({3, 0}, TensorOption().OnDevice(device()));
  ExpectMatchesReference(empty_k, randn_leaf({0, 4}, device(), 2), {3, 4});
  ExpectMatchesReference(randn_leaf({0, 3, 2}, device(), 3), randn_leaf({2, 4}, device(), 4),
                         {0, 3, 4});
}

TEST_P(MatMulOpTest, GradientsTwoDimensional) {
  check_gradients([](const std::vector<Tensor>& x) { return matmul(x[0], x[1]); },
                  {randn_leaf({3, 4}, device(), 1), randn_leaf({4, 5}, device(), 2)});
}

TEST_P(MatMulOpTest, GradientsBatched) {
  check_gradients([](const std::vector<Tensor>& x) { return matmul(x[0], x[1]); },
                  {randn_leaf({2, 3, 4}, device(), 1), randn_leaf({2, 4, 5}, device(), 2)});
}

TEST_P(MatMulOpTest, GradientsWithBroadcastBatch) {
  auto f = [](const std::vector<Tensor>& x) { return matmul(x[0], x[1]); };
  check_gradients(f, {randn_leaf({2, 1, 3, 4}, device(), 1), randn_leaf({3, 4, 2}, device(), 2)});
  // A matrix shared by the batch (the backward stacks the batch into rows).
  check_gradients(f, {randn_leaf({2, 3, 4}, device(), 3), randn_leaf({4, 5}, device(), 4)});
  check_gradients(f, {randn_leaf({3, 4}, device(), 5), randn_leaf({2, 4, 5}, device(), 6)});
}

TEST_P(MatMulOpTest, GradientsThroughTransposedInputs) {
  check_gradients(
      [](const std::vector<Tensor>& x) {
        return matmul(x[0].Transpose(-1, -2), x[1].Transpose(-1, -2));  // (2, 3, 4) @ (2, 4, 5)
      },
      {randn_leaf({2, 4, 3}, device(), 1), randn_leaf({2, 5, 4}, device(), 2)});
  check_gradients(
      [](const std::vector<Tensor>& x) {
        return matmul(x[0].Transpose(0, 1), x[1]);  // (2, 3, 4) @ (4, 5): non-viewable Reshape
      },
      {randn_leaf({3, 2, 4}, device(), 3), randn_leaf({4, 5}, device(), 4)});
}

TEST_P(MatMulOpTest, InnerDimensionMismatchNamesBothShapes) {
  const Tensor a = randn_leaf({2, 3, 4}, device(), 1), b = randn_leaf({5, 6}, device(), 2);
  const std::string message = error_message([&] { matmul(a, b); });
  expect_contains(message, "[2, 3, 4]");
  expect_contains(message, "[5, 6]");
  expect_contains(message, "K = 4");
  expect_contains(message, "K = 5");
}

TEST_P(MatMulOpTest, RejectsOneDimensionalInput) {
  const Tensor v = randn_leaf({4}, device(), 1), m = randn_leaf({4, 3}, device(), 2);
  expect_contains(error_message([&] { matmul(v, m); }), "at least 2");
  expect_contains(error_message([&] { matmul(m.Transpose(0, 1), v); }), "at least 2");
}

TEST_P(MatMulOpTest, RejectsBatchesThatDoNotBroadcast) {
  const Tensor a = randn_leaf({2, 3, 4}, device(), 1), b = randn_leaf({3, 4, 5}, device(), 2);
  const std::string message = error_message([&] { matmul(a, b); });
  expect_contains(message, "[2, 3, 4]");
  expect_contains(message, "[3, 4, 5]");
}

// ops::matmul with accumulate adds the product to what the output holds: for a plain,
// a transposed and a batched product, and with K = 0 (nothing to add).
TEST_P(MatMulOpTest, KernelAccumulatesIntoTheOutput) {
  struct Case { Tensor a, b; };
  const Tensor at = randn_leaf({6, 5}, device(), 3).Transpose(0, 1);  // (5, 6)
  const Case cases[] = {{randn_leaf({5, 7}, device(), 1), randn_leaf({7, 6}, device(), 2)},
                        {at, randn_leaf({6, 4}, device(), 4)},
                        {randn_leaf({3, 5, 7}, device(), 5), randn_leaf({7, 2}, device(), 6)},
                        {Tensor::Zeros({4, 0}).To(device()), Tensor::Zeros({0, 3}).To(device())}};
  for (const Case& c : cases) {
    SCOPED_TRACE(shape_to_string(c.a.sizes()) + " @ " + shape_to_string(c.b.sizes()));
    const Shape shape = ops::matmul_shape(c.a.sizes(), c.b.sizes());
    const Tensor before = randn_leaf(shape, device(), 7);
    const Tensor out = before.Detach().Clone();
    ops::matmul(c.a, c.b, out, /*accumulate=*/true);
    expect_close(out, before + matmul(c.a, c.b), 1e-5f, 1e-5f);
  }
}

TEST_P(MatMulOpTest, KernelRejectsWrongOutputShape) {
  const Tensor a = randn_leaf({2, 3}, device(), 1), b = randn_leaf({3, 4}, device(), 2);
  const Tensor out = Tensor::Empty({2, 5}, a.options());
  expect_contains(error_message([&] { ops::matmul(a, b, out); }), "[2, 4]");
}

INSTANTIATE_TEST_SUITE_P(Devices, MatMulOpTest, ::testing::Values(Device::Cpu(), Device::Cuda(0)),
                         testing::device_name);

}  // namespace
}  // namespace zero
