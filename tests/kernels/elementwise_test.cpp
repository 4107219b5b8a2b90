// Tests of the element-wise kernels (kernels/elementwise.cpp + cpu/elementwise_cpu.cpp):
// every unary op against the C++ standard library (GeLU against its formula), every
// backward against finite differences, scalar ops in both orders, binary ops on
// transposed, sliced and expanded operands against a naive loop, and the errors.
#include <cmath>
#include <functional>
#include <string>

#include "tests/support/test_support.h"
#include "zero/kernels/tensor_ops.h"

namespace zero {
namespace {

using testing::error_message;
using testing::contains;

using ops::BinaryOp;
using ops::UnaryOp;
using testing::check_gradients;
using testing::expect_close;

double gelu_reference(double x) {
  const double pi = 3.14159265358979323846;
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / pi) * (x + 0.044715 * x * x * x)));
}

class ElementwiseTest : public testing::DeviceTest {
 protected:
  // Values in (0.1, 3.1) (valid for log and sqrt) and in (-3, 3).
  std::vector<float> positive() const {
    std::vector<float> v;
    for (int i = 0; i < 24; ++i) v.push_back(0.1f + 0.13f * i);
    return v;
  }
  std::vector<float> signed_values() const {
    std::vector<float> v;
    for (int i = 0; i < 24; ++i) v.push_back(-3.0f + 0.26f * i);
    return v;
  }
};

