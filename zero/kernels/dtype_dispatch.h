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
/// element type is one entry in the lists below (bf16 and f16 of core/half.h joined
/// them that way). Read next: cpu/elementwise_cpu.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

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

/// The floating-point element types kernels are built for.
using FloatTypes = TypeList<float, bf16, f16>;
/// Every element type: what copies, fills and rearrangements move.
using AllTypes = TypeList<float, int32_t, bf16, f16>;

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

/// `v` as a `To`: through float, except between equal types and into int32_t, which
/// truncates towards zero as C++ does. (An int32_t beyond 2^24 rounds twice on its way
/// to BF16 or F16, once to float and once to 16 bits.)
template <typename To, typename From>
ZERO_HOST_DEVICE To convert_value(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, int32_t>) {
    return static_cast<int32_t>(static_cast<float>(v));
  } else {
    return To(static_cast<float>(v));
  }
}

}  // namespace zero::ops
