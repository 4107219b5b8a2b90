/// @file
/// `Tensor`: an n-dimensional array on a device, with views and autograd.
///
/// A `Tensor` is a cheap handle (one `shared_ptr`) to a `TensorImpl`: a `TensorMeta`
/// (sizes, strides, offset, dtype, device) over a shared `TensorNode` (the buffer),
/// plus its autograd state. Copying a `Tensor` copies the handle, not the data.
///
/// Note [Where Tensor's methods are defined]
/// This header is the vocabulary every layer speaks, so it declares the whole
/// interface; each method is defined in the lowest layer that can implement it:
/// memory, metadata and autograd state in core/tensor.cpp; the factories (filled,
/// random, from values) and the host reads (`Item`, `ToVector`, `ToString`) in
/// kernels/tensor_factories.cpp; views, `To`, `Clone` and the in-place updates (which
/// record gradients, or refuse to while recording) in autograd/tensor_methods.cpp;
/// `Backward` in autograd/engine.cpp. Source files still depend only downwards.
/// Math on tensors (`a + b`, `matmul`, `softmax` ...) is in autograd/functional.h.
///
/// Names: a trailing underscore on a public method means it writes this tensor's
/// elements in place (`Fill_`, `CopyFrom_`, like PyTorch's `fill_`, `copy_`); on a
/// protected or private method it marks a hook or helper, not an in-place write
/// (`TensorOp`'s `OpValue_` and `Backward_`, `GPT::Hidden_`). `SetRequiresGrad`,
/// `SetGrad` and `ZeroGrad` change only autograd state, so they have none.
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "zero/core/error.h"
#include "zero/core/generator.h"
#include "zero/core/tensor_meta.h"
#include "zero/core/tensor_node.h"
#include "zero/core/tensor_option.h"

namespace zero {

namespace autograd {
class TensorOp;
}

struct TensorImpl;

/// An n-dimensional array of `float` or `int32_t` on the CPU or a GPU.
class Tensor {
 public:
  /// An undefined tensor (no data); `defined()` is false.
  Tensor() = default;
  /// Wraps an existing implementation.
  explicit Tensor(std::shared_ptr<TensorImpl> impl);
  /// A tensor viewing `node` through `meta` (no copy); the caller guarantees `meta` fits.
  Tensor(TensorMeta meta, std::shared_ptr<TensorNode> node);

  /// @name Factories
  /// `sizes` may be empty for a scalar. Random factories draw from `gen`, or the
  /// default generator when it is null.
  /// @{

  /// Uninitialised memory of `sizes`.
  static Tensor Empty(const Shape& sizes, const TensorOption& opt = {});
  /// All zeros.
  static Tensor Zeros(const Shape& sizes, const TensorOption& opt = {});
  /// All ones.
  static Tensor Ones(const Shape& sizes, const TensorOption& opt = {});
  /// Every element equal to `value`.
  static Tensor Full(const Shape& sizes, float value, const TensorOption& opt = {});
  /// Uniform in [0, 1) (F32 only).
  static Tensor Rand(const Shape& sizes, const TensorOption& opt = {}, Generator* gen = nullptr);
  /// Standard normal (F32 only).
  static Tensor Randn(const Shape& sizes, const TensorOption& opt = {}, Generator* gen = nullptr);
  /// `start, start+step, ...` below `end`, as a 1-d tensor.
  static Tensor Arange(int64_t start, int64_t end, int64_t step = 1,
                       const TensorOption& opt = {});
  /// Copies `values` (row-major) into a new tensor of `sizes`; counts must match.
  static Tensor From(const std::vector<float>& values, const Shape& sizes,
                     const TensorOption& opt = {});
  /// Copies integer `values` into a new I32 tensor (`opt.dtype` is ignored). A separate
  /// name because `From({1, 2}, ...)` would otherwise be ambiguous.
  static Tensor FromI32(const std::vector<int32_t>& values, const Shape& sizes,
                        const TensorOption& opt = {});
  /// A 0-d F32 tensor holding `value`.
  static Tensor Scalar(float value, const TensorOption& opt = {});
  /// @}

  /// @name Properties
  /// @{

  /// False for a default-constructed tensor.
  bool defined() const { return impl_ != nullptr; }
  /// Sizes, strides, offset, dtype and device.
  const TensorMeta& meta() const;
  /// Extent of each dimension.
  const Shape& sizes() const { return meta().sizes; }
  /// Stride of each dimension, in elements.
  const Shape& strides() const { return meta().strides; }
  /// Extent of dimension `dim` (negative counts from the end).
  int64_t size(int64_t dim) const;
  /// Stride of dimension `dim` (negative counts from the end).
  int64_t stride(int64_t dim) const;
  /// Position of the first element in the buffer, in elements.
  int64_t offset() const { return meta().offset; }
  /// Number of dimensions.
  int dim() const { return meta().dim(); }
  /// Number of elements.
  int64_t numel() const { return meta().numel(); }
  /// Element type.
  DataType dtype() const { return meta().dtype; }
  /// Where the data lives.
  Device device() const { return meta().device; }
  /// True when laid out row-major without gaps.
  bool is_contiguous() const { return meta().is_contiguous(); }
  /// Dtype and device of this tensor (requires_grad false), for making similar tensors.
  TensorOption options() const;
  /// Address of the first element (device memory for a CUDA tensor).
  void* data() const;
  /// Typed address of the first element; throws if `T` does not match `dtype()`.
  template <typename T>
  T* data_ptr() const;
  /// The buffer this tensor views.
  const std::shared_ptr<TensorNode>& node() const;
  /// True when both tensors view the same buffer.
  bool SharesStorage(const Tensor& other) const;
  /// The implementation (for the autograd engine and tests).
  TensorImpl* impl() const { return impl_.get(); }
  /// @}