TEST_P(ElementwiseTest, EveryUnaryOpMatchesTheStandardLibrary) {
  struct Case {
    UnaryOp op;
    std::function<double(double)> ref;
    bool positive_only;
  };
  const std::vector<Case> cases = {
      {UnaryOp::kNeg, [](double x) { return -x; }, false},
      {UnaryOp::kExp, [](double x) { return std::exp(x); }, false},
      {UnaryOp::kLog, [](double x) { return std::log(x); }, true},
      {UnaryOp::kSqrt, [](double x) { return std::sqrt(x); }, true},
      {UnaryOp::kTanh, [](double x) { return std::tanh(x); }, false},
      {UnaryOp::kRelu, [](double x) { return x > 0 ? x : 0.0; }, false},
      {UnaryOp::kGelu, gelu_reference, false},
      {UnaryOp::kSilu, [](double x) { return x / (1.0 + std::exp(-x)); }, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("unary op " + std::to_string(static_cast<int>(c.op)));
    const std::vector<float> in = c.positive_only ? positive() : signed_values();
    Tensor x = Tensor::From(in, {4, 6}).To(device());
    Tensor out = Tensor::Empty({4, 6}, x.options());
    ops::unary(c.op, x, out);
    std::vector<float> expected;
    for (float v : in) expected.push_back(static_cast<float>(c.ref(v)));
    expect_close(out, expected, 1e-5f, 1e-6f);
    // The same through a transposed (strided) input and output.
    Tensor out_t = Tensor::Empty({4, 6}, x.options());
    ops::unary(c.op, x.Transpose(0, 1), out_t.Transpose(0, 1));
    expect_close(out_t, expected, 1e-5f, 1e-6f);
  }
}

TEST_P(ElementwiseTest, UnaryBackwardMatchesFiniteDifferences) {
  Tensor pos = (Tensor::Rand({3, 4}, TensorOption(), nullptr) + 0.5f).To(device()).SetRequiresGrad();
  Tensor any = testing::randn_leaf({3, 4}, device(), 7);
  check_gradients([](const std::vector<Tensor>& x) { return neg(x[0]); }, {any});
  check_gradients([](const std::vector<Tensor>& x) { return exp(x[0]); }, {any});
  check_gradients([](const std::vector<Tensor>& x) { return log(x[0]); }, {pos});
  check_gradients([](const std::vector<Tensor>& x) { return sqrt(x[0]); }, {pos});
  check_gradients([](const std::vector<Tensor>& x) { return tanh(x[0]); }, {any});
  // ReLU's kink at 0 is not differentiable: keep its inputs away from it.
  Tensor away = Tensor::From({-1.5f, -0.7f, -0.2f, 0.3f, 0.9f, 1.7f}, {2, 3}).To(device());
  check_gradients([](const std::vector<Tensor>& x) { return relu(x[0]); },
                  {away.SetRequiresGrad()});
  check_gradients([](const std::vector<Tensor>& x) { return gelu(x[0]); }, {any});
  check_gradients([](const std::vector<Tensor>& x) { return silu(x[0]); }, {any});
  // Strided input: the backward reads x through its strides.
  check_gradients([](const std::vector<Tensor>& x) { return gelu(x[0].Transpose(0, 1)); }, {any});
  check_gradients([](const std::vector<Tensor>& x) { return log(x[0].Slice(1, 0, 4, 2)); }, {pos});
}

TEST_P(ElementwiseTest, GeluGradientAgainstItsDerivativeFormula) {
  const std::vector<float> in = signed_values();
  Tensor x = Tensor::From(in, {24}).To(device());
  Tensor y = Tensor::Empty({24}, x.options());
  ops::unary(UnaryOp::kGelu, x, y);
  Tensor g = Tensor::Ones({24}, x.options());
  Tensor gx = Tensor::Empty({24}, x.options());
  ops::unary_backward(UnaryOp::kGelu, x, y, g, gx);
  std::vector<float> expected;
  for (float v : in) {
    const double h = 1e-4;  // central difference of the double-precision formula
    expected.push_back(static_cast<float>((gelu_reference(v + h) - gelu_reference(v - h)) / (2 * h)));
  }
  expect_close(gx, expected, 1e-4f, 1e-5f);
}

TEST_P(ElementwiseTest, ScalarOpsInBothOrders) {
  const std::vector<float> in = positive();
  Tensor a = Tensor::From(in, {4, 6}).To(device());
  auto check = [&](Tensor got, std::function<double(double)> ref) {
    std::vector<float> expected;
    for (float v : in) expected.push_back(static_cast<float>(ref(v)));
    expect_close(got, expected);
  };
  check(a + 2.5f, [](double x) { return x + 2.5; });
  check(2.5f + a, [](double x) { return 2.5 + x; });
  check(a - 2.5f, [](double x) { return x - 2.5; });
  check(2.5f - a, [](double x) { return 2.5 - x; });
  check(a * 3.0f, [](double x) { return x * 3.0; });
  check(3.0f * a, [](double x) { return 3.0 * x; });
  check(a / 4.0f, [](double x) { return x / 4.0; });
  check(4.0f / a, [](double x) { return 4.0 / x; });
  check(-a, [](double x) { return -x; });
  // A strided operand.
  Tensor at = a.Transpose(0, 1);
  Tensor out = Tensor::Empty({6, 4}, a.options());
  ops::binary_scalar(BinaryOp::kSub, at, 1.0f, out, /*scalar_first=*/true);
  check(out.Transpose(0, 1), [](double x) { return 1.0 - x; });
}

TEST_P(ElementwiseTest, ScalarOpGradients) {
  Tensor a = testing::randn_leaf({2, 3}, device(), 3);
  Tensor pos = (Tensor::Rand({2, 3}) + 0.5f).To(device()).SetRequiresGrad();
  check_gradients([](const std::vector<Tensor>& x) { return x[0] + 1.5f; }, {a});
  check_gradients([](const std::vector<Tensor>& x) { return 1.5f + x[0]; }, {a});
  check_gradients([](const std::vector<Tensor>& x) { return x[0] - 1.5f; }, {a});
  check_gradients([](const std::vector<Tensor>& x) { return 1.5f - x[0]; }, {a});
  check_gradients([](const std::vector<Tensor>& x) { return x[0] * -2.0f; }, {a});
  check_gradients([](const std::vector<Tensor>& x) { return -2.0f * x[0]; }, {a});
  check_gradients([](const std::vector<Tensor>& x) { return x[0] / 3.0f; }, {a});
  check_gradients([](const std::vector<Tensor>& x) { return 3.0f / x[0]; }, {pos});
  check_gradients([](const std::vector<Tensor>& x) { return -x[0]; }, {a});
}

// Naive reference: out[i, j] = f(A(i, j), B(i, j)) with A and B read by callbacks.
std::vector<float> reference_2d(int rows, int cols, const std::function<float(int, int)>& a,
                                const std::function<float(int, int)>& b,
                                const std::function<double(double, double)>& f) {
  std::vector<float> out;
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < cols; ++j) out.push_back(static_cast<float>(f(a(i, j), b(i, j))));
  }
  return out;
}

