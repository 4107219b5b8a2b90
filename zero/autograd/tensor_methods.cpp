// Tensor's views, copies, device moves and in-place updates: the Tensor methods
// that must record themselves for autograd. See Note [Where Tensor's methods are
// defined] in core/tensor.h. Every view here shares its input's buffer; its
// backward maps the gradient back onto the input's shape.
#include <numeric>

#include "zero/autograd/functional.h"
#include "zero/autograd/grad_mode.h"
#include "zero/autograd/tensor_op.h"
#include "zero/kernels/tensor_ops.h"

namespace zero {
namespace autograd {
namespace {

// View, Unsqueeze, Squeeze: same elements in the same order, new sizes.
class OpView : public TensorOp {
 public:
  explicit OpView(TensorMeta meta) : meta_(std::move(meta)) {}
  const char* name() const override { return "OpView"; }

 protected:
  std::vector<Tensor> OpValue_(const std::vector<Tensor>& in) override {
    return {Tensor(meta_, in[0].node())};
  }
  std::vector<Tensor> Backward_(const std::vector<Tensor>& grad) override {
    return {grad[0].Reshape(inputs()[0].sizes())};
  }

 private:
  TensorMeta meta_;
};

// Transpose and Permute: result dimension i is input dimension dims_[i].
class OpPermute : public TensorOp {
 public:
  explicit OpPermute(std::vector<int64_t> dims) : dims_(std::move(dims)) {}
  const char* name() const override { return "OpPermute"; }

 protected:
  std::vector<Tensor> OpValue_(const std::vector<Tensor>& in) override {
    return {Tensor(meta_permute(in[0].meta(), dims_), in[0].node())};
  }
  std::vector<Tensor> Backward_(const std::vector<Tensor>& grad) override {
    std::vector<int64_t> inverse(dims_.size());
    for (size_t i = 0; i < dims_.size(); ++i) inverse[normalize_dim(dims_[i], dims_.size())] = i;
    return {grad[0].Permute(inverse)};
  }

 private:
  std::vector<int64_t> dims_;
};

class OpSlice : public TensorOp {
 public:
  OpSlice(int64_t dim, int64_t start, int64_t end, int64_t step)
      : dim_(dim), start_(start), end_(end), step_(step) {}
  const char* name() const override { return "OpSlice"; }

 protected:
  std::vector<Tensor> OpValue_(const std::vector<Tensor>& in) override {
    return {Tensor(meta_slice(in[0].meta(), dim_, start_, end_, step_), in[0].node())};
  }
  // The gradient is zero outside the slice: write grad into the same slice of zeros.
  std::vector<Tensor> Backward_(const std::vector<Tensor>& grad) override {
    Tensor full = Tensor::Zeros(inputs()[0].sizes(), grad[0].options());
    ops::copy(grad[0], Tensor(meta_slice(full.meta(), dim_, start_, end_, step_), full.node()));
    return {full};
  }

 private:
  int64_t dim_, start_, end_, step_;
};

class OpExpand : public TensorOp {
 public:
  explicit OpExpand(Shape sizes) : sizes_(std::move(sizes)) {}
  const char* name() const override { return "OpExpand"; }

 protected:
  std::vector<Tensor> OpValue_(const std::vector<Tensor>& in) override {
    return {Tensor(meta_expand(in[0].meta(), sizes_), in[0].node())};
  }
  // Every input element was read once per copy: its gradient is the sum over them.
  std::vector<Tensor> Backward_(const std::vector<Tensor>& grad) override {
    return {sum_to_shape(grad[0], inputs()[0].sizes())};
  }

 private:
  Shape sizes_;
};

// Contiguous and Clone: a fresh contiguous copy; the gradient passes through.
class OpCopy : public TensorOp {
 public:
  const char* name() const override { return "OpCopy"; }

