/// @file
/// How the CPU kernels' OpenMP threads wait for work, and how to make them sleep.
///
/// Between two parallel loops, GCC's OpenMP runtime (libgomp) keeps its worker threads
/// spinning, by default for about 300000 iterations (a few milliseconds), so that the
/// next loop starts at once. On a machine with cores to spare that costs nothing. On a
/// small one shared with other work it is ruinous: the spinning workers take the cores
/// the main thread and the other programs need, and each parallel loop then waits for a
/// worker that is not running. Chapter 11's CPU run measured it (its README has the
/// figures). `OMP_WAIT_POLICY=passive` makes waiting threads sleep instead, but libgomp
/// reads its environment once, in a constructor that runs before `main`, and has no call
/// that changes it later: a `setenv` in the program comes too late.
#pragma once

namespace zero {

/// Makes this program's OpenMP threads sleep while they wait, unless the user chose:
/// when neither `OMP_WAIT_POLICY` nor `GOMP_SPINCOUNT` is set, sets
/// `OMP_WAIT_POLICY=passive` and runs the program again (`execv` of `/proc/self/exe`
/// with the same `argv`, so the process keeps its id, arguments and other environment).
/// Call it first in `main`, before any output or other work. Returns when there is
/// nothing to do, or when the restart fails (the threads then wait as they did).
/// Setting `OMP_WAIT_POLICY` yourself (`active` to keep spinning) skips the restart,
/// which is also what to do under a debugger.
void use_passive_openmp_wait(char** argv);

}  // namespace zero
