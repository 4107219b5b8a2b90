/// @file
/// `DataType`: the element types a tensor can hold (F32 for values, I32 for ids).
#pragma once

#include <cstddef>
#include <cstdint>

namespace zero {

/// Element type of a tensor.
enum class DataType : uint8_t {
  F32,  ///< 32-bit IEEE float: activations, weights, gradients.
  I32,  ///< 32-bit signed integer: token ids, targets, masks.
};

/// Bytes per element of `dtype`.
constexpr size_t dtype_size(DataType dtype) { return 4; }

/// "f32" or "i32".
constexpr const char* to_string(DataType dtype) { return dtype == DataType::F32 ? "f32" : "i32"; }

/// The `DataType` of a C++ element type (float → F32, int32_t → I32).
template <typename T>
constexpr DataType dtype_of();
/// @cond INTERNAL
template <>
constexpr DataType dtype_of<float>() { return DataType::F32; }
template <>
constexpr DataType dtype_of<int32_t>() { return DataType::I32; }
/// @endcond

}  // namespace zero
