// Tests of Communicator (distributed/communicator.h): argument errors (or the "built without
// NCCL" error) on any machine; on a GPU, a group of one, where every collective must
// leave its tensor unchanged, on the default stream and on a side stream.
#include "zero/distributed/communicator.h"

#include <gtest/gtest.h>

#include "tests/support/test_support.h"

namespace zero::dist {
namespace {

using testing::expect_error_mentions;

TEST(CommunicatorTest, BadRankOrMissingNcclIsAClearError) {
  if (Communicator::available()) {
    expect_error_mentions([] { Communicator(2, 2, UniqueId{}, 0); }, {"rank 2 of world 2"});
    expect_error_mentions([] { Communicator(-1, 1, UniqueId{}, 0); }, {"rank -1 of world 1"});
    EXPECT_EQ(Communicator::version().substr(0, 2), "2.");
  } else {
    expect_error_mentions([] { Communicator(0, 1, UniqueId{}, 0); }, {"built without NCCL"});
    expect_error_mentions([] { Communicator::CreateUniqueId(); }, {"built without NCCL"});
    EXPECT_EQ(Communicator::version(), "none");
  }
}

class CommunicatorCudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device visible";
    if (!Communicator::available()) GTEST_SKIP() << "Zero was built without NCCL";
  }
};

TEST_F(CommunicatorCudaTest, SizeOneCollectivesAreIdentityCuda) {
  Communicator comm(0, 1, Communicator::CreateUniqueId(), 0);
  EXPECT_EQ(comm.rank(), 0);
  EXPECT_EQ(comm.world(), 1);
  const std::vector<float> values = {1.5f, -2, 3.25f, 0, 1e-7f, 12345};
  const Tensor t = Tensor::From(values, {2, 3}).Cuda();
  const cuda::Stream compute = cuda::Stream::Default(0);
  comm.AllReduceSum(t, compute);
  comm.AllReduceAverage(t, compute);
  comm.Broadcast(t, 0, compute);
  EXPECT_EQ(t.ToVector<float>(), values);
  // On a side stream: the caller orders it against the default stream with events.
  const cuda::Stream side = cuda::Stream::Create(0);
  cuda::Event ready = cuda::Event::Create(0);
  ready.Record(compute);
  side.Wait(ready);
  comm.AllReduceAverage(t, side);
  side.Synchronize();
  EXPECT_EQ(t.ToVector<float>(), values);
}

TEST_F(CommunicatorCudaTest, WrongTensorsAreClearErrorsCuda) {
  Communicator comm(0, 1, Communicator::CreateUniqueId(), 0);
  const cuda::Stream compute = cuda::Stream::Default(0);
  expect_error_mentions([&] { comm.AllReduceSum(Tensor::Zeros({3}), compute); },
                        {"AllReduceSum", "on cuda:0", "cpu"});
  const Tensor ids = Tensor::FromI32({1, 2}, {2}).Cuda();
  expect_error_mentions([&] { comm.AllReduceAverage(ids, compute); }, {"f32", "i32"});
  const Tensor strided = Tensor::Zeros({4, 4}).Cuda().Transpose(0, 1);
  expect_error_mentions([&] { comm.Broadcast(strided, 0, compute); }, {"contiguous"});
  expect_error_mentions([&] { comm.Broadcast(Tensor::Zeros({3}).Cuda(), 1, compute); },
                        {"root rank in [0, 1)", "got 1"});
}

}  // namespace
}  // namespace zero::dist