TEST_P(ElementwiseTest, BinaryOpsOnNonContiguousOperands) {
  // base: (4, 6) holding 1 + 0.5 k; a = base^T (6, 4); b = base rows 0, 2 sliced columns
  // every other -> expanded; c = a column expanded across columns.
  std::vector<float> base_values;
  for (int k = 0; k < 24; ++k) base_values.push_back(1.0f + 0.5f * k);
  Tensor base = Tensor::From(base_values, {4, 6}).To(device());
  auto base_at = [&](int r, int c) { return base_values[r * 6 + c]; };

  Tensor a = base.Transpose(0, 1);                      // (6, 4), a(i, j) = base(j, i)
  Tensor b = base.Slice(1, 0, 6, 2).Slice(0, 1, 4, 2);  // (2, 3), b(i, j) = base(1 + 2i, 2j)
  Tensor b_t = b.Transpose(0, 1);                        // (3, 2)
  Tensor col = base.Slice(1, 5, 6).Slice(0, 0, 2);       // (2, 1), col(i) = base(i, 5)
  ASSERT_FALSE(a.is_contiguous());
  ASSERT_FALSE(b.is_contiguous());

  const std::vector<std::pair<BinaryOp, std::function<double(double, double)>>> ops_list = {
      {BinaryOp::kAdd, [](double x, double y) { return x + y; }},
      {BinaryOp::kSub, [](double x, double y) { return x - y; }},
      {BinaryOp::kMul, [](double x, double y) { return x * y; }},
      {BinaryOp::kDiv, [](double x, double y) { return x / y; }},
  };
  for (const auto& [op, f] : ops_list) {
    SCOPED_TRACE("binary op " + std::to_string(static_cast<int>(op)));
    // transposed (6, 4) with a sliced row broadcast (4) -> (6, 4)
    Tensor row = base.Slice(0, 3, 4).Squeeze(0).Slice(0, 0, 4);  // (4), row(j) = base(3, j)
    Tensor out = Tensor::Empty({6, 4}, base.options());
    ops::binary(op, a, row, out);
    expect_close(out, reference_2d(6, 4, [&](int i, int j) { return base_at(j, i); },
                                   [&](int, int j) { return base_at(3, j); }, f));
    // sliced (2, 3) with expanded column (2, 1) -> (2, 3), written into a transposed output
    Tensor out_t = Tensor::Empty({3, 2}, base.options());
    ops::binary(op, b, col.Expand({2, 3}), out_t.Transpose(0, 1));
    expect_close(out_t.Transpose(0, 1),
                 reference_2d(2, 3, [&](int i, int j) { return base_at(1 + 2 * i, 2 * j); },
                              [&](int i, int) { return base_at(i, 5); }, f));
    // transposed slice against its broadcast partner in the other order
    Tensor out2 = Tensor::Empty({3, 2}, base.options());
    ops::binary(op, col.Transpose(0, 1), b_t, out2);
    expect_close(out2, reference_2d(3, 2, [&](int, int j) { return base_at(j, 5); },
                                    [&](int i, int j) { return base_at(1 + 2 * j, 2 * i); }, f));
  }
}

// An operand repeated along the other's leading dimensions: a position table (5, 8)
// over (3, 5, 8), a bias (8), one element in three shapes, in both operand orders, for
// every op; a bias whose size is not a whole number of 16-byte packs (6); an output whose
// size is not either (13 elements). CUDA takes its repeated-operand path for all but the
// bias of 6, which the strided path takes; every case is checked against a naive loop.
TEST_P(ElementwiseTest, BinaryOpsWithRepeatedOperands) {
  auto ramp = [](int64_t n, float start, float step) {
    std::vector<float> v;
    for (int64_t k = 0; k < n; ++k) v.push_back(start + step * static_cast<float>(k % 17));
    return v;
  };
  const std::vector<std::pair<BinaryOp, std::function<double(double, double)>>> ops_list = {
      {BinaryOp::kAdd, [](double x, double y) { return x + y; }},
      {BinaryOp::kSub, [](double x, double y) { return x - y; }},
      {BinaryOp::kMul, [](double x, double y) { return x * y; }},
      {BinaryOp::kDiv, [](double x, double y) { return x / y; }},
  };
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{3, 5, 8}, {5, 8}}, {{3, 5, 8}, {8}}, {{3, 5, 8}, {}}, {{3, 5, 8}, {1}},
      {{3, 5, 8}, {1, 1, 8}}, {{4, 6}, {6}}, {{13}, {}}, {{13}, {1}},
  };
  for (const auto& [full_shape, rep_shape] : cases) {
    const Tensor full_probe = Tensor::Empty(full_shape, TensorOption());
    const Tensor rep_probe = Tensor::Empty(rep_shape, TensorOption());
    const int64_t n = full_probe.numel(), m = rep_probe.numel();
    const std::vector<float> fv = ramp(n, 0.5f, 0.25f), rv = ramp(m, 1.25f, 0.5f);
    const Tensor full = Tensor::From(fv, full_shape).To(device());
    const Tensor rep = Tensor::From(rv, rep_shape).To(device());
    for (const auto& [op, f] : ops_list) {
      SCOPED_TRACE("op " + std::to_string(static_cast<int>(op)) + ", " +
                   shape_to_string(full_shape) + " with " + shape_to_string(rep_shape));
      std::vector<float> forward, backward;
      for (int64_t i = 0; i < n; ++i) {
        forward.push_back(static_cast<float>(f(fv[i], rv[i % m])));
        backward.push_back(static_cast<float>(f(rv[i % m], fv[i])));
      }
      Tensor out = Tensor::Empty(full_shape, full.options());
      ops::binary(op, full, rep, out);
      expect_close(out, forward);
      ops::binary(op, rep, full, out);
      expect_close(out, backward);
    }
  }
}

