// Tensor: construction, metadata, data pointers and gradient bookkeeping.
// Methods that need kernels or autograd are defined in those layers; see
// Note [Where Tensor's methods are defined] in tensor.h.
#include "zero/core/tensor.h"

namespace zero {

Tensor::Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

Tensor::Tensor(TensorMeta meta, std::shared_ptr<TensorNode> node)
    : impl_(std::make_shared<TensorImpl>()) {
  impl_->meta = std::move(meta);
  impl_->node = std::move(node);
}

Tensor Tensor::Empty(const Shape& sizes, const TensorOption& opt) {
  TensorMeta meta = contiguous_meta(sizes, opt.dtype, opt.device);
  // int64_t, not size_t: element offsets times the element size must stay representable.
  int64_t bytes = 0;
  ZERO_CHECK(!__builtin_mul_overflow(meta.numel(), dtype_size(opt.dtype), &bytes),
             "a tensor of shape ", shape_to_string(sizes), " and dtype ", to_string(opt.dtype),
             " needs more bytes than fit in a 64-bit signed integer");
  auto node = std::make_shared<TensorNode>(static_cast<size_t>(bytes), opt.device);
  Tensor t(std::move(meta), std::move(node));
  if (opt.requires_grad) t.SetRequiresGrad(true);
  return t;
}

const TensorImpl& Tensor::checked() const {
  ZERO_CHECK(impl_ != nullptr, "this tensor is undefined (default-constructed or a missing "
             "gradient); expected a tensor with data");
  return *impl_;
}

const TensorMeta& Tensor::meta() const { return checked().meta; }

int64_t Tensor::size(int64_t dim) const {
  ZERO_CHECK(this->dim() > 0, "a 0-d tensor has no dimension ", dim);
  return sizes()[normalize_dim(dim, this->dim())];
}

int64_t Tensor::stride(int64_t dim) const {
  ZERO_CHECK(this->dim() > 0, "a 0-d tensor has no dimension ", dim);
  return strides()[normalize_dim(dim, this->dim())];
}

TensorOption Tensor::options() const { return TensorOption{dtype(), device(), false}; }

void* Tensor::data() const {
  const TensorImpl& impl = checked();
  return static_cast<char*>(impl.node->data()) + impl.meta.offset * dtype_size(impl.meta.dtype);
}

template <typename T>
T* Tensor::data_ptr() const {
  ZERO_CHECK(dtype() == dtype_of<T>(), "expected a tensor of dtype ", to_string(dtype_of<T>()),
             ", got ", to_string(dtype()));
  return static_cast<T*>(data());
}
template float* Tensor::data_ptr<float>() const;
template int32_t* Tensor::data_ptr<int32_t>() const;
template bf16* Tensor::data_ptr<bf16>() const;
template f16* Tensor::data_ptr<f16>() const;

const std::shared_ptr<TensorNode>& Tensor::node() const { return checked().node; }

bool Tensor::SharesStorage(const Tensor& other) const { return node() == other.node(); }

// ---------------------------------------------------------------- autograd state

bool Tensor::requires_grad() const {
  const TensorImpl& impl = checked();
  return impl.requires_grad || impl.grad_fn != nullptr;
}

Tensor& Tensor::SetRequiresGrad(bool requires_grad) {
  TensorImpl& impl = const_cast<TensorImpl&>(checked());
  ZERO_CHECK(impl.grad_fn == nullptr, "SetRequiresGrad is for leaf tensors; this one was "
             "produced by an op (use Detach() to make a new leaf)");
  ZERO_CHECK(!requires_grad || is_floating_point(impl.meta.dtype),
             "only floating-point tensors (f32, bf16, f16) can require grad, got ",
             to_string(impl.meta.dtype));
  impl.requires_grad = requires_grad;
  return *this;
}

bool Tensor::is_leaf() const { return checked().grad_fn == nullptr; }

Tensor Tensor::Grad() const { return checked().grad; }

void Tensor::SetGrad(const Tensor& grad) {
  TensorImpl& impl = const_cast<TensorImpl&>(checked());
  if (grad.defined()) {
    ZERO_CHECK(grad.sizes() == sizes() && grad.dtype() == dtype() && grad.device() == device(),
               "a gradient must match its tensor: expected shape ", shape_to_string(sizes()), " ",
               to_string(dtype()), " on ", device(), ", got shape ", shape_to_string(grad.sizes()),
               " ", to_string(grad.dtype()), " on ", grad.device());
  }
  impl.grad = grad;
}

void Tensor::ZeroGrad() { const_cast<TensorImpl&>(checked()).grad = Tensor(); }

Tensor Tensor::Detach() const { return Tensor(meta(), node()); }

const std::shared_ptr<autograd::TensorOp>& Tensor::grad_fn() const { return checked().grad_fn; }

}  // namespace zero
