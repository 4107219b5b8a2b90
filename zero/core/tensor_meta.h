/// @file
/// `Shape` and `TensorMeta`: the sizes, strides, storage offset, dtype and device
/// that turn a flat buffer into an n-dimensional tensor.
///
/// A view (transpose, slice, expand ...) is a new `TensorMeta` over the same buffer;
/// the functions here compute those metas and check them. Read next: tensor.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "zero/core/device.h"
#include "zero/core/dtype.h"

namespace zero {

/// Sizes or strides, outermost dimension first.
using Shape = std::vector<int64_t>;

/// "[2, 3, 4]".
std::string shape_to_string(const Shape& shape);
/// Product of the sizes (1 for a scalar, shape `[]`).
int64_t shape_numel(const Shape& shape);
/// Row-major strides of a contiguous tensor of `sizes`.
Shape contiguous_strides(const Shape& sizes);
/// Shape two operands broadcast to (NumPy rules); throws naming both shapes if they cannot.
Shape broadcast_shapes(const Shape& a, const Shape& b);
/// Maps a possibly negative dimension onto [0, ndim); throws if out of range.
int normalize_dim(int64_t dim, int64_t ndim);

/// How a tensor reads its buffer: element (i0, i1, ...) lives at
/// `offset + i0 * strides[0] + i1 * strides[1] + ...` elements into the buffer.
struct TensorMeta {
  Shape sizes;          ///< Extent of each dimension.
  Shape strides;        ///< Elements to step per index of each dimension (0 = broadcast).
  int64_t offset = 0;   ///< First element's position in the buffer, in elements.
  DataType dtype = DataType::F32;  ///< Element type.
  Device device;                   ///< Where the buffer lives.

  /// Number of dimensions.
  int dim() const { return static_cast<int>(sizes.size()); }
  /// Number of elements.
  int64_t numel() const { return shape_numel(sizes); }
  /// True when the elements are laid out row-major without gaps.
  bool is_contiguous() const;
};

/// A contiguous meta of `sizes` at offset 0.
TensorMeta contiguous_meta(const Shape& sizes, DataType dtype, Device device);

/// @name View arithmetic
/// Each returns the meta of a view of `m`; none touches memory. They throw
/// `zero::Error` for an impossible request, naming what was expected and given.
/// @{

/// Same elements with new sizes; one size may be -1. Needs strides compatible with the new shape.
TensorMeta meta_view(const TensorMeta& m, Shape sizes);
/// Swaps dimensions `d0` and `d1`.
TensorMeta meta_transpose(const TensorMeta& m, int64_t d0, int64_t d1);
/// Reorders dimensions: result dimension i is input dimension `dims[i]`.
TensorMeta meta_permute(const TensorMeta& m, const std::vector<int64_t>& dims);
/// Elements `start, start+step, ...` below `end` along `dim` (Python-style negative start/end).
TensorMeta meta_slice(const TensorMeta& m, int64_t dim, int64_t start, int64_t end, int64_t step);
/// Broadcasts size-1 dimensions (and new leading ones) to `sizes` with stride 0; -1 keeps a size.
TensorMeta meta_expand(const TensorMeta& m, const Shape& sizes);
/// Inserts a size-1 dimension at `dim`.
TensorMeta meta_unsqueeze(const TensorMeta& m, int64_t dim);
/// Removes dimension `dim`, which must have size 1.
TensorMeta meta_squeeze(const TensorMeta& m, int64_t dim);
/// @}

}  // namespace zero
