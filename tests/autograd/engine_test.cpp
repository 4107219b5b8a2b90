// Tests of the backward engine (autograd/engine.cpp): accumulation in diamonds and
// across calls, the errors for a missing gradient and a freed graph, keep_graph,
// freeing the graph after use, deep graphs without recursion, the shape of the
// gradients leaves receive, inputs kept as edges without their values, and ops that
// add the gradient their input has so far.
#include <cmath>
#include <memory>
#include <string>

#include "tests/support/test_support.h"
#include "zero/autograd/functional.h"
#include "zero/autograd/grad_mode.h"
#include "zero/autograd/tensor_op.h"
#include "zero/core/generator.h"

namespace zero {
namespace {

using testing::error_message;
using testing::contains;

using testing::expect_close;

class EngineTest : public testing::DeviceTest {
 protected:
  Tensor leaf(const std::vector<float>& v, const Shape& s) const {
    return Tensor::From(v, s).To(device()).SetRequiresGrad();
  }
};

// An identity whose backward adds the gradient its input has so far (Note [Sums made by
// the op] in engine.cpp) and records whether it was handed one.
class OpAddsSoFar : public autograd::TensorOp {
 public:
  explicit OpAddsSoFar(bool* handed) : handed_(handed) {}
  const char* name() const override { return "OpAddsSoFar"; }
  bool AddsGradSoFar(size_t /*i*/) const override { return true; }

 protected:
  std::vector<Tensor> OpValue_(const std::vector<Tensor>& in) override { return {in[0].Clone()}; }
  std::vector<Tensor> Backward_(const std::vector<Tensor>& grad) override {
    *handed_ = grad_so_far(0).defined();
    return {*handed_ ? grad[0] * 10.0f + grad_so_far(0) : grad[0] * 10.0f};
  }

