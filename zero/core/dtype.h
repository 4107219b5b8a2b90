/// @file
/// `DataType`: the element types a tensor can hold (F32 for values, I32 for ids, and
/// the 16-bit floats BF16 and F16 of core/half.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "zero/core/half.h"

namespace zero {

/// Element type of a tensor.
enum class DataType : uint8_t {
  F32,   ///< 32-bit IEEE float: activations, weights, gradients.
  I32,   ///< 32-bit signed integer: token ids, targets, masks.
  BF16,  ///< bfloat16: FP32's range with 8 significant bits (zero::bf16).
  F16,   ///< IEEE half precision: 11 significant bits, largest finite 65504 (zero::f16).
};

/// Bytes per element of `dtype`.
constexpr size_t dtype_size(DataType dtype) {
  return dtype == DataType::BF16 || dtype == DataType::F16 ? 2 : 4;
}

/// True for the element types that hold real numbers and can carry gradients (F32, BF16,
/// F16); false for I32.
constexpr bool is_floating_point(DataType dtype) { return dtype != DataType::I32; }

/// "f32", "i32", "bf16" or "f16".
constexpr const char* to_string(DataType dtype) {
  switch (dtype) {
    case DataType::F32: return "f32";
    case DataType::I32: return "i32";
    case DataType::BF16: return "bf16";
    case DataType::F16: return "f16";
  }
  return "?";
}

/// The `DataType` of a C++ element type (float → F32, int32_t → I32, bf16, f16).
template <typename T>
constexpr DataType dtype_of();
/// @cond INTERNAL
template <>
constexpr DataType dtype_of<float>() { return DataType::F32; }
template <>
constexpr DataType dtype_of<int32_t>() { return DataType::I32; }
template <>
constexpr DataType dtype_of<bf16>() { return DataType::BF16; }
template <>
constexpr DataType dtype_of<f16>() { return DataType::F16; }
/// @endcond

}  // namespace zero
