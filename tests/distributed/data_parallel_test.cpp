// Tests of DataParallel (distributed/data_parallel.h) on one GPU, a group of one: averaging over
// one rank is the identity, so after DataParallel::Backward every gradient must equal the
// plain Backward's (to rounding: the embedding backward's atomic adds run in a varying
// order). With a small bucket cap the GPT's gradients travel in many
// buckets, so the copies into and out of the flat buffers, the hook order (the tied
// embedding finishes last) and the side-stream events are all exercised.
#include "zero/distributed/data_parallel.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/support/test_support.h"
#include "zero/nn/gpt.h"

namespace zero::dist {
namespace {

using testing::expect_error_mentions;

class DataParallelCudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device visible";
    if (!Communicator::available()) GTEST_SKIP() << "Zero was built without NCCL";
    comm_ = std::make_shared<Communicator>(0, 1, Communicator::CreateUniqueId(), 0);
  }
  std::shared_ptr<Communicator> comm_;
};

TEST_F(DataParallelCudaTest, SizeOneGradientsEqualPlainBackwardCuda) {
  nn::GPT model(nn::GPTConfig{50, 16, 2, 2, 32, 0.0f}, 7);
  model.To(Device::Cuda(0));
  const Tensor x = Tensor::FromI32({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {2, 6}).Cuda();
  const Tensor y = Tensor::FromI32({2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}, {2, 6}).Cuda();
  model.Loss(x, y).Backward();
  std::vector<std::vector<float>> expected;
  for (const auto& [name, p] : model.NamedParameters()) expected.push_back(p.Grad().ToVector<float>());
  model.ZeroGrad();

  DataParallel dp(comm_, model.NamedParameters(), 16 * 1024);  // 16 KiB: many buckets
  EXPECT_GT(dp.buckets().num_buckets(), 3u);
  for (int step = 0; step < 2; ++step) {  // the second step reuses the buffers and events
    dp.Backward(model.Loss(x, y));
    size_t k = 0;
    for (const auto& [name, p] : model.NamedParameters()) {
      ASSERT_TRUE(p.Grad().defined()) << name;
      const std::vector<float> got = p.Grad().ToVector<float>();
      // Not bit for bit: the embedding backward adds with atomics, in a varying order.
      for (size_t i = 0; i < got.size(); ++i) {
        const float want = (step + 1) * expected[k][i];
        ASSERT_NEAR(got[i], want, 1e-5f * std::fabs(want) + 1e-7f)
            << name << "[" << i << "] step " << step;
      }
      ++k;
    }
  }
  EXPECT_FLOAT_EQ(dp.AverageOverRanks(Tensor::Scalar(2.5f).Cuda()), 2.5f);
}

TEST_F(DataParallelCudaTest, UnreachedParameterKeepsNoGradientCuda) {
  Tensor used = Tensor::From({1, 2, 3}, {3}).Cuda().SetRequiresGrad();
  Tensor unused = Tensor::From({4, 5}, {2}).Cuda().SetRequiresGrad();
  DataParallel dp(comm_, {{"used", used}, {"unused", unused}});
  dp.Backward(sum(used * used));
  EXPECT_EQ(used.Grad().ToVector<float>(), (std::vector<float>{2, 4, 6}));
  EXPECT_FALSE(unused.Grad().defined());
}

TEST_F(DataParallelCudaTest, ParametersMustBeOnTheCommunicatorsGpuCuda) {
  const Tensor cpu = Tensor::Zeros({3}).SetRequiresGrad();
  expect_error_mentions([&] { DataParallel(comm_, {{"w", cpu}}); }, {"'w'", "cuda:0", "cpu"});
}

}  // namespace
}  // namespace zero::dist
