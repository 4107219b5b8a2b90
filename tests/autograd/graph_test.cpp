// Tests of graph_to_string (autograd/graph.cpp): exact printed trees for small graphs
// (one op, a shared leaf, a shared op, constants, a multi-output op), the cases with
// no graph (NoGradGuard, leaves, undefined), a graph freed by Backward(), and the
// line limit on a deep chain.
#include "zero/autograd/graph.h"

#include "tests/support/test_support.h"
#include "zero/autograd/grad_mode.h"
#include "zero/autograd/tensor_op.h"
#include "zero/kernels/tensor_ops.h"

namespace zero {
namespace {

using autograd::graph_to_string;
using testing::randn_leaf;

const Device kCpu = Device::Cpu();

TEST(GraphTest, OneAddShowsTheOpAndBothLeaves) {
  Tensor a = randn_leaf({2, 3}, kCpu, 1);
  Tensor b = randn_leaf({3}, kCpu, 2);
  EXPECT_EQ(graph_to_string(a + b),
            "OpAdd #1 -> [2, 3] f32 cpu\n"
            "  leaf #2 [2, 3] f32 cpu requires_grad\n"
            "  leaf #3 [3] f32 cpu requires_grad\n");
}

TEST(GraphTest, LeafUsedTwiceKeepsItsNumber) {
  Tensor a = randn_leaf({2, 3}, kCpu, 1);
  Tensor b = randn_leaf({3}, kCpu, 2);
  EXPECT_EQ(graph_to_string((a + b) * a),
            "OpMul #1 -> [2, 3] f32 cpu\n"
            "  OpAdd #2 -> [2, 3] f32 cpu\n"
            "    leaf #3 [2, 3] f32 cpu requires_grad\n"
            "    leaf #4 [3] f32 cpu requires_grad\n"
            "  leaf #3 [2, 3] f32 cpu requires_grad\n");
}

TEST(GraphTest, SharedOpIsPrintedOnce) {
  Tensor a = randn_leaf({4}, kCpu, 1);
  Tensor s = a + a;
  EXPECT_EQ(graph_to_string(s * s),
            "OpMul #1 -> [4] f32 cpu\n"
            "  OpAdd #2 -> [4] f32 cpu\n"
            "    leaf #3 [4] f32 cpu requires_grad\n"
            "    leaf #3 [4] f32 cpu requires_grad\n"
            "  OpAdd #2 -> [4] f32 cpu (shown above)\n");
}

TEST(GraphTest, InputWithoutGradIsAConstant) {
  Tensor a = randn_leaf({2}, kCpu, 1);
  Tensor b = Tensor::Ones({2});
  EXPECT_EQ(graph_to_string(a - b),
            "OpSub #1 -> [2] f32 cpu\n"
            "  leaf #2 [2] f32 cpu requires_grad\n"
            "  leaf #3 [2] f32 cpu constant\n");
}

TEST(GraphTest, NoGradGuardRecordsNothing) {
  Tensor a = randn_leaf({2, 3}, kCpu, 1);
  Tensor c;
  {
    NoGradGuard no_grad;
    c = a + a;
  }
  EXPECT_EQ(graph_to_string(c), "leaf #1 [2, 3] f32 cpu constant\n");
}

TEST(GraphTest, LeafAndUndefinedRoots) {
  Tensor a = randn_leaf({5}, kCpu, 1);
  EXPECT_EQ(graph_to_string(a), "leaf #1 [5] f32 cpu requires_grad\n");
  EXPECT_EQ(graph_to_string(Tensor()), "(undefined tensor)\n");
}

TEST(GraphTest, KeptGraphShowsGradientsAndFreedGraphSaysSo) {
  Tensor a = randn_leaf({2, 3}, kCpu, 1);
  Tensor b = randn_leaf({3}, kCpu, 2);
  Tensor loss = sum(a + b);
  loss.Backward(Tensor(), /*keep_graph=*/true);
  EXPECT_EQ(graph_to_string(loss),
            "OpSum #1 -> [] f32 cpu\n"
            "  OpAdd #2 -> [2, 3] f32 cpu\n"
            "    leaf #3 [2, 3] f32 cpu requires_grad, grad [2, 3]\n"
            "    leaf #4 [3] f32 cpu requires_grad, grad [3]\n");
  loss.Backward();  // this one frees the graph
  EXPECT_EQ(graph_to_string(loss),
            "OpSum #1 -> [] f32 cpu (inputs released by an earlier Backward())\n");
}

// Two outputs, x and 2x, to show how an output of a multi-output op is labelled.
class OpTwoOutputs : public autograd::TensorOp {
 public:
  const char* name() const override { return "OpTwoOutputs"; }

 protected:
  std::vector<Tensor> OpValue_(const std::vector<Tensor>& in) override {
    Tensor x = Tensor::Empty(in[0].sizes(), in[0].options());
    Tensor y = Tensor::Empty(in[0].sizes(), in[0].options());
    ops::copy(in[0], x);
    ops::add(in[0], in[0], y);
    return {x, y};
  }
  std::vector<Tensor> Backward_(const std::vector<Tensor>& g) override {
    return {g[0] + g[1] * 2.0f};
  }
};

TEST(GraphTest, MultiOutputOpNamesTheOutput) {
  Tensor a = randn_leaf({3}, kCpu, 1);
  std::vector<Tensor> outs = autograd::RunOpMulti<OpTwoOutputs>({a});
  EXPECT_EQ(graph_to_string(outs[0] + outs[1]),
            "OpAdd #1 -> [3] f32 cpu\n"
            "  OpTwoOutputs #2 -> [3] f32 cpu (output 0 of 2)\n"
            "    leaf #3 [3] f32 cpu requires_grad\n"
            "  OpTwoOutputs #2 -> [3] f32 cpu (output 1 of 2) (shown above)\n");
}

TEST(GraphTest, DeepChainStopsAtTheLineLimit) {
  Tensor x = randn_leaf({1}, kCpu, 1);
  for (int i = 0; i < 1000; ++i) x = x * 1.0f;
  const std::string text = graph_to_string(x, 10);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 11);
  EXPECT_EQ(text.substr(0, 30), "OpScalar #1 -> [1] f32 cpu\n  O");
  EXPECT_NE(text.find("... (stopped after 10 lines)\n"), std::string::npos) << text;
}

class GraphDeviceTest : public testing::DeviceTest {};

TEST_P(GraphDeviceTest, PrintsTheDevice) {
  Tensor a = randn_leaf({2}, device(), 1);
  const std::string d = device().ToString();
  EXPECT_EQ(graph_to_string(a * a),
            "OpMul #1 -> [2] f32 " + d + "\n  leaf #2 [2] f32 " + d +
                " requires_grad\n  leaf #2 [2] f32 " + d + " requires_grad\n");
}

ZERO_INSTANTIATE_DEVICE_TEST(GraphDeviceTest);

}  // namespace
}  // namespace zero
