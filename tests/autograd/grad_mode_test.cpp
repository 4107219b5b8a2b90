// Tests of the gradient-recording switch (autograd/grad_mode.cpp): NoGradGuard turns
// recording off and restores the previous mode, nests, survives exceptions, and is
// per thread.
#include <thread>

#include "tests/support/test_support.h"
#include "zero/autograd/grad_mode.h"

namespace zero {
namespace {

TEST(GradModeTest, EnabledByDefault) { EXPECT_TRUE(GradMode::enabled()); }

TEST(GradModeTest, GuardDisablesAndRestores) {
  {
    NoGradGuard outer;
    EXPECT_FALSE(GradMode::enabled());
    {
      NoGradGuard inner;
      EXPECT_FALSE(GradMode::enabled());
    }
    EXPECT_FALSE(GradMode::enabled());  // the inner guard restores "off", not "on"
  }
  EXPECT_TRUE(GradMode::enabled());
  GradMode::set_enabled(false);
  { NoGradGuard guard; }
  EXPECT_FALSE(GradMode::enabled());
  GradMode::set_enabled(true);
}

TEST(GradModeTest, GuardRestoresOnException) {
  try {
    NoGradGuard guard;
    throw Error("boom");
  } catch (const Error&) {
  }
  EXPECT_TRUE(GradMode::enabled());
  // A failing op (mismatched shapes) leaves recording on too.
  Tensor a = Tensor::Zeros({2}).SetRequiresGrad();
  EXPECT_THROW(a + Tensor::Zeros({3}), Error);
  EXPECT_TRUE(GradMode::enabled());
}

TEST(GradModeTest, ModeIsPerThread) {
  NoGradGuard guard;
  bool other_thread_enabled = false;
  std::thread t([&] { other_thread_enabled = GradMode::enabled(); });
  t.join();
  EXPECT_TRUE(other_thread_enabled);
  EXPECT_FALSE(GradMode::enabled());
}

TEST(GradModeTest, OpsUnderTheGuardRecordNothing) {
  Tensor x = Tensor::Ones({2}).SetRequiresGrad();
  NoGradGuard guard;
  Tensor y = exp(x * 2.0f).Transpose(0, 0);
  EXPECT_FALSE(y.requires_grad());
  EXPECT_EQ(y.grad_fn(), nullptr);
  EXPECT_TRUE(x.requires_grad());  // the leaf keeps its flag
}

}  // namespace
}  // namespace zero
