// exp and tanh in double precision, written so that the compiler vectorises the loops
// that call them (private to the CPU kernels and their tests).
//
// Note [Why not std::exp in a hot loop]
// A call to the C library's exp or tanh is a function call per element: the loop around
// it cannot be vectorised (GCC's vector versions of libm, libmvec, are used only under
// -ffast-math, which this project does not use), and each call costs some 10-30 ns on
// the machines we measured. The attention's softmax and the GeLU call them once per
// element, and at the quickstart's sizes they took a third of a CPU step. The functions
// below are plain arithmetic with no branches, inlined into the loop, so that one AVX-512
// instruction computes eight of them. They are double precision on purpose: their error,
// a few units in the last place of a double (about 1e-15 relative), is far below the one
// rounding of the float result, so the kernels that use them round to the same floats as
// with the exact function, up to ties.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>

namespace zero::ops {

// 2^k for an integer k in [-1022, 1023], built from its bits.
inline double exp2_int(int64_t k) {
  const uint64_t bits = static_cast<uint64_t>(k + 1023) << 52;
  double result;
  std::memcpy(&result, &bits, sizeof result);
  return result;
}

// e^x, within about 2 units in the last place of a double; 0 below -746, infinity above
// 710, NaN for NaN.
//
// e^x = 2^n e^r with n = round(x / ln 2) and r = x - n ln 2, so |r| <= ln(2)/2 = 0.347.
// ln 2 is split into a high part with zeros in its last bits (n * kLn2Hi is exact) and
// the rest, so r loses nothing to the subtraction (Cody and Waite's reduction). e^r is
// its Taylor series to r^12, whose first term left out, r^13/13!, is below 2e-16.
// 2^n is two factors 2^(n/2) 2^(n - n/2), so that n beyond the exponent range of one
// double (down to -1075 for the smallest subnormal results, up to 1024) still works.
inline double exp_double(double x) {
  constexpr double kLog2e = 1.4426950408889634;
  constexpr double kLn2Hi = 0.6931471803691238;     // ln 2 to 32 bits
  constexpr double kLn2Lo = 1.9082149292705877e-10;  // ln 2 - kLn2Hi
  constexpr double kRound = 6755399441055744.0;      // 1.5 * 2^52: x + kRound - kRound
                                                     // rounds x to an integer
  const double clamped = x < -746.0 ? -746.0 : (x > 710.0 ? 710.0 : x);  // NaN stays NaN
  const double n = (clamped * kLog2e + kRound) - kRound;
  const double r = (clamped - n * kLn2Hi) - n * kLn2Lo;
  double p = 1.0 / 479001600.0;  // 1/12!
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  const int64_t k = static_cast<int64_t>(n == n ? n : 0.0);  // NaN: any k, p is NaN
  const int64_t half = k / 2;
  const double result = p * exp2_int(half) * exp2_int(k - half);
  if (x < -746.0) return 0.0;
  if (x > 710.0) return std::numeric_limits<double>::infinity();
  return result;
}

// tanh(x), within about 1e-15 of it, relative.
//
// Near 0 its odd Taylor series (to x^13; for |x| < 1/10 the terms left out are below
// 1e-16 of the result), elsewhere 1 - 2 / (e^(2x) + 1), which tends to +-1 at the ends
// without overflow (e^(2x) = infinity gives 1; 0 gives -1). Just above 1/10 the
// subtraction loses three or four bits of a double, still far below a float's rounding.
inline double tanh_double(double x) {
  const double x2 = x * x;
  double p = 21844.0 / 6081075.0;
  p = p * x2 - 1382.0 / 155925.0;
  p = p * x2 + 62.0 / 2835.0;
  p = p * x2 - 17.0 / 315.0;
  p = p * x2 + 2.0 / 15.0;
  p = p * x2 - 1.0 / 3.0;
  const double series = x + x * x2 * p;
  const double far = 1.0 - 2.0 / (exp_double(2.0 * x) + 1.0);
  return x2 < 1.0 / 100.0 ? series : far;
}

}  // namespace zero::ops
