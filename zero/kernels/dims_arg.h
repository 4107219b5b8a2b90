/// @file
/// `DimsArg`: a tensor's sizes and strides packed into a fixed-size struct that
/// kernels receive by value (no device allocation for metadata).
///
/// A kernel walks the output in row-major order with a linear index; `DimsArg::Offset`
/// turns that index into the element offset of an operand with any strides, including
/// stride 0 for broadcast dimensions. Read next: tensor_ops.h.
#pragma once

#include <cstdint>

#include "zero/core/philox.h"  // ZERO_HOST_DEVICE
#include "zero/core/tensor_meta.h"

namespace zero {

/// Most dimensions a kernel argument can describe.
constexpr int kMaxDims = 8;

/// Sizes and strides (in elements) of one operand, as a kernel sees them.
struct DimsArg {
  int ndim = 0;                   ///< Number of dimensions (0 for a scalar).
  int64_t sizes[kMaxDims] = {};   ///< Extent of each dimension.
  int64_t strides[kMaxDims] = {}; ///< Element stride of each dimension (0 = broadcast).

  /// Element offset of row-major position `linear` (over `sizes`) in the operand.
  ZERO_HOST_DEVICE int64_t Offset(int64_t linear) const {
    int64_t offset = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t i = linear % sizes[d];
      linear /= sizes[d];
      offset += i * strides[d];
    }
    return offset;
  }

  /// The operand's own sizes and strides; throws above `kMaxDims` dimensions.
  static DimsArg Of(const TensorMeta& meta);
  /// The operand read as `out_sizes`: broadcast dimensions (size 1, or missing in
  /// front) get stride 0. Throws if `meta` does not broadcast to `out_sizes`.
  static DimsArg Broadcast(const TensorMeta& meta, const Shape& out_sizes);
};

}  // namespace zero