TEST_P(ElementwiseTest, BinaryGradientsOnNonContiguousOperands) {
  Tensor a = testing::randn_leaf({4, 3}, device(), 11);
  Tensor b = testing::randn_leaf({3, 4}, device(), 12);
  Tensor c = testing::randn_leaf({1, 3}, device(), 13);
  check_gradients([](const std::vector<Tensor>& x) { return x[0].Transpose(0, 1) * x[1]; }, {a, b});
  check_gradients(
      [](const std::vector<Tensor>& x) { return x[0].Slice(0, 0, 4, 2) - x[1].Expand({2, 3}); },
      {a, c});
  Tensor pos = (Tensor::Rand({3, 1}) + 1.0f).To(device()).SetRequiresGrad();
  check_gradients([](const std::vector<Tensor>& x) { return x[0].Transpose(0, 1) / x[1]; },
                  {a, pos});
}

TEST_P(ElementwiseTest, MismatchedShapesNameBoth) {
  Tensor a = Tensor::Zeros({2, 3}).To(device());
  Tensor b = Tensor::Zeros({4, 3}).To(device());
  std::string msg = error_message([&] { a + b; });
  EXPECT_TRUE(contains(msg, "[2, 3]")) << msg;
  EXPECT_TRUE(contains(msg, "[4, 3]")) << msg;
  Tensor out = Tensor::Zeros({2, 4}).To(device());
  msg = error_message([&] { ops::binary(BinaryOp::kAdd, a, Tensor::Zeros({3}).To(device()), out); });
  EXPECT_TRUE(contains(msg, "[2, 4]")) << msg;
  msg = error_message([&] { ops::unary(UnaryOp::kExp, a, out); });
  EXPECT_TRUE(contains(msg, "[2, 3]") && contains(msg, "[2, 4]")) << msg;
  msg = error_message([&] { ops::binary_scalar(BinaryOp::kMul, a, 2.0f, out); });
  EXPECT_TRUE(contains(msg, "[2, 3]") && contains(msg, "[2, 4]")) << msg;
}

TEST_P(ElementwiseTest, MixedDtypesThrow) {
  Tensor f = Tensor::Zeros({3}).To(device());
  Tensor i = Tensor::Zeros({3}, TensorOption().WithDtype(DataType::I32)).To(device());
  std::string msg = error_message([&] { f + i; });
  EXPECT_TRUE(contains(msg, "i32")) << msg;
  EXPECT_THROW(i * f, Error);
  EXPECT_THROW(exp(i), Error);
  EXPECT_THROW(i * 2.0f, Error);
  Tensor out_i = Tensor::Zeros({3}, i.options());
  EXPECT_THROW(ops::binary(BinaryOp::kAdd, f, f, out_i), Error);
}

TEST(ElementwiseDeviceTest, MixedDevicesNameBoth) {
  Tensor a = Tensor::Zeros({3});
  // A hand-made meta on cuda:1 over a CPU buffer: the dispatch must refuse it before
  // touching memory.
  Tensor fake(TensorMeta{{3}, {1}, 0, DataType::F32, Device::Cuda(1)}, a.node());
  const std::string msg = error_message([&] { ops::binary(BinaryOp::kAdd, a, fake, a); });
  EXPECT_TRUE(contains(msg, "cpu")) << msg;
  EXPECT_TRUE(contains(msg, "cuda:1")) << msg;
}

ZERO_INSTANTIATE_DEVICE_TEST(ElementwiseTest);

}  // namespace
}  // namespace zero
