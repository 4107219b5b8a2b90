/// @file
/// Dtype dispatch: one switch from a tensor's `DataType` to a templated kernel.
///
/// A kernel written for an element type `T` is instantiated for every type of a
/// compile-time list and picked at run time by the tensor's dtype, as PyTorch's
/// `AT_DISPATCH_*` macros do:
///
///     dispatch_dtype<FloatTypes>(out.dtype(), "binary", [&](auto tag) {
///       using T = typename decltype(tag)::type;
///       binary_loop<T>(op, a, b, out);
///     });
///
/// Kernels compute in float (or wider) and convert at the loads and stores, so a new
/// 16-bit type is one entry in the list below. Read next: cpu/elementwise_cpu.cpp.
#pragma once

#include <cstdint>
#include <string>

#include "zero/core/dtype.h"
#include "zero/core/error.h"

namespace zero::ops {

/// A type carried as a value, so a generic lambda can receive it (as its member `type`).
template <typename T>
struct TypeTag {
  using type = T;  ///< The element type.
};

/// A compile-time list of element types.
template <typename... Ts>
struct TypeList {};

/// The floating-point element types kernels are built for. BF16 and F16 join here.
using FloatTypes = TypeList<float>;
/// Every element type: what copies, fills and rearrangements move.
using AllTypes = TypeList<float, int32_t>;

/// @cond INTERNAL
template <typename... Ts>
std::string type_names(TypeList<Ts...>) {
  std::string names;
  ((names += (names.empty() ? "" : ", ") + std::string(to_string(dtype_of<Ts>()))), ...);
  return names;
}

template <typename... Ts, typename F>
bool dispatch_in(TypeList<Ts...>, DataType dtype, F& f) {
  // Calls f with the first type of the list whose DataType is `dtype`.
  return ((dtype == dtype_of<Ts>() ? (f(TypeTag<Ts>{}), true) : false) || ...);
}
/// @endcond

/// Calls `f(TypeTag<T>{})` for the type `T` of `List` whose DataType is `dtype`.
/// @throws zero::Error naming `op`, `dtype` and the types `op` supports otherwise.
template <typename List, typename F>
void dispatch_dtype(DataType dtype, const char* op, F&& f) {
  const bool found = dispatch_in(List{}, dtype, f);
  ZERO_CHECK(found, op, ": dtype ", to_string(dtype), " is not supported (supported: ",
             type_names(List{}), ")");
}

}  // namespace zero::ops
