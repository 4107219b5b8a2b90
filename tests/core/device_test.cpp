// Tests of Device (core/device.h): parsing, printing, equality, the CUDA queries,
// and the clear error a CUDA tensor gives on a machine (or build) without a GPU.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "tests/support/test_support.h"
#include "zero/core/device.h"
#include "zero/core/error.h"
#include "zero/core/tensor.h"

namespace zero {
namespace {

using testing::error_message;
using testing::contains;

TEST(DeviceTest, ParseAcceptsTheThreeForms) {
  EXPECT_EQ(Device::Parse("cpu"), Device::Cpu());
  EXPECT_EQ(Device::Parse("cuda"), Device::Cuda(0));
  const Device d = Device::Parse("cuda:3");
  EXPECT_TRUE(d.is_cuda());
  EXPECT_FALSE(d.is_cpu());
  EXPECT_EQ(d.index(), 3);
  EXPECT_EQ(d.type(), DeviceType::CUDA);
}

TEST(DeviceTest, ParseRejectsBadStringsQuotingThem) {
  for (const std::string bad : {"gpu", "CPU", "cuda:", "cuda:-1", "cuda:1x", "cuda:x", " cpu",
                                "cpu:0", "cuda:99999999999999999999", ""}) {
    const std::string msg = error_message([&] { Device::Parse(bad); });
    EXPECT_TRUE(contains(msg, "\"" + bad + "\"")) << "input \"" << bad << "\": " << msg;
  }
}

TEST(DeviceTest, ConstructorRejectsBadIndices) {
  EXPECT_THROW(Device(DeviceType::CPU, 1), Error);
  EXPECT_THROW(Device(DeviceType::CUDA, -1), Error);
}

TEST(DeviceTest, ToStringAndStreaming) {
  EXPECT_EQ(Device::Cpu().ToString(), "cpu");
  EXPECT_EQ(Device::Cuda().ToString(), "cuda:0");
  EXPECT_EQ(Device::Cuda(5).ToString(), "cuda:5");
  std::ostringstream os;
  os << Device::Cuda(2);
  EXPECT_EQ(os.str(), "cuda:2");
  EXPECT_EQ(Device::Parse(Device::Cuda(7).ToString()), Device::Cuda(7));
}

TEST(DeviceTest, Equality) {
  EXPECT_EQ(Device(), Device::Cpu());
  EXPECT_EQ(Device::Cuda(1), Device(DeviceType::CUDA, 1));
  EXPECT_NE(Device::Cuda(0), Device::Cuda(1));
  EXPECT_NE(Device::Cpu(), Device::Cuda(0));
}

TEST(DeviceTest, CudaQueriesAreConsistent) {
  EXPECT_GE(cuda_device_count(), 0);
  if (!cuda_built()) {
    EXPECT_EQ(cuda_device_count(), 0);
  }
  EXPECT_EQ(cuda_available(), cuda_device_count() > 0);
}

TEST(DeviceTest, CudaTensorWithoutGpuThrowsAClearError) {
  if (cuda_available()) GTEST_SKIP() << "a GPU is visible; this tests the machine without one";
  const std::string msg = error_message([] { Tensor::Empty({2, 3}, TensorOption().OnDevice(Device::Cuda(0))); });
  EXPECT_TRUE(contains(msg, "cuda")) << msg;
  EXPECT_TRUE(contains(msg, "without CUDA") || contains(msg, "not available")) << msg;
}

TEST(DeviceTest, NonexistentGpuIndexThrows) {
  const int missing = cuda_device_count();  // one past the last GPU
  const std::string msg = error_message(
      [&] { Tensor::Zeros({1}, TensorOption().OnDevice(Device::Cuda(missing))); });
  EXPECT_TRUE(contains(msg, "cuda:" + std::to_string(missing))) << msg;
}

}  // namespace
}  // namespace zero
