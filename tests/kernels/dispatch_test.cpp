// Tests of the kernel dispatch mechanism (kernels/dispatch.h) and the dtype dispatch
// (kernels/dtype_dispatch.h): a stub runs the backend registered for the device and
// names the kernel when a backend is missing; the dtype switch calls the instantiation
// for the tensor's dtype and lists the supported ones otherwise; and every kernel of
// tensor_ops.h reached here has its CPU backend registered.
#include <string>
#include <type_traits>

#include "tests/support/test_support.h"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/dtype_dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero {
namespace {

using testing::contains;
using testing::error_message;

int twice(int x) { return 2 * x; }

TEST(KernelStubTest, RunsTheBackendRegisteredForTheDevice) {
  ops::KernelStub<int(int)> stub("twice");
  stub.Register(ops::Backend::kCpu, twice);
  EXPECT_EQ(stub(Device::Cpu(), 21), 42);
  EXPECT_STREQ(stub.name(), "twice");
}

TEST(KernelStubTest, AMissingBackendNamesTheKernelAndTheReason) {
  ops::KernelStub<int(int)> stub("twice");
  stub.Register(ops::Backend::kCpu, twice);
  const std::string msg = error_message([&] { stub(Device::Cuda(0), 1); });
  EXPECT_TRUE(contains(msg, "twice")) << msg;
  if (cuda_built()) {
    EXPECT_TRUE(contains(msg, "no kernel for cuda:0")) << msg;
  } else {
    EXPECT_TRUE(contains(msg, "built without CUDA")) << msg;
  }
  ops::KernelStub<int(int)> empty("nothing");
  EXPECT_TRUE(contains(error_message([&] { empty(Device::Cpu(), 1); }), "no kernel for cpu"));
}

TEST(DtypeDispatchTest, CallsTheInstantiationForTheDtype) {
  std::string seen;
  auto name = [&](auto tag) {
    using T = typename decltype(tag)::type;
    seen = std::is_same_v<T, float>     ? "float"
           : std::is_same_v<T, int32_t> ? "int32"
           : std::is_same_v<T, bf16>    ? "bf16"
           : std::is_same_v<T, f16>     ? "f16"
                                        : "other";
  };
  ops::dispatch_dtype<ops::AllTypes>(DataType::F32, "test", name);
  EXPECT_EQ(seen, "float");
  ops::dispatch_dtype<ops::AllTypes>(DataType::I32, "test", name);
  EXPECT_EQ(seen, "int32");
  ops::dispatch_dtype<ops::AllTypes>(DataType::BF16, "test", name);
  EXPECT_EQ(seen, "bf16");
  ops::dispatch_dtype<ops::AllTypes>(DataType::F16, "test", name);
  EXPECT_EQ(seen, "f16");
}

TEST(DtypeDispatchTest, AnUnsupportedDtypeListsTheSupportedOnes) {
  const std::string msg = error_message(
      [] { ops::dispatch_dtype<ops::FloatTypes>(DataType::I32, "my_op", [](auto) {}); });
  EXPECT_TRUE(contains(msg, "my_op: dtype i32 is not supported (supported: f32, bf16, f16)")) << msg;
}

TEST(DtypeDispatchTest, AnIntegerAdditionIsRefusedByTheKernel) {
  Tensor a = Tensor::FromI32({1, 2}, {2});
  Tensor out = Tensor::Empty({2}, TensorOption().WithDtype(DataType::I32));
  const std::string msg = error_message([&] { ops::add(a, a, out); });
  EXPECT_TRUE(contains(msg, "binary: dtype i32 is not supported")) << msg;
}

TEST(DtypeDispatchTest, CopiesAndFillsMoveEveryDtype) {
  Tensor ids = Tensor::FromI32({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor t = Tensor::Empty({3, 2}, TensorOption().WithDtype(DataType::I32));
  ops::copy(ids.Transpose(0, 1), t);  // a strided read: the typed loop, not memmove
  const int32_t* p = t.data_ptr<int32_t>();
  EXPECT_EQ(std::vector<int32_t>(p, p + 6), (std::vector<int32_t>{1, 4, 2, 5, 3, 6}));
  ops::fill(t, 7.0f);
  EXPECT_EQ(t.data_ptr<int32_t>()[5], 7);
}

}  // namespace
}  // namespace zero
