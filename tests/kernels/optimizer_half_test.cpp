// Tests of the optimiser kernels with 16-bit gradients (kernels/optimizer.cpp): AdamW on
// FP32 master parameters and moments from BF16 and F16 gradients, matching the step
// from the same gradients in F32, with the optional 16-bit copy of each updated
// parameter; more tensors of mixed dtypes than one CUDA launch takes; the gradient
// norm's sum of squares and the clipping scale on 16-bit tensors; and the checks.
#include <cmath>
#include <string>
#include <vector>

#include "tests/kernels/half_support.h"
#include "tests/support/test_support.h"
#include "zero/kernels/tensor_ops.h"

namespace zero {
namespace {

using testing::as;
using testing::contains;
using testing::cpu_f32;
using testing::empty;
using testing::error_message;
using testing::expect_rounded_from;
using testing::rounded_randn;

class OptimizerHalfTest : public testing::DeviceTest {};

constexpr DataType kDtypes[] = {DataType::F32, DataType::BF16, DataType::F16};

ops::AdamWParams hyper(int64_t step) {
  ops::AdamWParams hp;
  hp.lr = 1e-2f;
  hp.weight_decay = 0.1f;
  hp.step = step;
  return hp;
}

// One parameter's state on the CPU, for the reference step.
struct State {
  Tensor param, m, v;
};

// 70 parameters (more than one CUDA launch's 64), of sizes from 0 to about 3000, their
// gradients in F32, BF16 and F16 in turn and rounded to that dtype.
struct Model {
  std::vector<State> cpu;
  std::vector<Tensor> grads;  // F32 on the CPU, holding the rounded values
  std::vector<DataType> dtypes;
};

Model make_model() {
  Model model;
  for (int i = 0; i < 70; ++i) {
    const int64_t n = i == 7 ? 0 : (i * 131) % 3000 + 1;
    const DataType dtype = kDtypes[i % 3];
    model.cpu.push_back({rounded_randn({n}, DataType::F32, 100 + i), Tensor::Zeros({n}),
                         Tensor::Zeros({n})});
    model.grads.push_back(rounded_randn({n}, dtype, 200 + i, 0.1f));
    model.dtypes.push_back(dtype);
  }
  return model;
}

TEST_P(OptimizerHalfTest, AdamWFrom16BitGradientsMatchesTheFp32Step) {
  Model model = make_model();
  std::vector<State> dev;
  for (const State& s : model.cpu) {
    dev.push_back({s.param.To(device()).Clone(), s.m.To(device()).Clone(),
                   s.v.To(device()).Clone()});
  }
  for (int64_t step = 1; step <= 3; ++step) {
    std::vector<ops::AdamWTensor> want, got;
    std::vector<Tensor> copies;
    for (size_t i = 0; i < model.cpu.size(); ++i) {
      const State& c = model.cpu[i];
      want.push_back({c.param, model.grads[i], c.m, c.v, i % 4 != 0});
      // Every other entry also writes a 16-bit copy (BF16, then F16) of its parameter.
      const DataType copy_dtype = i % 4 == 1 ? DataType::BF16 : DataType::F16;
      Tensor copy = i % 2 ? empty(c.param.sizes(), copy_dtype, device()) : Tensor();
      got.push_back({dev[i].param, as(model.grads[i], model.dtypes[i], device()), dev[i].m,
                     dev[i].v, i % 4 != 0, copy});
      copies.push_back(copy);
    }
    ops::adamw(want, hyper(step));
    ops::adamw(got, hyper(step));
    for (size_t i = 0; i < model.cpu.size(); ++i) {
      SCOPED_TRACE("tensor " + std::to_string(i) + ", grad " + to_string(model.dtypes[i]) +
                   ", step " + std::to_string(step));
      expect_rounded_from(dev[i].param, model.cpu[i].param, 1e-6);
      expect_rounded_from(dev[i].m, model.cpu[i].m, 1e-6);
      expect_rounded_from(dev[i].v, model.cpu[i].v, 1e-6);
      if (!copies[i].defined()) continue;
      // The copy is the updated FP32 parameter rounded once, on every device.
      EXPECT_EQ(cpu_f32(copies[i]).ToVector<float>(),
                cpu_f32(as(dev[i].param, copies[i].dtype())).ToVector<float>());
    }
  }
}

TEST_P(OptimizerHalfTest, SumOfSquaresAndScaleOn16BitTensors) {
  Model model = make_model();
  std::vector<Tensor> tensors;
  double want = 0.0;
  for (size_t i = 0; i < model.grads.size(); ++i) {
    tensors.push_back(as(model.grads[i], model.dtypes[i], device()));
    for (float v : model.grads[i].ToVector<float>()) want += static_cast<double>(v) * v;
  }
  // And 4096 values of 1 + 2^-6 in BF16: squares of 1 + 2^-5 + 2^-12, 4225 in all,
  // which FP32 sums exactly and a 16-bit sum could not reach.
  tensors.push_back(as(Tensor::Full({4096}, 1.0f + 0x1p-6f), DataType::BF16, device()));
  want += 4225.0;
  const Tensor total = ops::sum_of_squares(tensors);
  EXPECT_EQ(total.dtype(), DataType::F32);
  EXPECT_NEAR(total.Item(), want, 1e-6 * want);

  ops::scale(tensors, 0.37f);
  for (size_t i = 0; i < model.grads.size(); ++i) {
    SCOPED_TRACE("tensor " + std::to_string(i) + ", " + to_string(model.dtypes[i]));
    // One FP32 product, rounded once: the same bits on every device.
    const Tensor scaled = model.grads[i].Clone();
    ops::binary_scalar(ops::BinaryOp::kMul, scaled, 0.37f, scaled);
    EXPECT_EQ(cpu_f32(tensors[i]).ToVector<float>(),
              cpu_f32(as(scaled, model.dtypes[i])).ToVector<float>());
  }
}

TEST_P(OptimizerHalfTest, ChecksNameTheDtypes) {
  const TensorOption f32 = TensorOption().OnDevice(device());
  const Tensor p = Tensor::Zeros({4}, f32), m = Tensor::Zeros({4}, f32), v = Tensor::Zeros({4}, f32);
  const Tensor g16 = empty({4}, DataType::BF16, device());
  const std::string param16 = error_message(
      [&] { ops::adamw({{g16, g16, m, v, true}}, hyper(1)); });
  EXPECT_TRUE(contains(param16, "param of dtype f32, got bf16")) << param16;
  const std::string moment16 = error_message(
      [&] { ops::adamw({{p, g16, g16, v, true}}, hyper(1)); });
  EXPECT_TRUE(contains(moment16, "m (first moment) of dtype f32, got bf16")) << moment16;
  const std::string ints = error_message(
      [&] { ops::adamw({{p, empty({4}, DataType::I32, device()), m, v, true}}, hyper(1)); });
  EXPECT_TRUE(contains(ints, "grad of dtype f32, bf16 or f16, got i32")) << ints;
  const std::string copy = error_message(
      [&] { ops::adamw({{p, g16, m, v, true, empty({5}, DataType::BF16, device())}}, hyper(1)); });
  EXPECT_TRUE(contains(copy, "param_copy of shape [4]")) << copy;
  const std::string norm = error_message(
      [&] { ops::sum_of_squares({g16, empty({2}, DataType::I32, device())}); });
  EXPECT_TRUE(contains(norm, "every tensor of dtype f32, bf16 or f16, got i32")) << norm;
}

ZERO_INSTANTIATE_DEVICE_TEST(OptimizerHalfTest);

}  // namespace
}  // namespace zero
