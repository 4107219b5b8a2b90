// Forward and backward of the element-wise ops, and the functional API over them.
#include "zero/autograd/ops/elementwise_ops.h"

#include "zero/autograd/functional.h"

namespace zero {
namespace autograd {
namespace {

Tensor broadcast_output(const Tensor& a, const Tensor& b) {
  ops::check_same_device("element-wise op", {&a, &b});
  return Tensor::Empty(broadcast_shapes(a.sizes(), b.sizes()), a.options());
}

}  // namespace

std::vector<Tensor> OpAdd::OpValue_(const std::vector<Tensor>& in) {
  Tensor out = broadcast_output(in[0], in[1]);
  ops::add(in[0], in[1], out);
  return {out};
}

std::vector<Tensor> OpAdd::Backward_(const std::vector<Tensor>& grad) {
  return {sum_to_shape(grad[0], inputs()[0].sizes()), sum_to_shape(grad[0], inputs()[1].sizes())};
}

std::vector<Tensor> OpSub::OpValue_(const std::vector<Tensor>& in) {
  Tensor out = broadcast_output(in[0], in[1]);
  ops::sub(in[0], in[1], out);
  return {out};
}

std::vector<Tensor> OpSub::Backward_(const std::vector<Tensor>& grad) {
  Tensor grad_b = needs_grad(1) ? sum_to_shape(-grad[0], inputs()[1].sizes()) : Tensor();
  return {sum_to_shape(grad[0], inputs()[0].sizes()), grad_b};
}

std::vector<Tensor> OpMul::OpValue_(const std::vector<Tensor>& in) {
  Tensor out = broadcast_output(in[0], in[1]);
  ops::mul(in[0], in[1], out);
  return {out};
}

std::vector<Tensor> OpMul::Backward_(const std::vector<Tensor>& grad) {
  const Tensor& a = inputs()[0];
  const Tensor& b = inputs()[1];
  Tensor grad_a = needs_grad(0) ? sum_to_shape(grad[0] * b, a.sizes()) : Tensor();
  Tensor grad_b = needs_grad(1) ? sum_to_shape(grad[0] * a, b.sizes()) : Tensor();
  return {grad_a, grad_b};
}

std::vector<Tensor> OpDiv::OpValue_(const std::vector<Tensor>& in) {
  Tensor out = broadcast_output(in[0], in[1]);
  ops::div(in[0], in[1], out);
  return {out};
}

std::vector<Tensor> OpDiv::Backward_(const std::vector<Tensor>& grad) {
  const Tensor& a = inputs()[0];
  const Tensor& b = inputs()[1];
  Tensor grad_a = needs_grad(0) ? sum_to_shape(grad[0] / b, a.sizes()) : Tensor();
  Tensor grad_b = needs_grad(1) ? sum_to_shape(-grad[0] * a / (b * b), b.sizes()) : Tensor();
  return {grad_a, grad_b};
}

std::vector<Tensor> OpScalar::OpValue_(const std::vector<Tensor>& in) {
  Tensor out = Tensor::Empty(in[0].sizes(), in[0].options());
  ops::binary_scalar(op_, in[0], scalar_, out, scalar_first_);
  return {out};
}

std::vector<Tensor> OpScalar::Backward_(const std::vector<Tensor>& grad) {
  const Tensor& g = grad[0];
  switch (op_) {
    case ops::BinaryOp::kAdd: return {g};
    case ops::BinaryOp::kSub: return {scalar_first_ ? -g : g};
    case ops::BinaryOp::kMul: return {g * scalar_};
    case ops::BinaryOp::kDiv: {
      if (!scalar_first_) return {g * (1.0f / scalar_)};
      const Tensor& a = inputs()[0];  // d(s / a)/da = -s / a^2
      return {g * (-scalar_) / (a * a)};
    }
  }
  ZERO_ASSERT(false, "unknown binary op");
  return {};
}

std::vector<Tensor> OpUnary::OpValue_(const std::vector<Tensor>& in) {
  Tensor out = Tensor::Empty(in[0].sizes(), in[0].options());
  ops::unary(op_, in[0], out);
  output_ = out.Detach();
  return {out};
}

std::vector<Tensor> OpUnary::Backward_(const std::vector<Tensor>& grad) {
  Tensor grad_x = Tensor::Empty(inputs()[0].sizes(), grad[0].options());
  ops::unary_backward(op_, inputs()[0], output_, grad[0], grad_x);
  return {grad_x};
}

}  // namespace autograd

// ---------------------------------------------------------------- functional API

using autograd::RunOp;
using ops::BinaryOp;
using ops::UnaryOp;

Tensor add(const Tensor& a, const Tensor& b) { return RunOp<autograd::OpAdd>({a, b}); }
Tensor sub(const Tensor& a, const Tensor& b) { return RunOp<autograd::OpSub>({a, b}); }
Tensor mul(const Tensor& a, const Tensor& b) { return RunOp<autograd::OpMul>({a, b}); }
Tensor div(const Tensor& a, const Tensor& b) { return RunOp<autograd::OpDiv>({a, b}); }
Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }

Tensor operator+(const Tensor& a, float s) { return RunOp<autograd::OpScalar>({a}, BinaryOp::kAdd, s, false); }
Tensor operator-(const Tensor& a, float s) { return RunOp<autograd::OpScalar>({a}, BinaryOp::kSub, s, false); }
Tensor operator*(const Tensor& a, float s) { return RunOp<autograd::OpScalar>({a}, BinaryOp::kMul, s, false); }
Tensor operator/(const Tensor& a, float s) { return RunOp<autograd::OpScalar>({a}, BinaryOp::kDiv, s, false); }
Tensor operator+(float s, const Tensor& a) { return a + s; }
Tensor operator-(float s, const Tensor& a) { return RunOp<autograd::OpScalar>({a}, BinaryOp::kSub, s, true); }
Tensor operator*(float s, const Tensor& a) { return a * s; }
Tensor operator/(float s, const Tensor& a) { return RunOp<autograd::OpScalar>({a}, BinaryOp::kDiv, s, true); }
Tensor operator-(const Tensor& a) { return neg(a); }

Tensor neg(const Tensor& x) { return RunOp<autograd::OpUnary>({x}, UnaryOp::kNeg); }
Tensor exp(const Tensor& x) { return RunOp<autograd::OpUnary>({x}, UnaryOp::kExp); }
Tensor log(const Tensor& x) { return RunOp<autograd::OpUnary>({x}, UnaryOp::kLog); }
Tensor sqrt(const Tensor& x) { return RunOp<autograd::OpUnary>({x}, UnaryOp::kSqrt); }
Tensor tanh(const Tensor& x) { return RunOp<autograd::OpUnary>({x}, UnaryOp::kTanh); }
Tensor relu(const Tensor& x) { return RunOp<autograd::OpUnary>({x}, UnaryOp::kRelu); }
Tensor gelu(const Tensor& x) { return RunOp<autograd::OpUnary>({x}, UnaryOp::kGelu); }
Tensor silu(const Tensor& x) { return RunOp<autograd::OpUnary>({x}, UnaryOp::kSilu); }

}  // namespace zero