  /// @name Reading values on the host
  /// These copy from the device when needed, so they are synchronisation points.
  /// @{

  /// The single element of a one-element tensor, as float.
  float Item() const;
  /// All elements in row-major order; `T` must match `dtype()`.
  template <typename T>
  std::vector<T> ToVector() const;
  /// "Tensor(shape=[2, 3], dtype=f32, device=cpu, values=[...])", eliding long data.
  std::string ToString(int64_t max_values = 32) const;
  /// @}

  /// @name Devices
  /// @{

  /// This tensor on `device`: itself if already there, else a copy (its gradient moves too).
  Tensor To(Device device) const;
  /// `To(Device::Cuda(index))`.
  Tensor Cuda(int index = 0) const { return To(Device::Cuda(index)); }
  /// `To(Device::Cpu())`.
  Tensor Cpu() const { return To(Device::Cpu()); }
  /// @}

  /// @name Views
  /// Views share this tensor's buffer (writes through one are seen by the other) and
  /// record themselves for autograd, so gradients flow back through them.
  /// @{

  /// Same data with new sizes (one may be -1); throws if strides make that impossible.
  Tensor View(const Shape& sizes) const;
  /// `View` when possible, otherwise a contiguous copy viewed as `sizes`.
  Tensor Reshape(const Shape& sizes) const;
  /// Swaps dimensions `d0` and `d1`.
  Tensor Transpose(int64_t d0, int64_t d1) const;
  /// Result dimension i is dimension `dims[i]` of this tensor.
  Tensor Permute(const std::vector<int64_t>& dims) const;
  /// Elements `[start, end)` with `step` along `dim`.
  Tensor Slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  /// Consecutive slices of `split_size` along `dim` (the last may be shorter).
  std::vector<Tensor> Split(int64_t split_size, int64_t dim) const;
  /// Broadcasts size-1 dimensions to `sizes` without copying (stride 0); -1 keeps a size.
  Tensor Expand(const Shape& sizes) const;
  /// Inserts a size-1 dimension at `dim`.
  Tensor Unsqueeze(int64_t dim) const;
  /// Removes the size-1 dimension `dim`.
  Tensor Squeeze(int64_t dim) const;
  /// Itself if contiguous, otherwise a contiguous copy (recorded for autograd).
  Tensor Contiguous() const;
  /// A contiguous copy that never shares storage (recorded for autograd).
  Tensor Clone() const;
  /// @}

  /// @name Autograd
  /// @{

  /// True for a leaf marked with `SetRequiresGrad` or any result computed from one.
  bool requires_grad() const;
  /// Marks a leaf floating-point tensor (F32, BF16 or F16) so `Backward()` computes its
  /// gradient, which has the tensor's dtype.
  Tensor& SetRequiresGrad(bool requires_grad = true);
  /// True when no op produced this tensor while recording (a user-made tensor).
  bool is_leaf() const;
  /// The accumulated gradient, or an undefined tensor before any `Backward()`.
  Tensor Grad() const;
  /// Replaces the gradient (optimisers and tests); must match shape, dtype and device.
  void SetGrad(const Tensor& grad);
  /// Drops the gradient, so the next `Backward()` starts from nothing.
  void ZeroGrad();
  /// The same data without autograd history: a new leaf sharing the buffer.
  Tensor Detach() const;
  /// Computes gradients of this tensor with respect to every leaf that requires grad.
  /// `grad` defaults to 1 for a one-element tensor. The graph is freed afterwards
  /// unless `keep_graph` is true.
  void Backward(const Tensor& grad = Tensor(), bool keep_graph = false) const;
  /// The op that produced this tensor (null for leaves).
  const std::shared_ptr<autograd::TensorOp>& grad_fn() const;
  /// @}

  /// @name In-place updates (not recorded; for initialisation and optimisers)
  /// Named with a trailing underscore (see the file's notes). They throw if the tensor
  /// requires grad while gradients are being recorded.
  /// @{

  /// Sets every element to `value`.
  Tensor& Fill_(float value);
  /// Copies `src` (same shape, dtype; any device and layout) into this tensor's elements.
  Tensor& CopyFrom_(const Tensor& src);
  /// @}

 private:
  const TensorImpl& checked() const;
  std::shared_ptr<TensorImpl> impl_;
};

/// What a `Tensor` handle points to. Shared by a tensor's copies, not by its views.
struct TensorImpl {
  TensorMeta meta;                    ///< How to read the buffer.
  std::shared_ptr<TensorNode> node;   ///< The buffer.
  bool requires_grad = false;         ///< Leaf flag set by `SetRequiresGrad`.
  Tensor grad;                        ///< Accumulated gradient (leaves).
  std::shared_ptr<autograd::TensorOp> grad_fn;  ///< Producer op, when recorded.
  int output_index = 0;               ///< Which output of `grad_fn` this is.
};

/// Writes `Tensor::ToString()`.
std::ostream& operator<<(std::ostream& os, const Tensor& t);

}  // namespace zero
