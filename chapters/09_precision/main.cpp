// Chapter 09 · Number formats and mixed precision: the CPU half, and the program's modes.
//
// 1. The bit layouts of FP32, TF32, BF16, FP16 and FP8 for a few values, and the fast
//    conversions (zero/core/half.h, your ex09.1, TF32's) checked against a search for the
//    nearest value (formats.h). 2. Rounding: each format's machine epsilon, found by
//    halving, and a sum of 10^6 terms in each format against the exact sum.
// range.cpp goes on with 3. range and loss scaling and 4. master weights; 5. is the
// roofline per precision from datasheet figures, and with a GPU gpu.cu measures it (6.). The
// --curves mode (plot.cpp) overlays the loss curves of train_gpt runs.
//   ch09_precision [--quick] [--figure roofline.png]
//   ch09_precision --curves out.png fp32=DIR/metrics.jsonl bf16=... fp16=...
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "chapter.h"
#include "formats.h"
#include "mixed_precision.h"  // your exercise: solutions/ or exercises/09_precision
#include "zero/core/device.h"
#include "zero/core/error.h"
#include "zero/core/half.h"

namespace ch09 {
namespace {

// "s | exponent | mantissa" of a sign and magnitude pattern.
std::string bit_fields(const Format& f, bool negative, uint64_t pattern) {
  std::string s = negative ? "1 | " : "0 | ";
  for (int i = f.exp_bits + f.man_bits - 1; i >= 0; --i) {
    s += ((pattern >> i) & 1) ? '1' : '0';
    if (i == f.man_bits) s += " | ";
  }
  return s;
}

void show_layouts() {
  std::printf("\n== 1. Bit layouts: sign | exponent | mantissa\n");
  std::printf("  %-6s %5s %9s %9s %6s\n", "format", "bits", "exponent", "mantissa", "bias");
  for (const Format& f : kFormats) {
    std::printf("  %-6s %5d %9d %9d %6d%s\n", f.name, f.bits(), f.exp_bits, f.man_bits, f.bias(),
                f.ieee ? "" : "   no infinity; S.1111.111 is NaN");
  }
  std::printf(
      "A value is (-1)^s x 1.mantissa x 2^(exponent - bias); exponent 0 holds the\n"
      "subnormals, 0.mantissa x 2^(1 - bias). Each FP32 value below, rounded to each\n"
      "format (to nearest, ties to even), and what the rounded bits are worth:\n");
  for (const double x : {1.0, 0.1, -2.5, 3.14159265358979, 1e-5, 70000.0}) {
    const float xf = static_cast<float>(x);
    std::printf("\n  %.9g\n", xf);
    for (const Format& f : kFormats) {
      Encoded e{std::signbit(xf), bits_of(xf) & 0x7fffffffu};
      double value = xf;
      if (f.bits() != 32) {
        e = table(f).Encode(xf);
        value = table(f).Round(xf);
      }
      std::printf("    %-5s %-40s %.9g\n", f.name, bit_fields(f, e.negative, e.pattern).c_str(),
                  value);
    }
  }
}

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// The floats that test a conversion to `t`'s format hardest: every value of the format
// with both signs, each midpoint between neighbours (the ties) and the floats just
// either side of it, up to the overflow threshold; then random bit patterns (NaNs,
// infinities and subnormals included).
std::vector<float> probes(const ValueTable& t, int random_count) {
  std::vector<float> out;
  const std::vector<double>& v = t.values();
  for (size_t i = 0; i < v.size(); ++i) {
    const double next = i + 1 < v.size() ? v[i + 1] : 2 * v[i] - v[i - 1];
    const float mid = static_cast<float>((v[i] + next) / 2);
    for (const float x : {static_cast<float>(v[i]), mid, std::nextafter(mid, 0.0f),
                          std::nextafter(mid, INFINITY)}) {
      out.push_back(x);
      out.push_back(-x);
    }
  }
  uint64_t state = 2026;
  for (int i = 0; i < random_count; ++i)
    out.push_back(float_of(static_cast<uint32_t>(splitmix64(state))));
  return out;
}

template <typename Convert>
int check_conversion(const char* name, const Format& f, Convert convert) {
  const ValueTable& t = table(f);
  const std::vector<float> inputs = probes(t, 1 << 20);
  int64_t bad = 0;
  for (const float x : inputs) {
    const double want = t.Round(x), got = convert(x);
    const bool same =
        std::isnan(want) ? std::isnan(got) : got == want && std::signbit(got) == std::signbit(want);
    if (!same && bad++ == 0) {
      std::printf("  first mismatch: %s(%.9g, bits 0x%08x) = %.9g, the nearest %s is %.9g\n", name,
                  x, bits_of(x), got, f.name, want);
    }
  }
  std::printf("  FP32 -> %-5s %-31s %8zu floats, %lld mismatches\n", f.name, name, inputs.size(),
              static_cast<long long>(bad));
  return bad != 0;
}

int check_conversions() {
  std::printf(
      "\nThe fast conversions against the nearest-value search (formats.h), on every\n"
      "value of the format, each tie between neighbours and the floats either side\n"
      "of it (both signs), and 2^20 random float bit patterns:\n");
  int failures = 0;
  failures += check_conversion("zero::bf16 (zero/core/half.h)", kBf16,
                               [](float x) { return static_cast<float>(zero::bf16(x)); });
  failures += check_conversion("round_to_bf16 (your ex09.1)", kBf16, [](float x) {
    return zero::bf16_bits_to_float(zero::ex09::round_to_bf16(bits_of(x)));
  });
  failures += check_conversion("zero::f16 (zero/core/half.h)", kFp16,
                               [](float x) { return static_cast<float>(zero::f16(x)); });
  failures += check_conversion("tf32_round (formats.h)", kTf32, tf32_round);
  return failures;
}

// Section 2. The terms are multiples of 2^-24 in [0, 1), so any sum of up to 2^29 of
// them is exact in double: the reference has no error at all.
int rounding_error() {
  std::printf("\n== 2. Rounding: machine epsilon and the error of a long sum\n");
  std::printf(
      "eps: the gap between 1 and the next value, found by halving e while\n"
      "round(1 + e/2) > 1. Digits: p log10(2) for p significant bits.\n");
  std::printf("  %-6s %3s %12s %12s %7s\n", "format", "p", "eps found", "2^-(p-1)", "digits");
  int failures = 0;
  for (const Format& f : kFormats) {
    double eps = 1.0;
    while (round_to(f, 1.0 + eps / 2) > 1.0) eps /= 2;
    const double expected = std::ldexp(1.0, -f.man_bits);
    failures += eps != expected;
    std::printf("  %-6s %3d %12.3e %12.3e %7.2f%s\n", f.name, f.man_bits + 1, eps, expected,
                (f.man_bits + 1) * std::log10(2.0), eps == expected ? "" : "  MISMATCH");
  }

  const int n = 1000000;
  std::vector<double> x(n);
  uint64_t state = 9;
  for (double& v : x) v = std::ldexp(static_cast<double>(splitmix64(state) >> 40), -24);
  std::printf(
      "\nThe sum of %d terms uniform in [0, 1), each already rounded to the\n"
      "format, against their exact sum. Added one by one in the format, the sum\n"
      "stops growing once half its ulp exceeds every term: at 2^p, where the ulp\n"
      "is 2. A pairwise tree (chapter 02's reductions) rounds far fewer times;\n"
      "an FP32 accumulator is what a GPU reduction or GEMM keeps.\n",
      n);
  std::printf("  %-6s %11s %11s %10s   %-36s\n", "", "", "sum, one", "",
              "relative error of the sum:");
  std::printf("  %-6s %11s %11s %10s %11s %11s %13s\n", "format", "exact sum", "by one",
              "stall 2^p", "one by one", "pairwise", "FP32 accum.");
  for (const Format& f : kFormats) {
    std::vector<double> t(n);
    double exact = 0.0, seq = 0.0;
    float acc = 0.0f;
    for (int i = 0; i < n; ++i) {
      t[i] = round_to(f, x[i]);
      exact += t[i];
      seq = round_to(f, seq + t[i]);
      acc += static_cast<float>(t[i]);
    }
    // Pairwise: adjacent pairs summed (and rounded) level by level.
    for (size_t len = t.size(); len > 1; len = (len + 1) / 2) {
      for (size_t i = 0; i < len / 2; ++i) t[i] = round_to(f, t[2 * i] + t[2 * i + 1]);
      if (len % 2) t[len / 2] = t[len - 1];
    }
    const double pairwise = t[0];
    std::printf("  %-6s %11.1f %11.1f %10.0f %11.1e %11.1e %13.1e\n", f.name, exact, seq,
                std::ldexp(1.0, f.man_bits + 1), std::fabs(seq - exact) / exact,
                std::fabs(pairwise - exact) / exact, std::fabs(acc - exact) / exact);
    // FP32's stall lies beyond this sum; every other format must stop exactly there.
    if (f.bits() != 32 && seq != std::ldexp(1.0, f.man_bits + 1)) {
      std::printf("  MISMATCH: %s stopped at %.1f, not at 2^p\n", f.name, seq);
      ++failures;
    }
  }
  return failures;
}

// Section 5: the roofline of each precision as the datasheet draws it. Narrower elements
// move fewer bytes per flop, and the Tensor Cores raise the compute roof by more than
// that, so the ridge moves right: a GEMM must be more intense to be compute-bound.
void roofline_model() {
  std::printf("\n== 5. The roofline per precision (model, H200 SXM datasheet figures)\n");
  std::printf(
      "C [M, N] = A [M, K] B [K, N] with K = N = 8192 does 2MNK flops and moves at\n"
      "least in (MK + KN) + out MN bytes (in, out: bytes per element). Ridge = peak /\n"
      "%.1f TB/s (HBM); a GEMM below its ridge is memory-bound (mem), above compute.\n",
      kSheetHbmTBps);
  std::printf("  %-10s %8s %7s %6s %13s %13s %13s\n", "precision", "TFLOP/s", "in/out", "ridge",
              "M = 16", "M = 256", "M = 8192");
  const double k = 8192, n = 8192;
  for (const PrecisionSheet& p : kSheet) {
    const double ridge = p.tflops / kSheetHbmTBps;
    std::printf("  %-10s %8.0f %5d/%d %6.0f", p.name, p.tflops, p.in_bytes, p.out_bytes, ridge);
    for (const double m : {16.0, 256.0, 8192.0}) {
      const double f = 2 * m * n * k / (p.in_bytes * (m * k + k * n) + p.out_bytes * m * n);
      std::printf(" %9.1f %-4s", f, f < ridge ? "mem" : "comp");
    }
    std::printf("\n");
  }
}

}  // namespace
}  // namespace ch09

