// Exercise 06: an op of your own, `OpMulAdd` (y = a * b + c with broadcasting), and
// its backward.
//
// The forward is written for you: it allocates the broadcast output and calls two
// kernels through the dispatch layer, exactly like OpAdd::OpValue_
// (zero/autograd/ops/elementwise_ops.cpp). Your part is Backward_: given g = dL/dy,
// return dL/da, dL/db, dL/dc, each reduced to its input's shape with
// zero::autograd::sum_to_shape, because a broadcast input was read many times and
// collects the gradient of every use. Chapter 06 runs it beside `a * b + c` built from
// two library ops and compares the graphs and the gradients.
#pragma once

#include "zero/autograd/functional.h"
#include "zero/autograd/tensor_op.h"
#include "zero/kernels/tensor_ops.h"

namespace ch06 {

using zero::Tensor;

// y = a * b + c; a, b and c broadcast together (NumPy rules).
class OpMulAdd : public zero::autograd::TensorOp {
 public:
  const char* name() const override { return "OpMulAdd"; }

 protected:
  std::vector<Tensor> OpValue_(const std::vector<Tensor>& in) override {
    const Tensor& a = in[0];
    const Tensor& b = in[1];
    const Tensor& c = in[2];
    zero::ops::check_same_device("OpMulAdd", {&a, &b, &c});
    const zero::Shape ab_shape = zero::broadcast_shapes(a.sizes(), b.sizes());
    const Tensor ab = Tensor::Empty(ab_shape, a.options());  // a * b
    const Tensor out = Tensor::Empty(zero::broadcast_shapes(ab_shape, c.sizes()), a.options());
    zero::ops::mul(a, b, ab);
    zero::ops::add(ab, c, out);
    return {out};
  }

  // Gradients of a, b, c (inputs()[0..2]) from g = grad[0], which has the output's
  // shape; an undefined Tensor() for an input that needs none (needs_grad(i) false).
  // It runs with recording off, so it may use any zero:: op (*, sum, ...).
  std::vector<Tensor> Backward_(const std::vector<Tensor>& grad) override {
    Tensor grad_a, grad_b, grad_c;
    // TODO(ex06.1): dy/da = b, dy/db = a, dy/dc = 1; multiply by g and sum_to_shape each to its input.
    ZERO_NOT_IMPLEMENTED("ex06.1");
    return {grad_a, grad_b, grad_c};
  }
};

// The functional form, like zero::add: runs OpMulAdd and records it when needed.
inline Tensor mul_add(const Tensor& a, const Tensor& b, const Tensor& c) {
  return zero::autograd::RunOp<OpMulAdd>({a, b, c});
}

}  // namespace ch06
