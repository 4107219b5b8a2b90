// Tests of the leaf-gradient hook (autograd/leaf_grad_hook.h, called by engine.cpp):
// leaves are announced in the order backward finishes them, each exactly once, with
// their final gradient, and only while a guard is installed.
#include <string>
#include <unordered_map>
#include <vector>

#include "tests/support/test_support.h"
#include "zero/autograd/functional.h"
#include "zero/autograd/leaf_grad_hook.h"

namespace zero {
namespace {

using autograd::LeafGradHookGuard;

class LeafGradHookTest : public testing::DeviceTest {
 protected:
  Tensor leaf(const std::vector<float>& v) const {
    return Tensor::From(v, {static_cast<int64_t>(v.size())}).To(device()).SetRequiresGrad();
  }
  // Installs a hook that records the name of each announced leaf and its gradient then.
  LeafGradHookGuard Record(const std::unordered_map<const TensorImpl*, std::string>& names) {
    return LeafGradHookGuard([this, names](const Tensor& t) {
      const auto it = names.find(t.impl());
      announced_.push_back(it == names.end() ? "?" : it->second);
      grads_at_hook_[announced_.back()] = t.Grad().ToVector<float>();
    });
  }
  std::vector<std::string> announced_;
  std::unordered_map<std::string, std::vector<float>> grads_at_hook_;
};

TEST_P(LeafGradHookTest, AnnouncesLeavesInBackwardOrder) {
  // loss = sum((x * w1) * w2): backward reaches w2 first, then x and w1 together.
  Tensor x = leaf({1, 2}), w1 = leaf({3, 4}), w2 = leaf({5, 6});
  const Tensor loss = sum((x * w1) * w2);
  {
    auto guard = Record({{x.impl(), "x"}, {w1.impl(), "w1"}, {w2.impl(), "w2"}});
    loss.Backward();
  }
  ASSERT_EQ(announced_.size(), 3u);
  EXPECT_EQ(announced_[0], "w2");
  EXPECT_EQ(std::vector<std::string>(announced_.begin() + 1, announced_.end()),
            (std::vector<std::string>{"x", "w1"}));
}

TEST_P(LeafGradHookTest, SharedWeightIsAnnouncedOnceWithItsFinalGradient) {
  // w is read by the first op and the last (like GPT's tied embedding): it must be
  // announced after its second contribution only. loss = sum((2w + x) * w).
  Tensor w = leaf({1, -2}), x = leaf({3, 0.5f});
  const Tensor loss = sum((w * 2.0f + x) * w);
  {
    auto guard = Record({{w.impl(), "w"}, {x.impl(), "x"}});
    loss.Backward();
  }
  EXPECT_EQ(announced_, (std::vector<std::string>{"x", "w"}));
  // d/dw = 4w + x, d/dx = w; the hook saw exactly the final values.
  EXPECT_EQ(grads_at_hook_["w"], (std::vector<float>{7, -7.5f}));
  EXPECT_EQ(grads_at_hook_["x"], (std::vector<float>{1, -2}));
}

TEST_P(LeafGradHookTest, LeafReadTwiceByOneOpIsAnnouncedOnce) {
  Tensor z = leaf({2, 3});
  auto guard = Record({{z.impl(), "z"}});
  sum(z * z).Backward();
  EXPECT_EQ(announced_, (std::vector<std::string>{"z"}));
}

TEST_P(LeafGradHookTest, OnlyLeavesThatRequireGradAndOnlyUnderAGuard) {
  Tensor w = leaf({1, 2});
  const Tensor constant = Tensor::From({4, 5}, {2}).To(device());
  sum(w * constant).Backward();  // no guard: nothing to record
  EXPECT_TRUE(announced_.empty());
  {
    auto guard = Record({{w.impl(), "w"}, {constant.impl(), "constant"}});
    sum(w * constant).Backward();
  }
  EXPECT_EQ(announced_, (std::vector<std::string>{"w"}));
  sum(w * constant).Backward();  // the guard is gone again
  EXPECT_EQ(announced_.size(), 1u);
}

TEST_P(LeafGradHookTest, RootLeafAndNestedGuards) {
  Tensor s = leaf({7});
  int outer = 0, inner = 0;
  LeafGradHookGuard outer_guard([&](const Tensor&) { ++outer; });
  {
    LeafGradHookGuard inner_guard([&](const Tensor&) { ++inner; });
    s.Backward();  // a leaf as its own root is announced too
  }
  s.Backward();
  EXPECT_EQ(inner, 1);
  EXPECT_EQ(outer, 1);
}

ZERO_INSTANTIATE_DEVICE_TEST(LeafGradHookTest);

}  // namespace
}  // namespace zero
