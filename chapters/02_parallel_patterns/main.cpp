// Chapter 02 · Parallel patterns. This file is the CPU half, which any machine can run:
//   1. element-wise vs reduction: independent outputs vs one output from many inputs;
//   2. the order of float additions: one running sum vs a tree (your tree_reduce);
//   3. broadcast backward is a reduction: the gradient of a + b, b broadcast over rows;
// and it prepares section 4, the GPU reduction ladder in gpu.cu (read it next).
//
//   ch02_parallel_patterns [--quick] [--version N]   (N = 0, the default, runs them all)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "warp_reduce.h"
#include "zero/autograd/functional.h"
#include "zero/core/device.h"
#include "zero/core/error.h"
#include "zero/core/generator.h"
#include "zero/core/philox.h"
#include "zero/core/tensor.h"
#ifdef ZERO_CHAPTER_HAS_CUDA
#include "gpu.h"
#endif

namespace {

void section(const char* title) { std::printf("\n== %s ==\n", title); }

// Section 1: what makes a reduction different, in numbers.
void show_patterns(int64_t n) {
  section("1. Element-wise vs reduction");
  std::printf("element-wise  c[i] = a[i] + b[i]\n"
              "              n outputs, each from its own inputs: n independent threads\n"
              "reduction     s = x[0] + x[1] + ... + x[n-1]\n"
              "              one output from n inputs: partial sums must meet, so threads\n"
              "              have to cooperate\n");
  const int depth = static_cast<int>(std::ceil(std::log2(static_cast<double>(n))));
  std::printf("for n = %lld: one running sum is a chain of %lld dependent additions;\n"
              "a tree of pairwise additions does the same n - 1 additions in %d levels\n",
              static_cast<long long>(n), static_cast<long long>(n - 1), depth);
}

// Pairwise (tree) sum in float, bottom-up like a GPU: groups of 32 values are
// summed by the warp butterfly of exercise 02, then partial sums in pairs, level
// by level, until one is left.
float tree_sum(const std::vector<float>& x) {
  std::vector<float> level;
  for (size_t i = 0; i < x.size(); i += ch02::kWarpSize) {
    float lanes[ch02::kWarpSize] = {};  // a short last group is padded with zeros
    for (size_t l = 0; l < ch02::kWarpSize && i + l < x.size(); ++l) lanes[l] = x[i + l];
    ch02::tree_reduce(lanes);
    level.push_back(lanes[0]);
  }
  while (level.size() > 1) {
    std::vector<float> next((level.size() + 1) / 2);
    for (size_t i = 0; i < next.size(); ++i) {
      next[i] = level[2 * i] + (2 * i + 1 < level.size() ? level[2 * i + 1] : 0.0f);
    }
    level.swap(next);
  }
  return level.empty() ? 0.0f : level[0];
}

// Section 2: the same numbers summed in two orders, against a double-precision sum.
void show_summation_order(int64_t n) {
  section("2. Order matters: summing floats in one chain vs in a tree");
  std::vector<float> x(static_cast<size_t>(n));
#pragma omp parallel for
  for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = zero::philox_uniform(1, i);
  double exact = 0.0;
  float chain = 0.0f;
  for (float v : x) {
    exact += v;
    chain += v;
  }
  const float tree = tree_sum(x);
  std::printf("%lld uniform values in [0, 1):\n", static_cast<long long>(n));
  std::printf("  %-32s %18.3f\n", "double, one chain (reference)", exact);
  std::printf("  %-32s %18.3f  relative error %.1e\n", "float, one chain", chain,
              std::fabs(chain - exact) / exact);
  std::printf("  %-32s %18.3f  relative error %.1e\n", "float, tree (tree_reduce at 32)", tree,
              std::fabs(tree - exact) / exact);
  std::printf("A float keeps 24 bits: once the running sum is large, each new x[i] loses its\n"
              "low bits (past 2^24 = 16777216, values below 1 vanish). In a tree the two\n"
              "operands of each addition stay of similar size, and the error grows with the\n"
              "depth (log2 n), not with n. GPU reductions are trees; section 4 checks them\n"
              "on values whose partial sums are all exact in float (multiples of 1/16 in\n"
              "[-1, 1]), so every correct version must return the double sum exactly.\n");
}

// Section 3: d/db sum((a + b) * w), with b [C] broadcast over the N rows of a [N, C],
// is the column sum of w: the backward of a broadcast is a reduction over N.
// Returns the number of mismatches.
int check_broadcast_backward(zero::Device device) {
  const int64_t n = 512, c = 768;
  zero::Generator gen(42);
  const zero::TensorOption opt = zero::TensorOption().OnDevice(device);
  const zero::Tensor a = zero::Tensor::Randn({n, c}, opt, &gen);  // (N, C)
  const zero::Tensor w = zero::Tensor::Randn({n, c}, opt, &gen);  // (N, C)
  zero::Tensor b = zero::Tensor::Randn({c}, opt, &gen);           // (C)
  b.SetRequiresGrad();
  const zero::Tensor loss = zero::sum((a + b) * w);  // (): a + b is (N, C)
  loss.Backward();

  const std::vector<float> grad = b.Grad().ToVector<float>();  // (C)
  const std::vector<float> wv = w.ToVector<float>();           // (N, C) row-major
  double worst = 0.0;
  int bad = 0;
  for (int64_t j = 0; j < c; ++j) {
    double col = 0.0, scale = 0.0;  // sum over N by hand, and the sum of |terms|
    for (int64_t i = 0; i < n; ++i) {
      col += wv[static_cast<size_t>(i * c + j)];
      scale += std::fabs(wv[static_cast<size_t>(i * c + j)]);
    }
    // Float accumulation of N terms: error well below 1e-5 of sum |terms|.
    const double err = std::fabs(grad[static_cast<size_t>(j)] - col);
    worst = std::max(worst, err / scale);
    if (err > 1e-5 * scale) ++bad;
  }
  std::printf("%s: loss = sum((a + b) * w), a and w (%lld, %lld), b (%lld) broadcast over "
              "%lld rows\n  b.Grad()[c] vs sum over n of w[n, c] by hand: worst error %.1e of "
              "sum|w|, %s\n",
              device.ToString().c_str(), static_cast<long long>(n), static_cast<long long>(c),
              static_cast<long long>(c), static_cast<long long>(n), worst,
              bad == 0 ? "matches" : "MISMATCH");
  return bad;
}

#ifdef ZERO_CHAPTER_HAS_CUDA
// Section 4's input: multiples of 1/16 in [-1, 1] with mean 0, from a Philox stream.
// Partial sums of such values stay far below 2^20 in magnitude (a random walk grows
// like sqrt(n)), where float represents every multiple of 1/16 exactly: so any
// order of additions gives the exact sum, and the only acceptable answer is it.
int run_gpu_ladder(int64_t n, int version, bool quick) {
  std::vector<float> x(static_cast<size_t>(n));
  double exact = 0.0;
#pragma omp parallel for reduction(+ : exact)
  for (int64_t i = 0; i < n; ++i) {
    const int k = static_cast<int>(zero::philox_word(7, i) % 33) - 16;  // -16 .. 16
    x[static_cast<size_t>(i)] = static_cast<float>(k) / 16.0f;
    exact += x[static_cast<size_t>(i)];  // exact in double, in any order
  }
  return ch02::run_reduction_ladder(x, exact, version, quick);
}
#endif

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  int version = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else if (std::strcmp(argv[i], "--version") == 0 && i + 1 < argc) {
      version = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--quick] [--version N]\n", argv[0]);
      return 2;
    }
  }
  try {
    std::printf("Chapter 02 · Parallel patterns%s\n", quick ? " (--quick)" : "");
    const int64_t n = quick ? int64_t{1} << 20 : int64_t{1} << 28;  // GPU ladder: 1M or 256M
    show_patterns(n);
    show_summation_order(quick ? int64_t{1} << 20 : int64_t{1} << 26);

    section("3. Broadcast backward is a reduction");
    std::printf("b is added to every row of a, so each b[c] reaches the loss through N\n"
                "paths, and its gradient is the sum of the N incoming gradients: a column\n"
                "sum, the reduction Zero's backward of `+` runs (sum_to_shape).\n");
    int problems = check_broadcast_backward(zero::Device::Cpu());
    if (zero::cuda_available()) problems += check_broadcast_backward(zero::Device::Cuda(0));
#ifdef ZERO_CHAPTER_HAS_CUDA
    if (zero::cuda_available()) {
      problems += run_gpu_ladder(n, version, quick);
    } else {
      std::printf("\n[skipped] GPU part (section 4, the reduction ladder): no CUDA device "
                  "visible\n");
    }
#else
    (void)version;  // only the GPU ladder has versions
    std::printf("\n[skipped] GPU part (section 4, the reduction ladder): this build has no "
                "CUDA backend (configured with ZERO_CUDA=OFF, or no toolkit was found)\n");
#endif
    if (problems != 0) {
      std::printf("\nFAILED: %d result(s) did not match the CPU reference\n", problems);
      return 1;
    }
    return 0;
  } catch (const zero::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
