/// @file
/// The element-wise ops: `OpAdd`, `OpSub`, `OpMul`, `OpDiv` (broadcasting), `OpScalar`
/// (a tensor and a float) and `OpUnary` (neg, exp, log, sqrt, tanh, relu, gelu).
///
/// `OpAdd` is the op chapter 06 traces from `a + b` to the kernel and back.
#pragma once

#include "zero/autograd/tensor_op.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::autograd {

/// `a + b`. Backward: the gradient goes to both inputs, summed over broadcast dimensions.
class OpAdd : public TensorOp {
 public:
  /// "OpAdd".
  const char* name() const override { return "OpAdd"; }

 protected:
  /// Allocates the broadcast output on the inputs' device and calls `ops::add`.
  std::vector<Tensor> OpValue_(const std::vector<Tensor>& inputs) override;
  /// `grad_a = sum_to_shape(g, a)`, `grad_b = sum_to_shape(g, b)`.
  std::vector<Tensor> Backward_(const std::vector<Tensor>& grad_outputs) override;
  /// False: the backward reads only the inputs' shapes.
  bool KeepsInput_(size_t /*i*/) const override { return false; }
};

/// `a - b`. Backward: `g` to `a`, `-g` to `b` (summed over broadcast dimensions).
class OpSub : public TensorOp {
 public:
  /// "OpSub".
  const char* name() const override { return "OpSub"; }

 protected:
  /// Calls `ops::sub` into a new broadcast output.
  std::vector<Tensor> OpValue_(const std::vector<Tensor>& inputs) override;
  /// `grad_a = g`, `grad_b = -g`, each reduced to its input's shape.
  std::vector<Tensor> Backward_(const std::vector<Tensor>& grad_outputs) override;
  /// False: the backward reads only the inputs' shapes.
  bool KeepsInput_(size_t /*i*/) const override { return false; }
};

/// `a * b`. Backward: `g * b` to `a`, `g * a` to `b`.
class OpMul : public TensorOp {
 public:
  /// "OpMul".
  const char* name() const override { return "OpMul"; }

 protected:
  /// Calls `ops::mul` into a new broadcast output.
  std::vector<Tensor> OpValue_(const std::vector<Tensor>& inputs) override;
  /// `grad_a = g * b`, `grad_b = g * a`, each reduced to its input's shape.
  std::vector<Tensor> Backward_(const std::vector<Tensor>& grad_outputs) override;
};

/// `a / b`. Backward: `g / b` to `a`, `-g * a / b^2` to `b`.
class OpDiv : public TensorOp {
 public:
  /// "OpDiv".
  const char* name() const override { return "OpDiv"; }

 protected:
  /// Calls `ops::div` into a new broadcast output.
  std::vector<Tensor> OpValue_(const std::vector<Tensor>& inputs) override;
  /// `grad_a = g / b`, `grad_b = -g * a / b^2`, each reduced to its input's shape.
  std::vector<Tensor> Backward_(const std::vector<Tensor>& grad_outputs) override;
};

/// `a op s` or `s op a` for a float `s`.
class OpScalar : public TensorOp {
 public:
  /// The operation, the scalar, and whether the scalar is the left operand.
  OpScalar(ops::BinaryOp op, float scalar, bool scalar_first)
      : op_(op), scalar_(scalar), scalar_first_(scalar_first) {}
  /// "OpScalar".
  const char* name() const override { return "OpScalar"; }

 protected:
  /// Calls `ops::binary_scalar`.
  std::vector<Tensor> OpValue_(const std::vector<Tensor>& inputs) override;
  /// The derivative of `a op s` (or `s op a`) with respect to `a`, times `g`.
  std::vector<Tensor> Backward_(const std::vector<Tensor>& grad_outputs) override;

 private:
  ops::BinaryOp op_;
  float scalar_;
  bool scalar_first_;
};

/// `f(x)` for a `ops::UnaryOp` f. Saves its output, which exp, sqrt and tanh reuse.
class OpUnary : public TensorOp {
 public:
  /// The function to apply.
  explicit OpUnary(ops::UnaryOp op) : op_(op) {}
  /// "OpUnary".
  const char* name() const override { return "OpUnary"; }

 protected:
  /// Calls `ops::unary` and saves the output.
  std::vector<Tensor> OpValue_(const std::vector<Tensor>& inputs) override;
  /// Calls `ops::unary_backward`.
  std::vector<Tensor> Backward_(const std::vector<Tensor>& grad_outputs) override;
  /// Drops the saved output.
  void ReleaseSaved_() override { output_ = Tensor(); }

 private:
  ops::UnaryOp op_;
  Tensor output_;
};

}  // namespace zero::autograd
