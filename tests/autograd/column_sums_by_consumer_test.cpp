// Tests of Note [Column sums made by the consumer] (autograd/engine.cpp): the engine hands
// a producer's buffer to the op that writes its output's whole gradient, and to no other;
// the LayerNorm's kernel sums the columns of the gradient it writes; and a Linear's or an
// MLP's bias gradient, summed that way in a GPT block's pattern, is the column sum of its
// output's gradient, in FP32 and BF16, on each device.
#include <string>
#include <vector>

#include "tests/support/test_support.h"
#include "zero/autograd/functional.h"
#include "zero/autograd/tensor_op.h"
#include "zero/kernels/tensor_ops.h"

namespace zero {
namespace {

using testing::max_relative_error;
using testing::randn_leaf;

// What the two test ops below saw.
struct Seen {
  Tensor buffer;       // the producer's buffer, as handed out
  bool asked = false;  // the engine asked the producer for it
  bool given = false;  // the consumer got a buffer
};

// An identity that wants the column sums of its output's gradient.
class OpWantsSums : public autograd::TensorOp {
 public:
  explicit OpWantsSums(Seen* seen) : seen_(seen) {}
  const char* name() const override { return "OpWantsSums"; }
  Tensor ColumnSumsOfGrad(size_t /*k*/) override {
    seen_->asked = true;
    seen_->buffer = Tensor::Zeros({inputs()[0].size(-1)});
    return seen_->buffer;
  }

 protected:
  std::vector<Tensor> OpValue_(const std::vector<Tensor>& in) override { return {in[0].Clone()}; }
  std::vector<Tensor> Backward_(const std::vector<Tensor>& grad) override { return {grad[0]}; }

 private:
  Seen* seen_;
};

// An identity times 10 over any number of inputs (their sum) that adds its input's
// gradient so far and writes the column sums of the gradient it returns, when given a
// buffer.
class OpSumsColumns : public autograd::TensorOp {
 public:
  explicit OpSumsColumns(Seen* seen) : seen_(seen) {}
  const char* name() const override { return "OpSumsColumns"; }
  bool AddsGradSoFar(size_t /*i*/) const override { return true; }
  bool SumsGradColumns(size_t /*i*/) const override { return true; }

 protected:
  std::vector<Tensor> OpValue_(const std::vector<Tensor>& in) override {
    Tensor out = in[0].Clone();
    for (size_t i = 1; i < in.size(); ++i) out = out + in[i];
    return {out};
  }
  std::vector<Tensor> Backward_(const std::vector<Tensor>& grad) override {
    std::vector<Tensor> grads;
    for (size_t i = 0; i < inputs().size(); ++i) {
      Tensor g = grad[0] * 10.0f;
      if (grad_so_far(i).defined()) g = g + grad_so_far(i);
      if (grad_column_sums(i).defined()) {
        seen_->given = true;
        ops::copy(sum(g, 0), grad_column_sums(i));
      }
      grads.push_back(g);
    }
    return grads;
  }

