// Tests of Note [Recomputed inputs] (autograd/tensor_op.cpp) through its one user, an
// FP32 LayerNorm (Note [Recomputing a LayerNorm], autograd/ops/nn_ops.cpp): the op after
// it keeps only an edge, so the output's buffer goes with the forward; the gradients are
// bit for bit those of a graph that keeps it; a 16-bit output is kept; a view of the
// output is kept; and an input changed in place before the recomputation is an error.
#include <memory>
#include <string>
#include <vector>

#include "tests/support/test_support.h"
#include "zero/autograd/functional.h"
#include "zero/autograd/grad_mode.h"

namespace zero {
namespace {

using testing::contains;
using testing::error_message;
using testing::randn_leaf;

class RecomputedInputsTest : public testing::DeviceTest {
 protected:
  // x [6, 16] through a LayerNorm and a Linear [16 -> 8], as leaves.
  struct Leaves {
    Tensor x, ln_w, ln_b, w, b;
  };
  Leaves leaves() const {
    return {randn_leaf({6, 16}, device(), 1), randn_leaf({16}, device(), 2),
            randn_leaf({16}, device(), 3), randn_leaf({8, 16}, device(), 4),
            randn_leaf({8}, device(), 5)};
  }
  // Every leaf's gradient, on the CPU.
  static std::vector<std::vector<float>> grads(const Leaves& l) {
    std::vector<std::vector<float>> out;
    for (const Tensor* t : {&l.x, &l.ln_w, &l.ln_b, &l.w, &l.b}) {
      out.push_back(t->Grad().Cpu().ToVector<float>());
    }
    return out;
  }
};

TEST_P(RecomputedInputsTest, AnFp32LayerNormsOutputIsFreedAndRemadeForTheLinearsBackward) {
  const Leaves l = leaves();
  std::weak_ptr<TensorNode> y_buffer;
  Tensor loss;
  {
    const Tensor y = layer_norm(l.x, l.ln_w, l.ln_b);
    y_buffer = y.node();
    const Tensor z = linear(y, l.w, l.b);
    loss = sum(z * z);
  }
  EXPECT_TRUE(y_buffer.expired()) << "the Linear kept the LayerNorm's output";
  loss.Backward();
  const std::vector<std::vector<float>> got = grads(l);

  // The same graph with the output kept: y * 1 is y's bits, and the Linear keeps it.
  const Leaves k = leaves();
  const Tensor y = layer_norm(k.x, k.ln_w, k.ln_b) * 1.0f;
  const Tensor z = linear(y, k.w, k.b);
  sum(z * z).Backward();
  EXPECT_EQ(got, grads(k));
}

TEST_P(RecomputedInputsTest, ASixteenBitOutputAndAViewOfOneAreKept) {
  const Leaves l = leaves();
  std::weak_ptr<TensorNode> half_buffer, viewed_buffer;
  Tensor loss;
  {
    const DataType bf16 = DataType::BF16;
    const Tensor y16 = layer_norm(to_dtype(l.x, bf16), to_dtype(l.ln_w, bf16),
                                  to_dtype(l.ln_b, bf16));
    half_buffer = y16.node();
    const Tensor z16 = linear(y16, to_dtype(l.w, bf16), to_dtype(l.b, bf16));
    const Tensor y = layer_norm(l.x, l.ln_w, l.ln_b);
    viewed_buffer = y.node();
    const Tensor z = linear(y.View({3, 32}), Tensor::Ones({4, 32}).To(device()));
    loss = sum(to_dtype(z16, DataType::F32)) + sum(z);
  }
  EXPECT_FALSE(half_buffer.expired()) << "a BF16 LayerNorm output should be kept";
  EXPECT_FALSE(viewed_buffer.expired()) << "the view's op keeps what it views";
  loss.Backward();
  EXPECT_TRUE(l.x.Grad().defined());
}

TEST_P(RecomputedInputsTest, AnInputChangedInPlaceBeforeTheRecomputationIsAnError) {
  const Leaves l = leaves();
  Tensor h = l.x * 2.0f;
  const Tensor z = linear(layer_norm(h, l.ln_w, l.ln_b), l.w, l.b);
  const Tensor loss = sum(z * z);
  {
    NoGradGuard no_grad;
    h.Fill_(0.5f);
  }
  const std::string msg = error_message([&] { loss.Backward(); });
  EXPECT_TRUE(contains(msg, "OpLayerNorm")) << msg;
  EXPECT_TRUE(contains(msg, "modified in place")) << msg;
}

ZERO_INSTANTIATE_DEVICE_TEST(RecomputedInputsTest);

}  // namespace
}  // namespace zero
