/// @file
/// Errors and checks: `zero::Error`, `ZERO_CHECK` for the caller's mistakes,
/// `ZERO_ASSERT` for broken invariants inside Zero.
///
/// Both macros throw; neither is compiled out in release builds. Messages follow
/// the pattern "expected ..., got ..." so a learner sees what to change.
/// Read next: device.h, tensor.h.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace zero {

/// Base class of every exception Zero throws.
class Error : public std::runtime_error {
 public:
  /// Wraps a complete, human-readable message.
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

/// A failed CUDA runtime, cuBLAS or launch call; the message names the call, file and line.
class CudaError : public Error {
 public:
  /// Wraps a complete, human-readable message.
  explicit CudaError(const std::string& what) : Error(what) {}
};

/// Thrown by an exercise stub that has not been completed yet.
class NotImplementedError : public Error {
 public:
  /// Wraps a complete, human-readable message.
  explicit NotImplementedError(const std::string& what) : Error(what) {}
};

namespace detail {

/// Concatenates any streamable values into one string.
template <typename... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream os;
  ((os << args), ...);  // a comma fold: an empty pack (ZERO_CHECK(cond)) compiles without warnings
  return os.str();
}

/// Throws `zero::Error` for a failed `ZERO_CHECK`.
[[noreturn]] void throw_check_failure(const char* file, int line, const char* cond,
                                      const std::string& msg);
/// Throws `zero::Error` for a failed `ZERO_ASSERT` ("a bug in Zero").
[[noreturn]] void throw_assert_failure(const char* file, int line, const char* cond,
                                       const std::string& msg);
/// Throws `zero::NotImplementedError` for an exercise stub.
[[noreturn]] void throw_not_implemented(const char* file, int line, const char* tag);

}  // namespace detail
}  // namespace zero

/// Checks a condition the caller controls (shapes, devices, dtypes, indices);
/// throws `zero::Error` with the streamed message when it is false.
#define ZERO_CHECK(cond, ...)                                                              \
  do {                                                                                     \
    if (__builtin_expect(!(cond), 0)) {                                                    \
      ::zero::detail::throw_check_failure(__FILE__, __LINE__, #cond,                       \
                                          ::zero::detail::str_cat(__VA_ARGS__));           \
    }                                                                                      \
  } while (0)

/// Checks an invariant of Zero itself; a failure is a bug in Zero, not in the caller.
#define ZERO_ASSERT(cond, ...)                                                             \
  do {                                                                                     \
    if (__builtin_expect(!(cond), 0)) {                                                    \
      ::zero::detail::throw_assert_failure(__FILE__, __LINE__, #cond,                      \
                                           ::zero::detail::str_cat(__VA_ARGS__));          \
    }                                                                                      \
  } while (0)

/// Marks an unfinished exercise: throws `zero::NotImplementedError` naming it. In
/// device code (an exercise's `__device__` function inside a kernel) nothing can be
/// thrown: the first thread of the grid prints the same message, then every thread
/// traps, and the next CUDA call reports the failed kernel.
#if defined(__CUDA_ARCH__)
#define ZERO_NOT_IMPLEMENTED(tag)                                                          \
  do {                                                                                     \
    if ((threadIdx.x | threadIdx.y | threadIdx.z | blockIdx.x | blockIdx.y | blockIdx.z) == 0) { \
      printf("exercise %s is not implemented yet (%s:%d)\n", tag, __FILE__, __LINE__);    \
    }                                                                                      \
    __trap();                                                                              \
  } while (0)
#else
#define ZERO_NOT_IMPLEMENTED(tag) ::zero::detail::throw_not_implemented(__FILE__, __LINE__, tag)
#endif
