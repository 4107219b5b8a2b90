// Helpers shared by every test suite:
//   - expect_close: compare a tensor with reference values under a tolerance that
//     scales with magnitude (|a - b| <= atol + rtol * |b|);
//   - check_gradients: compare Backward() with central finite differences;
//   - DeviceTest: a fixture parameterised over CPU and CUDA, whose CUDA instances
//     skip (with the reason) on a machine without a GPU. Instances are named
//     "Cpu" and "Cuda", and CTest labels tests whose name contains "Cuda" `cuda`.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "zero/autograd/functional.h"
#include "zero/core/tensor.h"

namespace zero::testing {

/// Expects `actual` to equal `expected` element-wise within atol + rtol * |expected|.
void expect_close(const Tensor& actual, const std::vector<float>& expected, float rtol = 1e-5f,
                  float atol = 1e-6f);
/// Same, against another tensor (on any device); shapes must match.
void expect_close(const Tensor& actual, const Tensor& expected, float rtol = 1e-5f,
                  float atol = 1e-6f);
/// max |actual - expected| over max |expected|: one scale-free error for a whole result
/// (either tensor on any device), for arithmetic whose error scales with the result.
/// Infinite when a value on either side is NaN or the shapes differ.
double max_relative_error(const Tensor& actual, const Tensor& expected);

/// A function of tensors, differentiated by check_gradients.
using TensorFn = std::function<Tensor(const std::vector<Tensor>&)>;

/// What `value_and_grads` returns: f's output, detached, and each leaf's gradient.
struct ValueAndGrads {
  Tensor value;               ///< f(), detached
  std::vector<Tensor> grads;  ///< the gradient of each leaf, in the order given
};
/// Runs `f` and differentiates L = sum(f() * R) (R a fixed random tensor, f's output
/// taken to F32 first) into `leaves`, whose gradients are cleared first: for comparing an
/// op's values and gradients with another's, or one device's with another's.
ValueAndGrads value_and_grads(const std::function<Tensor()>& f, std::vector<Tensor> leaves);

/// Checks the gradients Backward() gives for every input that requires grad against
/// central differences of L = sum(f(inputs) * R), R a fixed random projection (so
/// every output element matters). L is accumulated in double on the host.
void check_gradients(const TensorFn& f, const std::vector<Tensor>& inputs, float eps = 1e-3f,
                     float rtol = 1e-2f, float atol = 1e-3f);

/// Runs `f`, expecting a zero::Error, and returns its message (a failure if none is thrown).
template <typename F>
std::string error_message(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a zero::Error";
  return "";
}

/// True when `text` contains `part`.
inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// Expects `f` to throw a zero::Error whose message contains every one of `parts`.
template <typename F>
void expect_error_mentions(F&& f, const std::vector<std::string>& parts) {
  const std::string msg = error_message(f);
  for (const std::string& p : parts) {
    EXPECT_TRUE(contains(msg, p)) << "message lacks \"" << p << "\": " << msg;
  }
}

/// Random f32 tensor with requires_grad, on `device`, from a fixed seed.
Tensor randn_leaf(const Shape& sizes, Device device, uint64_t seed);

/// Fixture parameterised over devices; GTEST_SKIPs CUDA when no GPU is usable.
class DeviceTest : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override;
  /// The device under test.
  Device device() const { return GetParam(); }
};

/// "Cpu" or "Cuda" (the instance name of a DeviceTest).
std::string device_name(const ::testing::TestParamInfo<Device>& info);

}  // namespace zero::testing

/// Instantiates a DeviceTest-derived suite for the CPU and the first GPU.
#define ZERO_INSTANTIATE_DEVICE_TEST(Suite)                                               \
  INSTANTIATE_TEST_SUITE_P(Devices, Suite,                                                \
                           ::testing::Values(::zero::Device::Cpu(), ::zero::Device::Cuda(0)), \
                           ::zero::testing::device_name)