 private:
  Seen* seen_;
};

Tensor leaf(const std::vector<float>& v, const Shape& s) {
  return Tensor::From(v, s).SetRequiresGrad();
}

TEST(ColumnSumsByConsumerTest, TheLastReaderOfAnOutputSumsItsWholeGradient) {
  // y's gradient: 3 from the product, 10 from the op, which runs last (it is further
  // from the root) and adds the 3 in: 13 per element, 26 per column of two rows.
  Seen seen;
  Tensor x = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor y = autograd::RunOp<OpWantsSums>({x}, &seen);
  sum(autograd::RunOp<OpSumsColumns>({y}, &seen) * 1.0f * 1.0f + y * 3.0f).Backward();
  EXPECT_TRUE(seen.asked);
  EXPECT_TRUE(seen.given);
  testing::expect_close(seen.buffer, {26, 26, 26});
  testing::expect_close(x.Grad(), std::vector<float>(6, 13.0f));
}

TEST(ColumnSumsByConsumerTest, NoBufferWhenAnotherReaderComesLaterOrReadsItTwice) {
  // The product, further from the root now, runs after the op: the op's gradient is not
  // y's whole one, so the producer is not asked.
  Seen seen;
  Tensor x = leaf({1, 2, 3, 4}, {2, 2});
  Tensor y = autograd::RunOp<OpWantsSums>({x}, &seen);
  sum(y * 3.0f * 1.0f * 1.0f + autograd::RunOp<OpSumsColumns>({y}, &seen)).Backward();
  EXPECT_FALSE(seen.asked);
  EXPECT_FALSE(seen.given);
  testing::expect_close(x.Grad(), std::vector<float>(4, 13.0f));
  // One op reading y twice returns two gradients for it, summed by the engine.
  Seen twice;
  Tensor z = leaf({1, 2}, {1, 2});
  Tensor w = autograd::RunOp<OpWantsSums>({z}, &twice);
  sum(autograd::RunOp<OpSumsColumns>({w, w}, &twice)).Backward();
  EXPECT_FALSE(twice.asked);
  testing::expect_close(z.Grad(), {20, 20});
}

class ColumnSumsByConsumerDeviceTest : public testing::DeviceTest {};

// The column sums the LayerNorm's backward writes equal those of the grad_x it writes,
// with and without a gradient to add, for widths of the fused kernel (96, 768) and one
// past it (1100), in FP32 and BF16, the sums in F32 and in x's dtype.
TEST_P(ColumnSumsByConsumerDeviceTest, TheLayerNormSumsTheColumnsOfItsGradient) {
  for (const int64_t c : {96, 768, 1100}) {
    for (const DataType dtype : {DataType::F32, DataType::BF16}) {
      for (const bool add : {false, true}) {
        SCOPED_TRACE(std::to_string(c) + " " + to_string(dtype) + std::string(add ? " add" : ""));
        const int64_t n = 300;
        const auto make = [&](const Shape& s, uint64_t seed) {
          return to_dtype(randn_leaf(s, device(), seed).Detach(), dtype);
        };
        const Tensor x = make({n, c}, 1), g = make({n, c}, 2), w = make({c}, 3);
        const Tensor so_far = add ? make({n, c}, 4) : Tensor();
        const TensorOption f32 = TensorOption().OnDevice(device());
        const Tensor mean = Tensor::Empty({n}, f32), rstd = Tensor::Empty({n}, f32);
        ops::layer_norm_forward(x, w, make({c}, 5), 1e-5f, Tensor::Empty({n, c}, x.options()),
                                mean, rstd);
        for (const DataType sums_dtype : {DataType::F32, dtype}) {
          const Tensor gx = Tensor::Empty({n, c}, x.options());
          const Tensor gw = Tensor::Empty({c}, f32), gb = Tensor::Empty({c}, f32);
          const Tensor sums = Tensor::Empty({c}, f32.WithDtype(sums_dtype));
          ops::layer_norm_backward(g, x, w, mean, rstd, gx, gw, gb, so_far, sums);
          const Tensor want = sum(to_dtype(gx, DataType::F32), 0);
          const double tolerance = sums_dtype == DataType::F32 ? 1e-5 : 1e-2;
          EXPECT_LT(max_relative_error(to_dtype(sums, DataType::F32), want), tolerance);
        }
      }
    }
  }
}

// A GPT block's pattern: y = linear(x, w, b, r) (or an MLP with residual r), then
// out = linear(layer_norm(y), w2, b2, y): the LayerNorm runs last of y's two readers.
// b's gradient must be the column sums of y's gradient, which a run from a detached
// copy of y gives.
TEST_P(ColumnSumsByConsumerDeviceTest, ABiasGradientSummedByTheLayerNormIsTheColumnSum) {
  const Device d = device();
  const Tensor x = randn_leaf({4, 16, 96}, d, 1), r = randn_leaf({4, 16, 96}, d, 2);
  Tensor w = randn_leaf({96, 96}, d, 3), b = randn_leaf({96}, d, 4);
  const Tensor fc_w = randn_leaf({128, 96}, d, 5), fc_b = randn_leaf({128}, d, 6);
  const Tensor proj_w = randn_leaf({96, 128}, d, 7);
  const Tensor g = randn_leaf({96}, d, 8), beta = randn_leaf({96}, d, 9);
  const Tensor w2 = randn_leaf({96, 96}, d, 10), b2 = randn_leaf({96}, d, 11);
  const Tensor s = randn_leaf({4, 16, 96}, d, 12).Detach();
  for (const DataType dtype : {DataType::F32, DataType::BF16}) {
    for (const bool use_mlp : {false, true}) {
      SCOPED_TRACE(to_string(dtype) + std::string(use_mlp ? " mlp" : " linear"));
      const auto c = [&](const Tensor& t) { return to_dtype(t, dtype); };
      const auto tail = [&](const Tensor& y) {
        const Tensor out = linear(layer_norm(y, c(g), c(beta)), c(w2), c(b2), y);
        return sum(to_dtype(out, DataType::F32) * s);
      };
      for (Tensor* p : {&b, &w}) p->ZeroGrad();
      const Tensor y = use_mlp ? mlp(c(x), c(fc_w), c(fc_b), c(proj_w), c(b), c(r))
                               : linear(c(x), c(w), c(b), c(r));
      EXPECT_TRUE(y.grad_fn()->ColumnSumsOfGrad(0).defined());
      tail(y).Backward();
      const Tensor copy = y.Detach().SetRequiresGrad();
      tail(copy).Backward();
      const Tensor want = sum(to_dtype(copy.Grad(), DataType::F32).View({-1, 96}), 0);
      EXPECT_LT(max_relative_error(b.Grad(), want), 1e-5);
    }
  }
  // A Linear without a bias wants no sums.
  EXPECT_FALSE(linear(x, w).grad_fn()->ColumnSumsOfGrad(0).defined());
}

// The sum so far is a transposed view (the transpose's backward): the kernel cannot add
// it, so the LayerNorm adds it after its kernel and sums the columns in a pass of its
// own. The LayerNorm, deepest in the first term, still runs last of y's readers.
TEST_P(ColumnSumsByConsumerDeviceTest, ASumSoFarTheKernelCannotAddIsSummedApart) {
  const Device d = device();
  Tensor x = randn_leaf({32, 48}, d, 1), w = randn_leaf({48, 48}, d, 2);
  Tensor b = randn_leaf({48}, d, 3);
  const Tensor g = randn_leaf({48}, d, 4), beta = randn_leaf({48}, d, 5);
  const Tensor s = randn_leaf({32, 48}, d, 6).Detach(), t = randn_leaf({48, 32}, d, 7).Detach();
  const auto tail = [&](const Tensor& y) {
    return sum(layer_norm(y, g, beta) * s * 1.0f * 1.0f) + sum(y.Transpose(0, 1) * t);
  };
  const Tensor y = linear(x, w, b);
  tail(y).Backward();
  const Tensor copy = y.Detach().SetRequiresGrad();
  tail(copy).Backward();
  EXPECT_LT(max_relative_error(b.Grad(), sum(copy.Grad(), 0)), 1e-5);
}

ZERO_INSTANTIATE_DEVICE_TEST(ColumnSumsByConsumerDeviceTest);

}  // namespace
}  // namespace zero
