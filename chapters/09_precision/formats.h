// Chapter 09: the number formats as a model, and the reference every conversion of the
// chapter is checked against. A format is its exponent and mantissa widths plus what its
// top exponent means: infinities and NaNs (IEEE FP32, TF32, FP16, BF16 and FP8 E5M2), or,
// in OCP FP8 E4M3, only S.1111.111 is a NaN and there is no infinity. From that the
// program decodes every bit pattern, lists the finite values in order and rounds a
// number by searching that list for its nearest value (ties to the even pattern): slow,
// but plainly right. main.cpp uses it; read it after half.h (zero/core/half.h).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

namespace ch09 {

struct Format {
  const char* name;
  int exp_bits, man_bits;
  bool ieee;  // true: an all-ones exponent is infinity or NaN; false: E4M3's rule
  int bits() const { return 1 + exp_bits + man_bits; }
  int bias() const { return (1 << (exp_bits - 1)) - 1; }
};

constexpr Format kFp32{"FP32", 8, 23, true}, kTf32{"TF32", 8, 10, true}, kBf16{"BF16", 8, 7, true},
    kFp16{"FP16", 5, 10, true}, kE4m3{"E4M3", 4, 3, false}, kE5m2{"E5M2", 5, 2, true};
constexpr Format kFormats[] = {kFp32, kTf32, kBf16, kFp16, kE4m3, kE5m2};

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// The value of the magnitude pattern `p` (exponent and mantissa bits, no sign bit).
inline double decode(const Format& f, uint64_t p) {
  const uint64_t m = p & ((uint64_t{1} << f.man_bits) - 1), e = p >> f.man_bits;
  const uint64_t e_top = (uint64_t{1} << f.exp_bits) - 1;
  if (f.ieee && e == e_top) return m ? kNan : kInf;
  if (!f.ieee && e == e_top && m == (uint64_t{1} << f.man_bits) - 1) return kNan;
  // Exponent field 0: subnormal, no hidden bit, the exponent of field 1.
  const int exponent = (e == 0 ? 1 : static_cast<int>(e)) - f.bias();
  const double significand = (e == 0 ? 0.0 : 1.0) + std::ldexp(static_cast<double>(m), -f.man_bits);
  return std::ldexp(significand, exponent);
}

inline uint32_t bits_of(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

// A rounded number as the format stores it: the sign bit and the magnitude pattern.
struct Encoded {
  bool negative = false;
  uint64_t pattern = 0;
};

// Every finite non-negative value of a narrow format in increasing order: value i is
// pattern i (the finite patterns are 0, 1, ..., largest), so the nearest value found by
// a binary search is also the rounded bit pattern. FP32 itself is too wide to list
// (2^31 patterns) and rounds with the hardware's conversion instead: see round_to.
class ValueTable {
 public:
  explicit ValueTable(const Format& f) : format_(f) {
    for (uint64_t p = 0;; ++p) {
      const double v = decode(f, p);
      if (!std::isfinite(v)) break;
      values_.push_back(v);
    }
    // The value one step past the largest, as if the exponent went on: a number at least
    // half way there overflows (IEEE rounds the tie to it, its pattern being even).
    const size_t n = values_.size();
    beyond_ = 2 * values_[n - 1] - values_[n - 2];
  }
  const Format& format() const { return format_; }
  double max_finite() const { return values_.back(); }
  double min_normal() const { return values_[size_t{1} << format_.man_bits]; }
  double min_subnormal() const { return values_[1]; }
  const std::vector<double>& values() const { return values_; }

  // `x` rounded to the nearest value, ties to the even pattern, as sign and pattern; an
  // overflow gives infinity's pattern (IEEE) or the NaN pattern (E4M3), a NaN a quiet NaN.
  Encoded Encode(double x) const {
    const uint64_t e_top = (uint64_t{1} << format_.exp_bits) - 1, m_bits = format_.man_bits;
    const uint64_t nan = format_.ieee ? (e_top << m_bits) | (uint64_t{1} << (m_bits - 1))
                                      : (e_top << m_bits) | ((uint64_t{1} << m_bits) - 1);
    if (std::isnan(x)) return {std::signbit(x), nan};
    const double a = std::fabs(x);
    const uint64_t n = values_.size();
    const uint64_t hi = static_cast<uint64_t>(std::lower_bound(values_.begin(), values_.end(), a) -
                                              values_.begin());
    uint64_t p = hi;
    if (hi == n || values_[hi] != a) {  // between pattern hi - 1 and hi (or the one beyond)
      const double above = hi == n ? beyond_ : values_[hi], below = values_[hi - 1];
      const double mid = (below + above) / 2;  // exact: both have few significant bits
      p = a < mid ? hi - 1 : a > mid ? hi : (hi % 2 == 0 ? hi : hi - 1);
    }
    if (p >= n) p = format_.ieee ? e_top << m_bits : nan;
    return {std::signbit(x), p};
  }
  // The value of Encode(x).
  double Round(double x) const {
    const Encoded e = Encode(x);
    const double v = decode(format_, e.pattern);
    return e.negative ? -v : v;
  }

 private:
  Format format_;
  std::vector<double> values_;
  double beyond_ = 0;
};

// The tables of the narrow formats, built once (TF32's has 2^18 entries).
inline const ValueTable& table(const Format& f) {
  static const ValueTable tf32(kTf32), bf16(kBf16), fp16(kFp16), e4m3(kE4m3), e5m2(kE5m2);
  for (const ValueTable* t : {&tf32, &bf16, &fp16, &e4m3, &e5m2}) {
    if (std::strcmp(t->format().name, f.name) == 0) return *t;
  }
  return tf32;  // not reached for the formats above
}

// `x` rounded to the nearest value of `f`, ties to even. FP32 uses the C++ conversion
// from double, which is IEEE's round to nearest even (and overflows to infinity).
inline double round_to(const Format& f, double x) {
  if (f.bits() == 32) return static_cast<double>(static_cast<float>(x));
  return table(f).Round(x);
}

// FP32 -> TF32 with bit operations, ties to even: TF32 is FP32 with the low 13 mantissa
// bits zero, so this is BF16's rounding (half.h, ex09.1) at bit 13 instead of bit 16.
inline float tf32_round(float x) {
  uint32_t u = bits_of(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    u |= 0x400000u;  // NaN: keep it one (quiet), whatever its payload
  } else {
    u = (u + 0xfffu + ((u >> 13) & 1u)) & ~0x1fffu;
  }
  float y;
  std::memcpy(&y, &u, sizeof y);
  return y;
}

}  // namespace ch09
