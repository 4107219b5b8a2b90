/// @file
/// How a call such as `ops::add(a, b, out)` finds its kernel: one stub per kernel,
/// with one slot per backend, filled by the backends themselves.
///
/// A kernel is declared once, as the public function in tensor_ops.h. Its dispatch
/// file (kernels/elementwise.cpp for `binary`) defines the stub, checks the arguments
/// and calls the stub with the device to run on:
///
///     ZERO_DEFINE_KERNEL(binary);
///     void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
///       ...checks...
///       binary_stub(out.device(), op, a, b, out);
///     }
///
/// Each backend implements a function of exactly that signature and registers it at the
/// foot of its file (kernels/cpu/elementwise_cpu.cpp, kernels/cuda/elementwise.cu):
///
///     ZERO_REGISTER_KERNEL(binary, kCpu, binary_cpu);
///
/// See Note [Declare once, register per backend]. Read next: dtype_dispatch.h.
#pragma once

#include "zero/core/device.h"
#include "zero/core/time_accounts.h"

namespace zero::ops {

/// The backends a kernel can be implemented for; a stub has one slot for each.
enum class Backend { kCpu, kCuda };

/// Throws zero::Error: `kernel` has no implementation for `device`'s backend. In a
/// build without CUDA the message says so and how to rebuild.
[[noreturn]] void throw_missing_kernel(const char* kernel, const Device& device);

/// @cond INTERNAL
template <typename Signature>
class KernelStub;
/// @endcond

/// The dispatch point of one kernel whose backends have the signature `R(Args...)`.
///
/// Note [Declare once, register per backend]
/// The stub is a pair of function pointers, one per backend, that start out null. Each
/// backend's file fills its own slot from a static initialiser before `main` runs, so
/// neither the dispatch file nor any header has to know which backends exist: a build
/// without CUDA simply never fills the CUDA slots, and calling one reports "built
/// without CUDA" for every kernel at once, without a stub function per kernel. This is
/// PyTorch's DispatchStub, reduced to the two devices Zero has. Two details make it
/// safe. The stub's constructor is constexpr, so the stub is initialised before any
/// static initialiser runs, whatever the order of the files. And a static library only
/// links the objects something refers to, while nothing refers to a backend file by
/// name: the kernels library is therefore linked whole (WHOLE_ARCHIVE in
/// zero/CMakeLists.txt), or its registrations would silently vanish.
template <typename R, typename... Args>
class KernelStub<R(Args...)> {
 public:
  /// The function type every backend of this kernel implements.
  using Fn = R(Args...);

  /// An empty stub; `name` (a string literal) appears in error messages.
  constexpr explicit KernelStub(const char* name) : name_(name) {}

  /// Runs the kernel on `device`: on the GPU? the CUDA kernel : the CPU one.
  R operator()(const Device& device, Args... args) const {
    Fn* kernel = device.is_cuda() ? cuda_ : cpu_;
    if (kernel == nullptr) throw_missing_kernel(name_, device);
    // The CPU profile's kernel time (time_accounts.h); costs one test when not profiling.
    const time_accounts::Charge charge(time_accounts::kKernels);
    return kernel(args...);
  }

  /// Fills `backend`'s slot with `kernel`; returns true so that it can initialise a
  /// static (ZERO_REGISTER_KERNEL).
  bool Register(Backend backend, Fn* kernel) {
    (backend == Backend::kCuda ? cuda_ : cpu_) = kernel;
    return true;
  }

  /// The kernel's name, as given to the constructor.
  const char* name() const { return name_; }

 private:
  const char* name_;
  Fn* cpu_ = nullptr;
  Fn* cuda_ = nullptr;
};

}  // namespace zero::ops

/// Defines `<name>_stub`, the stub of kernel `zero::ops::<name>` (declared in
/// tensor_ops.h), typed by that function's signature. Use once, at namespace
/// `zero::ops` scope of the kernel's dispatch file.
#define ZERO_DEFINE_KERNEL(name) \
  ::zero::ops::KernelStub<decltype(::zero::ops::name)> name##_stub(#name)

/// Registers `fn` as kernel `name`'s implementation for `backend` (kCpu or kCuda). Use
/// at namespace `zero::ops` scope at the foot of the backend's file; `fn` must have
/// exactly the signature of `zero::ops::<name>`, or this does not compile.
#define ZERO_REGISTER_KERNEL(name, backend, fn)                                      \
  extern ::zero::ops::KernelStub<decltype(::zero::ops::name)> name##_stub;         \
  [[maybe_unused]] static const bool zero_registered_##name##_##backend =            \
      name##_stub.Register(::zero::ops::Backend::backend, fn)