int main(int argc, char** argv) {
  ch09::Options options;
  std::vector<std::string> runs;
  std::string curves;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) {
      options.quick = true;
    } else if (!std::strcmp(argv[i], "--figure") && i + 1 < argc) {
      options.figure = argv[++i];
    } else if (!std::strcmp(argv[i], "--curves") && i + 1 < argc) {
      curves = argv[++i];
    } else if (!curves.empty() && std::strchr(argv[i], '=')) {
      runs.push_back(argv[i]);
    } else {
      std::fprintf(stderr,
                   "usage: %s [--quick] [--figure roofline.png]\n"
                   "       %s --curves out.png NAME=metrics.jsonl [NAME=metrics.jsonl ...]\n",
                   argv[0], argv[0]);
      return 2;
    }
  }
  try {
    if (!curves.empty()) return ch09::overlay_curves(curves, runs);
    std::printf("09 · Number formats and mixed precision%s\n", options.quick ? " (quick)" : "");
    ch09::show_layouts();
    int failures = ch09::check_conversions();
    failures += ch09::rounding_error();
    failures += ch09::range_and_mixed_precision();
    ch09::roofline_model();
#ifdef ZERO_CHAPTER_HAS_CUDA
    if (zero::cuda_available()) {
      failures += ch09::run_gpu_part(options);
    } else {
      std::printf("\n[skipped] GPU part: no CUDA device visible (this machine has none)\n");
    }
#else
    std::printf("\n[skipped] GPU part: Zero was built without CUDA\n");
#endif
    if (failures != 0) {
      std::printf("\nFAILED: %d result(s) did not match their reference\n", failures);
      return 1;
    }
  } catch (const zero::Error& e) {
    std::printf("error: %s\n", e.what());
    return 1;
  }
  return 0;
}
