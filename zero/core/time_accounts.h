/// @file
/// Where the host's time goes, split into accounts: inside kernels, inside the memory
/// pool, and everything else. The CPU profile (zero/autograd/profiler.h) reads them to
/// split each op's time into its kernels, its allocations, and the rest, which is the
/// framework's own overhead: building the autograd graph, checking and dispatching.
///
/// Note [Exclusive time accounts]
/// A `Charge` names the account that the time until its end belongs to. Charges nest,
/// and the innermost one is charged: an allocation made inside a kernel (a temporary)
/// counts as allocator time, not kernel time, and a kernel that calls another through
/// its stub stays one kernel. So the accounts never count a moment twice, and their sum
/// is the time since `Enable`. Each switch reads the clock, some 20 ns, and only while
/// enabled; disabled, a `Charge` costs one test. The accounts are per thread: they
/// measure the thread that runs the step (the kernels' OpenMP workers run inside a
/// kernel call of that thread).
#pragma once

namespace zero::time_accounts {

/// What the time is spent on.
enum Account { kOther = 0, kKernels = 1, kAllocator = 2, kAccountCount = 3 };

/// Starts the accounts of this thread at zero, with the time from now on charged to
/// kOther until a `Charge` says otherwise.
void Enable();
/// Stops charging (the totals stay readable).
void Disable();
/// True between `Enable` and `Disable` on this thread.
bool enabled();
/// Milliseconds charged to `account` since `Enable`, including the running charge.
double total_ms(Account account);

/// Charges the time of its lifetime to `account` (Note [Exclusive time accounts]).
class Charge {
 public:
  /// Opens a charge to `account`, if the accounts are enabled.
  explicit Charge(Account account);
  /// Closes it: the time goes back to the enclosing charge's account.
  ~Charge();
  Charge(const Charge&) = delete;
  Charge& operator=(const Charge&) = delete;

 private:
  Account previous_ = kOther;
  bool active_ = false;
};

}  // namespace zero::time_accounts
