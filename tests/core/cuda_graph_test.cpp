// Tests for zero/core/cuda_graph.h: a captured piece of work replays with the values its
// inputs hold at each replay, writes the same outputs, draws new random numbers when its
// Philox shift moves, and work a graph cannot hold is refused with the GPU left usable.
// They skip without a GPU; on a CPU-only build making a graph throws a clear error.
#include "zero/core/cuda_graph.h"

#include <gtest/gtest.h>

#include <vector>

#include "tests/support/test_support.h"
#include "zero/autograd/functional.h"
#include "zero/core/device.h"
#include "zero/core/error.h"
#include "zero/core/generator.h"

namespace zero::cuda {
namespace {

#define ZERO_SKIP_WITHOUT_GPU() \
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device visible on this machine"

TEST(CudaGraphTest, WithoutAGpuMakingOneSaysWhy) {
  if (cuda_built()) GTEST_SKIP() << "this build has CUDA";
  testing::expect_error_mentions([] { CudaGraph graph(0); }, {"without CUDA"});
}

TEST(CudaGraphCudaTest, ReplayReadsTheInputsAsTheyAreThen) {
  ZERO_SKIP_WITHOUT_GPU();
  const TensorOption gpu = TensorOption().OnDevice(Device::Cuda(0));
  Tensor x = Tensor::Full({1000}, 1.0f, gpu), y;
  CudaGraph graph(0);
  graph.Capture([&] { y = x * 2.0f + 1.0f; });
  ASSERT_TRUE(graph.captured());
  graph.Replay();
  EXPECT_EQ(y.ToVector<float>(), std::vector<float>(1000, 3.0f));
  x.Fill_(5.0f);  // kernel by kernel, on the default stream, before the next replay
  graph.Replay();
  EXPECT_EQ(y.ToVector<float>(), std::vector<float>(1000, 11.0f));
}

TEST(CudaGraphCudaTest, TheShiftMovesTheRandomDrawsByWholeWords) {
  ZERO_SKIP_WITHOUT_GPU();
  const TensorOption gpu = TensorOption().OnDevice(Device::Cuda(0));
  Generator captured(42), eager(42);
  Tensor drawn;
  CudaGraph graph(0);
  graph.Capture([&] { drawn = Tensor::Rand({10}, gpu, &captured); });
  for (uint64_t shift : {0u, 12u, 400u}) {
    graph.Replay(shift);
    eager.SetState(42, shift);
    EXPECT_EQ(drawn.ToVector<float>(), Tensor::Rand({10}, gpu, &eager).ToVector<float>())
        << "shift " << shift;
  }
  testing::expect_error_mentions([&] { graph.Replay(2); }, {"multiple of 4"});
}

TEST(CudaGraphCudaTest, WorkThatWaitsForTheGpuIsRefused) {
  ZERO_SKIP_WITHOUT_GPU();
  const TensorOption gpu = TensorOption().OnDevice(Device::Cuda(0));
  const Tensor x = Tensor::Full({1}, 1.0f, gpu);
  CudaGraph graph(0);
  EXPECT_THROW(graph.Capture([&] { (void)(x + 1.0f).Item(); }), Error);
  EXPECT_FALSE(graph.captured());
  testing::expect_error_mentions([&] { graph.Replay(); }, {"nothing was captured"});
  EXPECT_EQ((x + 1.0f).Item(), 2.0f);  // the GPU and the allocator still serve
  graph.Capture([&] { (void)(x + 1.0f); });  // and the same graph can capture again
  EXPECT_TRUE(graph.captured());
}

}  // namespace
}  // namespace zero::cuda