 private:
  bool* handed_;
};

TEST_P(EngineTest, AnOpAddsTheGradientItsInputHasSoFar) {
  // x = 2a feeds the addition (gradient 1) and the op (10): da = 2 (1 + 10).
  bool handed = false;
  Tensor a = leaf({1, 2, 3}, {3});
  Tensor x = a * 2.0f;
  sum(x + autograd::RunOp<OpAddsSoFar>({x}, &handed)).Backward();
  EXPECT_TRUE(handed);
  expect_close(a.Grad(), {22, 22, 22});
  // A leaf's .grad is never handed over: the engine adds as before.
  Tensor b = leaf({1, 2}, {2});
  sum(b + autograd::RunOp<OpAddsSoFar>({b}, &handed)).Backward();
  EXPECT_FALSE(handed);
  expect_close(b.Grad(), {11, 11});
  // Nor is the slot of a cast's output, whose gradient may go past the cast.
  Tensor c = leaf({1, 2}, {2});
  Tensor h = to_dtype(c, DataType::BF16);
  sum(to_dtype(h + autograd::RunOp<OpAddsSoFar>({h}, &handed), DataType::F32)).Backward();
  EXPECT_FALSE(handed);
  expect_close(c.Grad(), {11, 11});
  // The op is handed what the input has when it runs; later gradients add as before.
  Tensor d = leaf({1, 2}, {2});
  Tensor y = d * 1.0f;
  Tensor first = autograd::RunOp<OpAddsSoFar>({y}, &handed);
  sum(first + y * 3.0f).Backward();  // whichever of y's consumers runs first: 10 + 3
  expect_close(d.Grad(), {13, 13});
}

// The same, also adding into a leaf's .grad (as the embedding adds into its table's).
class OpAddsLeafSoFar : public OpAddsSoFar {
 public:
  using OpAddsSoFar::OpAddsSoFar;
  bool AddsLeafGradSoFar(size_t /*i*/) const override { return true; }
};

TEST_P(EngineTest, AnOpAddsIntoTheGradItsLeafGotInThisPass) {
  // b * 3 is nearer the root than the op (two products below it), so its backward runs
  // first and gives b its .grad, which the op is then handed: db = 3 + 10.
  bool handed = false;
  Tensor b = leaf({1, 2}, {2});
  const auto loss = [&] {
    return sum((autograd::RunOp<OpAddsLeafSoFar>({b}, &handed) * 1.0f) * 1.0f + b * 3.0f);
  };
  loss().Backward();
  EXPECT_TRUE(handed);
  expect_close(b.Grad(), {13, 13});
  // A .grad from an earlier pass is not handed over, nor written in place: a tensor
  // holding it keeps its values while the second pass adds to it.
  const Tensor before = b.Grad();
  loss().Backward();
  EXPECT_FALSE(handed);
  expect_close(before, {13, 13});
  expect_close(b.Grad(), {26, 26});
}

TEST_P(EngineTest, DiamondAccumulates) {
  // y = x * x + 3 x, both paths from x meet again: dy/dx = 2x + 3.
  Tensor x = leaf({1, -2, 0.5f}, {3});
  Tensor a = x * x;
  Tensor b = x * 3.0f;
  sum(a + b).Backward();
  expect_close(x.Grad(), {5, -1, 4});
  // The same tensor used twice by one op.
  Tensor z = leaf({2, 3}, {2});
  sum(z + z).Backward();
  expect_close(z.Grad(), {2, 2});
}

TEST_P(EngineTest, LeafGradAccumulatesOverCallsUntilZeroGrad) {
  Tensor x = leaf({1, 2}, {2});
  sum(x * 2.0f).Backward();
  expect_close(x.Grad(), {2, 2});
  sum(x * 3.0f).Backward();
  expect_close(x.Grad(), {5, 5});
  x.ZeroGrad();
  EXPECT_FALSE(x.Grad().defined());
  sum(x * x).Backward();
  expect_close(x.Grad(), {2, 4});
}

TEST_P(EngineTest, BackwardWithExplicitGradient) {
  Tensor x = leaf({1, 2, 3}, {3});
  Tensor y = x * x;
  y.Backward(Tensor::From({1, 0, -1}, {3}).To(device()));
  expect_close(x.Grad(), {2, 0, -6});
  Tensor w = leaf({1, 2}, {2});
  const std::string msg = error_message([&] { (w * 2.0f).Backward(Tensor::Ones({3}).To(device())); });
  EXPECT_TRUE(contains(msg, "[2]") && contains(msg, "[3]")) << msg;
}

TEST_P(EngineTest, NonScalarWithoutGradientThrows) {
  Tensor x = leaf({1, 2, 3, 4}, {2, 2});
  const std::string msg = error_message([&] { (x * 2.0f).Backward(); });
  EXPECT_TRUE(contains(msg, "[2, 2]")) << msg;
  EXPECT_TRUE(contains(msg, "one-element")) << msg;
  const std::string no_grad = error_message([&] { Tensor::Ones({1}).To(device()).Backward(); });
  EXPECT_TRUE(contains(no_grad, "requires grad")) << no_grad;
}

TEST_P(EngineTest, SecondBackwardNeedsKeepGraph) {
  Tensor x = leaf({1, 2}, {2});
  Tensor loss = sum(x * x);
  loss.Backward();
  const std::string msg = error_message([&] { loss.Backward(); });
  EXPECT_TRUE(contains(msg, "keep_graph")) << msg;
}

TEST_P(EngineTest, KeepGraphAllowsASecondBackwardThatDoublesTheGradient) {
  Tensor x = leaf({1, 2}, {2});
  Tensor w = leaf({3, -1}, {2});
  Tensor loss = sum(exp(x) * w);
  loss.Backward(Tensor(), /*keep_graph=*/true);
  const std::vector<float> gx = x.Grad().ToVector<float>();
  const std::vector<float> gw = w.Grad().ToVector<float>();
  loss.Backward();
  expect_close(x.Grad(), {2 * gx[0], 2 * gx[1]});
  expect_close(w.Grad(), {2 * gw[0], 2 * gw[1]});
  EXPECT_NEAR(gw[0], std::exp(1.0f), 1e-5);
  EXPECT_THROW(loss.Backward(), Error);  // the second call freed it
}

TEST_P(EngineTest, GraphIsFreedAfterBackward) {
  Tensor x = leaf({1, 2, 3}, {3});
  std::weak_ptr<autograd::TensorOp> inner;
  std::weak_ptr<autograd::TensorOp> unary;
  Tensor loss;
  {
    Tensor y = x * 2.0f;
    Tensor z = exp(y);
    inner = y.grad_fn();
    unary = z.grad_fn();
    loss = sum(z);
  }
  ASSERT_FALSE(inner.expired());
  loss.Backward();
  EXPECT_TRUE(inner.expired());
  EXPECT_TRUE(unary.expired());
  EXPECT_TRUE(loss.grad_fn()->inputs().empty());
  expect_close(x.Grad(), {2 * std::exp(2.0f), 2 * std::exp(4.0f), 2 * std::exp(6.0f)}, 1e-5f);
}

TEST_P(EngineTest, KeepGraphKeepsTheGraph) {
  Tensor x = leaf({1, 2, 3}, {3});
  std::weak_ptr<autograd::TensorOp> inner;
  Tensor loss;
  {
    Tensor y = x * 2.0f;
    inner = y.grad_fn();
    loss = sum(y);
  }
  loss.Backward(Tensor(), true);
  EXPECT_FALSE(inner.expired());
  loss = Tensor();  // dropping the root drops the graph
  EXPECT_TRUE(inner.expired());
}

TEST_P(EngineTest, DeepChainDoesNotOverflowTheStack) {
  constexpr int kDepth = 20000;
  Tensor x = leaf({1, 2}, {2});
  Tensor y = x;
  for (int i = 0; i < kDepth; ++i) y = y + x;
  sum(y).Backward();
  expect_close(x.Grad(), {kDepth + 1.0f, kDepth + 1.0f});
}

TEST_P(EngineTest, DeepGraphDroppedWithoutBackwardDoesNotOverflowTheStack) {
  // Destroying an unused graph must not recurse once per op.
  constexpr int kDepth = 100000;
  Tensor x = leaf({1}, {1});
  Tensor y = x;
  for (int i = 0; i < kDepth; ++i) y = y * 1.0f;
  std::weak_ptr<autograd::TensorOp> first = y.grad_fn();
  y = Tensor();
  EXPECT_TRUE(first.expired());
}

TEST_P(EngineTest, NoGradGuardStopsRecording) {
  Tensor x = leaf({1, 2}, {2});
  Tensor y;
  {
    NoGradGuard no_grad;
    y = x * 2.0f + x;
  }
  EXPECT_FALSE(y.requires_grad());
  EXPECT_TRUE(y.is_leaf());
  EXPECT_THROW(sum(y).Backward(), Error);
}

TEST_P(EngineTest, DetachBreaksTheGraph) {
  Tensor x = leaf({1, 2}, {2});
  Tensor w = leaf({3, 4}, {2});
  Tensor y = (x * x).Detach() * w;  // x gets nothing through the detached part
  sum(y).Backward();
  EXPECT_FALSE(x.Grad().defined());
  expect_close(w.Grad(), {1, 4});
}

TEST_P(EngineTest, InputsThatDoNotRequireGradGetNothing) {
  Tensor x = leaf({1, 2}, {2});
  Tensor c = Tensor::From({5, 6}, {2}).To(device());
  sum(x * c).Backward();
  expect_close(x.Grad(), {5, 6});
  EXPECT_FALSE(c.Grad().defined());
}

TEST_P(EngineTest, BackwardOnALeaf) {
  Tensor x = leaf({4}, {1});
  x.Backward();
  expect_close(x.Grad(), {1});
}

TEST_P(EngineTest, LeafGradIsContiguousEvenFromAnExpandedGradient) {
  // sum's backward hands back a stride-0 view of the upstream gradient.
  Tensor x = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
  sum(x).Backward();
  EXPECT_TRUE(x.Grad().is_contiguous());
  expect_close(x.Grad(), std::vector<float>(6, 1.0f));
  Tensor b = leaf({1, 2, 3}, {3});
  Tensor a = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
  (a + b.Expand({2, 3})).Backward(Tensor::Ones({2, 3}).To(device()));
  EXPECT_TRUE(a.Grad().is_contiguous());
  EXPECT_TRUE(b.Grad().is_contiguous());
  expect_close(b.Grad(), {2, 2, 2});
}

TEST_P(EngineTest, LeafGradsOwnTheirBuffers) {
  // a + b passes one gradient tensor to both inputs; each leaf must still own its
  // .grad, so that an in-place update of one (clipping, say) cannot change the other.
  Tensor a = leaf({1, 2}, {2});
  Tensor b = leaf({3, 4}, {2});
  Tensor g = Tensor::From({1, 1}, {2}).To(device());
  (a + b).Backward(g);
  EXPECT_FALSE(a.Grad().SharesStorage(b.Grad()));
  EXPECT_FALSE(a.Grad().SharesStorage(g));  // nor the caller's gradient
  {
    NoGradGuard no_grad;
    a.Grad().Fill_(0.0f);
  }
  expect_close(b.Grad(), {1, 1});
  expect_close(g, {1, 1});
}

TEST_P(EngineTest, SetRequiresGradRejectsIntAndNonLeaf) {
  Tensor ids = Tensor::FromI32({1, 2}, {2}).To(device());
  EXPECT_THROW(ids.SetRequiresGrad(), Error);
  Tensor x = leaf({1, 2}, {2});
  Tensor y = x * 2.0f;
  EXPECT_THROW(y.SetRequiresGrad(), Error);
}

// Note [Version counter]: a tensor the forward used, written in place before the
// backward, would give silently wrong gradients (w.grad = [100, 100] instead of [2, 2]
// here); Backward must refuse, naming the op.
TEST_P(EngineTest, InPlaceWriteToASavedInputIsRefused) {
  Tensor a = leaf({2, 2}, {2}).Detach();  // the data, not requiring grad
  Tensor w = leaf({1, 1}, {2});
  Tensor r = sum(a * w);
  {
    NoGradGuard no_grad;
    a.Fill_(100.0f);
  }
  const std::string msg = error_message([&] { r.Backward(); });
  EXPECT_TRUE(contains(msg, "OpMul")) << msg;
  EXPECT_TRUE(contains(msg, "modified in place")) << msg;
}

TEST_P(EngineTest, InPlaceWriteToAParameterOrThroughADetachedViewIsRefused) {
  {
    Tensor a = leaf({2, 2}, {2}).Detach();
    Tensor w = leaf({1, 1}, {2});
    Tensor r = sum(a * w);
    NoGradGuard no_grad;
    w.Fill_(10.0f);  // as an optimiser step between forward and backward would
    EXPECT_TRUE(contains(error_message([&] { r.Backward(); }), "modified in place"));
  }
  {
    Tensor a = leaf({1, 2, 3, 4}, {4});
    Tensor r = sum(exp(a));  // OpExp saves its output, detached
    Tensor view = r.grad_fn()->inputs()[0].Detach().Slice(0, 0, 2);
    NoGradGuard no_grad;
    view.Fill_(0.0f);  // a write through another view of exp(a)'s buffer
    EXPECT_TRUE(contains(error_message([&] { r.Backward(); }), "modified in place"));
  }
}

TEST_P(EngineTest, WritesAfterBackwardOrToUnusedTensorsAreFine) {
  Tensor a = leaf({2, 2}, {2}).Detach();
  Tensor w = leaf({1, 1}, {2});
  Tensor unrelated = Tensor::Zeros({2}).To(device());
  Tensor r = sum(a * w);
  {
    NoGradGuard no_grad;
    unrelated.Fill_(3.0f);
  }
  r.Backward();
  expect_close(w.Grad(), {2, 2});
  NoGradGuard no_grad;
  a.Fill_(100.0f);  // the graph is gone: nothing left to protect
  w.Fill_(0.0f);
}

// Note [Edges without values]: a sum and a dropout keep only edges to their inputs, so
// the buffers of y and of dropout(y) go as soon as the caller drops them, before the
// backward; the gradients are the same.
TEST_P(EngineTest, InputsWhoseValuesNoBackwardReadsAreFreedBeforeIt) {
  Tensor x = leaf({1, 2, 3, 4}, {4});
  std::weak_ptr<TensorNode> y_buffer, dropped_buffer;
  Tensor loss;
  {
    Tensor y = x * 3.0f;
    Generator gen(1);
    Tensor dropped = dropout(y, 0.5f, true, &gen);  // y * 2 or 0, element by element
    y_buffer = y.node();
    dropped_buffer = dropped.node();
    Tensor z = dropped + x;  // OpAdd
    loss = sum(z * z);       // OpMul keeps z
  }
  EXPECT_TRUE(y_buffer.expired()) << "the dropout kept its input's buffer";
  EXPECT_TRUE(dropped_buffer.expired()) << "the addition kept its input's buffer";
  loss.Backward();
  // z = (6 or 0) x + x, d sum(z^2) / dx = 2 z (7 or 1): the kept factor is the mask's.
  const std::vector<float> g = x.Grad().Cpu().ToVector<float>();
  for (int i = 0; i < 4; ++i) {
    const float v = static_cast<float>(i + 1);
    EXPECT_TRUE(std::fabs(g[i] - 98 * v) < 1e-4f * v || std::fabs(g[i] - 2 * v) < 1e-6f * v)
        << "element " << i << ": " << g[i];
  }
}

ZERO_INSTANTIATE_DEVICE_TEST(EngineTest);

}  // namespace
}  // namespace zero
