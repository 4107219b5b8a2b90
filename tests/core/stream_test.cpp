// Tests for zero/core/stream.h: event timing, pinned copies, and ordering work across
// streams with events. The GPU tests (names contain "Cuda") skip without a GPU; one
// test checks that a machine without a GPU gets clear errors instead.
#include "tests/support/test_support.h"
#include "zero/core/stream.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "zero/autograd/functional.h"
#include "zero/core/device.h"
#include "zero/core/error.h"

namespace zero::cuda {
namespace {

using testing::error_message;

using ::testing::HasSubstr;

#define ZERO_SKIP_WITHOUT_GPU() \
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device visible on this machine"

PinnedBuffer pinned_floats(const std::vector<float>& values) {
  PinnedBuffer buffer(values.size() * sizeof(float));
  for (size_t i = 0; i < values.size(); ++i) buffer.data_ptr<float>()[i] = values[i];
  return buffer;
}

std::vector<float> ramp(int n, float scale) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = scale * static_cast<float>(i);
  return v;
}

TEST(StreamTest, WithoutAGpuEveryEntryThrows) {
  if (cuda_available()) GTEST_SKIP() << "a GPU is visible; this tests the machine without one";
  EXPECT_THROW(Stream::Create(), Error);
  EXPECT_THROW(Stream::Default(), Error);
  EXPECT_THROW(Event::Create(), Error);
  EXPECT_THROW(EventTimer(), Error);
  EXPECT_THROW(PinnedBuffer(64), Error);
}

TEST(StreamTest, CudaEventTimerMeasuresBusyWait) {
  ZERO_SKIP_WITHOUT_GPU();
  EventTimer timer;
  timer.Start();
  busy_wait(2000.0, Stream::Default());  // 2 ms of GPU time
  const float ms = timer.Stop();
  EXPECT_GT(ms, 0.0f);
  EXPECT_GE(ms, 1.5f) << "a 2 ms busy-wait cannot finish sooner";
}

TEST(StreamTest, CudaEventsOnASideStream) {
  ZERO_SKIP_WITHOUT_GPU();
  Stream side = Stream::Create();
  Event start = Event::Create(), end = Event::Create();
  start.Record(side);
  busy_wait(50000.0, side);  // 50 ms: the host reaches Query() long before it ends
  end.Record(side);
  EXPECT_FALSE(end.Query());
  EXPECT_FALSE(side.Query());
  end.Synchronize();
  EXPECT_TRUE(end.Query());
  EXPECT_TRUE(side.Query());
  EXPECT_GE(Event::ElapsedMs(start, end), 40.0f);
}

TEST(StreamTest, CudaCopyAsyncThenSynchronizeGivesTheValues) {
  ZERO_SKIP_WITHOUT_GPU();
  const std::vector<float> values = ramp(1000, 0.5f);
  PinnedBuffer src = pinned_floats(values);
  Stream stream = Stream::Create();
  const Tensor dst = Tensor::Empty({10, 100}, TensorOption().OnDevice(Device::Cuda(0)));
  copy_async(src, dst, stream);
  stream.Synchronize();  // Note [Tensors used on another stream]: before anyone else reads dst
  EXPECT_EQ(dst.ToVector<float>(), values);
}

TEST(StreamTest, CudaTwoStreamsJoinedByEventsGiveTheRightSum) {
  ZERO_SKIP_WITHOUT_GPU();
  const int n = 1 << 16;
  const std::vector<float> va = ramp(n, 1.0f), vb = ramp(n, -3.0f);
  PinnedBuffer pa = pinned_floats(va), pb = pinned_floats(vb);
  const TensorOption cuda = TensorOption().OnDevice(Device::Cuda(0));
  const Tensor a = Tensor::Zeros({n}, cuda), b = Tensor::Zeros({n}, cuda);  // default stream
  Stream s1 = Stream::Create(), s2 = Stream::Create();
  Stream main = Stream::Default();

  // The side streams must not overwrite a and b before the zero-fill on the default stream.
  Event zeros_done = Event::Create();
  zeros_done.Record(main);
  s1.Wait(zeros_done);
  s2.Wait(zeros_done);
  busy_wait(20000.0, s1);  // a's copy lands 20 ms late: without the join the sum reads zeros
  copy_async(pa, a, s1);
  copy_async(pb, b, s2);
  Event a_ready = Event::Create(), b_ready = Event::Create();
  a_ready.Record(s1);
  b_ready.Record(s2);
  main.Wait(a_ready);
  main.Wait(b_ready);

  const Tensor c = a + b;  // on the default stream, after both copies
  const std::vector<float> got = c.ToVector<float>();
  for (int i = 0; i < n; ++i) ASSERT_EQ(got[i], va[i] + vb[i]) << "at " << i;
}

TEST(StreamTest, CudaCopyAsyncRejectsBadDestinations) {
  ZERO_SKIP_WITHOUT_GPU();
  PinnedBuffer small(16);
  Stream stream = Stream::Create();
  const Tensor on_cpu = Tensor::Zeros({4});
  EXPECT_THAT(error_message([&] { copy_async(small, on_cpu, stream); }),
              HasSubstr("expected a CUDA destination tensor, got one on cpu"));
  const Tensor big = Tensor::Zeros({8}, TensorOption().OnDevice(Device::Cuda(0)));
  EXPECT_THAT(error_message([&] { copy_async(small, big, stream); }),
              HasSubstr("at least 32 bytes for a tensor of sizes [8], got 16 bytes"));
  const Tensor strided = Tensor::Zeros({2, 2}, TensorOption().OnDevice(Device::Cuda(0)));
  EXPECT_THAT(error_message([&] { copy_async(small, strided.Transpose(0, 1), stream); }),
              HasSubstr("expected a contiguous destination tensor"));
}

TEST(StreamTest, CudaEventTimerStopWithoutStartThrows) {
  ZERO_SKIP_WITHOUT_GPU();
  EventTimer timer;
  EXPECT_THAT(error_message([&] { timer.Stop(); }), HasSubstr("Start() before Stop()"));
}

}  // namespace
}  // namespace zero::cuda
