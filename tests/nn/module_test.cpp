// Tests of nn::Module (zero/nn/module.cpp): registration and dotted names in order,
// naming errors, parameter counts, train/eval and compute-dtype propagation, EvalGuard,
// ZeroGrad,
// and To(): parameters move in place, so every handle to them stays valid.
#include <gmock/gmock.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/support/test_support.h"
#include "zero/autograd/grad_mode.h"
#include "zero/nn/module.h"

namespace zero {
namespace {

using ::testing::ElementsAre;
using testing::expect_close;
using testing::expect_error_mentions;

class Leaf : public nn::Module {
 public:
  explicit Leaf(int64_t n) {
    weight = RegisterParameter("weight", Tensor::Ones({n, 2}));
    bias = RegisterParameter("bias", Tensor::Zeros({n}));
  }
  // Exposes the protected registration for the error tests.
  Tensor& Add(const std::string& name, Tensor t) { return RegisterParameter(name, std::move(t)); }
  Tensor weight, bias;
};

class Tree : public nn::Module {
 public:
  Tree() {
    scale = RegisterParameter("scale", Tensor::Full({1}, 2.0f));
    first = RegisterModule("first", std::make_shared<Leaf>(3));
    second = RegisterModule("second", std::make_shared<Leaf>(1));
  }
  Tensor scale;
  std::shared_ptr<Leaf> first, second;
};

std::vector<std::string> names_of(const nn::Module& m) {
  std::vector<std::string> names;
  for (const auto& named : m.NamedParameters()) names.push_back(named.first);
  return names;
}


TEST(ModuleTest, NamedParametersAreDottedInRegistrationOrder) {
  Tree tree;
  EXPECT_THAT(names_of(tree),
              ElementsAre("scale", "first.weight", "first.bias", "second.weight", "second.bias"));
  for (const auto& [name, p] : tree.NamedParameters()) {
    EXPECT_TRUE(p.requires_grad()) << name;
    EXPECT_TRUE(p.is_leaf()) << name;
  }
  EXPECT_EQ(tree.NumParameters(), 1 + 6 + 3 + 2 + 1);
  EXPECT_EQ(tree.Parameters().size(), 5u);
  EXPECT_EQ(tree.device(), Device::Cpu());
}

TEST(ModuleTest, ParametersAreTheModulesOwnTensors) {
  Tree tree;
  // Not copies: a change through the listed handle is seen by the layer's member.
  Tensor listed = tree.NamedParameters()[1].second;  // first.weight
  EXPECT_EQ(listed.impl(), tree.first->weight.impl());
  {
    NoGradGuard no_grad;
    listed.Fill_(7.0f);
  }
  expect_close(tree.first->weight, std::vector<float>(6, 7.0f));
}

TEST(ModuleTest, RegistrationRejectsTakenEmptyAndDottedNames) {
  Leaf leaf(2);
  expect_error_mentions([&] { leaf.Add("weight", Tensor::Zeros({1})); }, {"\"weight\" is already"});
  expect_error_mentions([&] { leaf.Add("", Tensor::Zeros({1})); }, {"non-empty"});
  expect_error_mentions([&] { leaf.Add("a.b", Tensor::Zeros({1})); }, {"\"a.b\""});
  expect_error_mentions([&] { leaf.Add("u", Tensor()); }, {"undefined"});
}

TEST(ModuleTest, RegistrationRejectsAComputedTensor) {
  Leaf leaf(2);
  Tensor x = Tensor::Ones({2}).SetRequiresGrad();
  expect_error_mentions([&] { leaf.Add("y", x * 2.0f); }, {"leaf"});
}

TEST(ModuleTest, TrainAndEvalReachEverySubmodule) {
  Tree tree;
  EXPECT_TRUE(tree.is_training());
  tree.Eval();
  EXPECT_FALSE(tree.is_training());
  EXPECT_FALSE(tree.first->is_training());
  EXPECT_FALSE(tree.second->is_training());
  tree.Train();
  EXPECT_TRUE(tree.second->is_training());
}

TEST(ModuleTest, ComputeDtypeReachesEverySubmoduleAndParametersStayF32) {
  Tree tree;
  EXPECT_EQ(tree.compute_dtype(), DataType::F32);
  tree.SetComputeDtype(DataType::BF16);
  EXPECT_EQ(tree.compute_dtype(), DataType::BF16);
  EXPECT_EQ(tree.first->compute_dtype(), DataType::BF16);
  EXPECT_EQ(tree.second->compute_dtype(), DataType::BF16);
  for (const Tensor& p : tree.Parameters()) EXPECT_EQ(p.dtype(), DataType::F32);
  tree.SetComputeDtype(DataType::F16);
  EXPECT_EQ(tree.second->compute_dtype(), DataType::F16);
  expect_error_mentions([&] { tree.SetComputeDtype(DataType::I32); },
                        {"SetComputeDtype", "i32"});
  EXPECT_EQ(tree.compute_dtype(), DataType::F16);
}

TEST(ModuleTest, EvalGuardRestoresThePreviousMode) {
  Tree tree;
  {
    nn::EvalGuard guard(tree);
    EXPECT_FALSE(tree.is_training());
    EXPECT_FALSE(tree.first->is_training());
    {
      nn::EvalGuard nested(tree);  // already in eval: stays in eval after
      EXPECT_FALSE(tree.is_training());
    }
    EXPECT_FALSE(tree.first->is_training());
  }
  EXPECT_TRUE(tree.is_training());
  EXPECT_TRUE(tree.first->is_training());

  tree.Eval();
  { nn::EvalGuard guard(tree); }
  EXPECT_FALSE(tree.is_training());  // was in eval before the guard
}

TEST(ModuleTest, ZeroGradDropsEveryGradient) {
  Tree tree;
  sum(tree.first->weight * tree.scale).Backward();
  ASSERT_TRUE(tree.first->weight.Grad().defined());
  ASSERT_TRUE(tree.scale.Grad().defined());
  tree.ZeroGrad();
  for (const Tensor& p : tree.Parameters()) EXPECT_FALSE(p.Grad().defined());
}

class ModuleDeviceTest : public testing::DeviceTest {};

TEST_P(ModuleDeviceTest, ToMovesParametersInPlaceSoHandlesStayValid) {
  Tree tree;
  Tensor handle = tree.first->weight;  // held outside the module, as an optimiser would
  sum(tree.first->weight * 3.0f).Backward();
  tree.To(device());
  EXPECT_EQ(tree.device(), device());
  for (const auto& [name, p] : tree.NamedParameters()) {
    EXPECT_EQ(p.device(), device()) << name;
    EXPECT_TRUE(p.requires_grad()) << name;
  }
  // The outside handle and the member are still one tensor, now on the device.
  EXPECT_EQ(handle.impl(), tree.first->weight.impl());
  EXPECT_EQ(handle.device(), device());
  expect_close(handle, std::vector<float>(6, 1.0f));
  ASSERT_TRUE(handle.Grad().defined());
  EXPECT_EQ(handle.Grad().device(), device());
  expect_close(handle.Grad(), std::vector<float>(6, 3.0f));
  // Gradients of later computations reach the moved parameter.
  tree.ZeroGrad();
  sum(handle * tree.scale).Backward();
  expect_close(tree.first->weight.Grad(), std::vector<float>(6, 2.0f));
  // And back to the CPU.
  tree.To(Device::Cpu());
  EXPECT_EQ(handle.device(), Device::Cpu());
  expect_close(handle, std::vector<float>(6, 1.0f));
}

ZERO_INSTANTIATE_DEVICE_TEST(ModuleDeviceTest);

}  // namespace
}  // namespace zero