 protected:
  std::vector<Tensor> OpValue_(const std::vector<Tensor>& in) override {
    Tensor out = Tensor::Empty(in[0].sizes(), in[0].options());
    ops::copy(in[0], out);
    return {out};
  }
  std::vector<Tensor> Backward_(const std::vector<Tensor>& grad) override { return {grad[0]}; }
};

}  // namespace
}  // namespace autograd

using autograd::RunOp;

Tensor Tensor::View(const Shape& sizes) const {
  return RunOp<autograd::OpView>({*this}, meta_view(meta(), sizes));
}

// Note: a non-contiguous tensor is copied even when a view would have been possible;
// the copy is always correct and Reshape is rarely on a hot path.
Tensor Tensor::Reshape(const Shape& sizes) const {
  return is_contiguous() ? View(sizes) : Contiguous().View(sizes);
}

Tensor Tensor::Transpose(int64_t d0, int64_t d1) const {
  std::vector<int64_t> dims(this->dim());
  std::iota(dims.begin(), dims.end(), 0);
  if (this->dim() > 0) std::swap(dims[normalize_dim(d0, dim())], dims[normalize_dim(d1, dim())]);
  return Permute(dims);
}

Tensor Tensor::Permute(const std::vector<int64_t>& dims) const {
  meta_permute(meta(), dims);  // validates before recording
  return RunOp<autograd::OpPermute>({*this}, dims);
}

Tensor Tensor::Slice(int64_t dim, int64_t start, int64_t end, int64_t step) const {
  meta_slice(meta(), dim, start, end, step);
  return RunOp<autograd::OpSlice>({*this}, dim, start, end, step);
}

std::vector<Tensor> Tensor::Split(int64_t split_size, int64_t dim) const {
  ZERO_CHECK(split_size > 0, "Split: expected a positive split size, got ", split_size);
  const int64_t n = size(dim);
  std::vector<Tensor> parts;
  for (int64_t start = 0; start < n; start += split_size) {
    parts.push_back(Slice(dim, start, std::min(start + split_size, n)));
  }
  return parts;
}

Tensor Tensor::Expand(const Shape& sizes) const {
  meta_expand(meta(), sizes);
  return RunOp<autograd::OpExpand>({*this}, sizes);
}

Tensor Tensor::Unsqueeze(int64_t dim) const {
  return RunOp<autograd::OpView>({*this}, meta_unsqueeze(meta(), dim));
}

Tensor Tensor::Squeeze(int64_t dim) const {
  return RunOp<autograd::OpView>({*this}, meta_squeeze(meta(), dim));
}

Tensor Tensor::Contiguous() const { return is_contiguous() ? *this : Clone(); }

Tensor Tensor::Clone() const { return RunOp<autograd::OpCopy>({*this}); }

// Moving a leaf makes a new leaf on `device` with the same requires-grad flag and
// its gradient moved along; moving a computed tensor is not recorded yet.
// The history check comes before the copy, so a refused move costs nothing.
Tensor Tensor::To(Device device) const {
  if (device == this->device()) return *this;
  ZERO_CHECK(is_leaf() || !requires_grad() || !GradMode::enabled(), "To(): moving a tensor "
             "with autograd history between devices is not supported; move the leaves instead");
  Tensor out = Tensor::Empty(sizes(), options().OnDevice(device));
  ops::copy(*this, out);
  if (is_leaf()) {
    if (impl()->requires_grad) out.SetRequiresGrad(true);
    if (Grad().defined()) out.SetGrad(Grad().To(device));
  }
  return out;
}

// ---------------------------------------------------------------- in-place updates

namespace {
// Checks an in-place update of `t` and counts it on its buffer (Note [Version counter]).
void begin_in_place(const Tensor& t, const char* what) {
  ZERO_CHECK(!(GradMode::enabled() && t.requires_grad()), what, " would change a tensor that "
             "requires grad while gradients are recorded; wrap the update in a NoGradGuard");
  // A dimension of stride 0 (Expand) makes many elements one memory location: a write
  // through it would land several times on one element, and change the tensor it expands.
  for (int64_t d = 0; d < t.dim(); ++d) {
    ZERO_CHECK(t.stride(d) != 0 || t.size(d) <= 1, what, " into a tensor of shape ",
               shape_to_string(t.sizes()), " whose dimension ", d, " has stride 0 (an "
               "expanded view): several of its elements share one memory location; write "
               "into Contiguous() of it instead");
  }
  t.node()->BumpVersion();
}
}  // namespace

Tensor& Tensor::Fill_(float value) {
  begin_in_place(*this, "Fill_");
  ops::fill(*this, value);
  return *this;
}

Tensor& Tensor::CopyFrom_(const Tensor& src) {
  begin_in_place(*this, "CopyFrom_");
  ops::copy(src, *this);
  return *this;
}

}  // namespace zero
