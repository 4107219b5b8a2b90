// Chapter 07 · section 5: Linear's bias add inside the GEMM. `zero::linear` runs
// y = x W^T + b as one cuBLASLt matmul whose epilogue adds b while the tile of y is
// still in registers; the unfused way is a GEMM that writes y, then an add kernel
// that reads y and writes it again. The difference is one extra pass over y.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "gpu.h"
#include "zero/autograd/functional.h"
#include "zero/autograd/grad_mode.h"

namespace ch07 {
namespace {

using zero::Tensor;


// max |a - b| / max |b| over all elements.
double relative_difference(const Tensor& a, const Tensor& b) {
  const std::vector<float> x = a.ToVector<float>(), y = b.ToVector<float>();
  double worst = 0.0, scale = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    worst = std::max(worst, std::fabs(double(x[i]) - y[i]));
    scale = std::max(scale, std::fabs(double(y[i])));
  }
  return worst / scale;
}

}  // namespace

int bias_epilogue(const Options& options) {
  std::printf("\n== 5. Linear: the bias add inside the GEMM (cuBLASLt epilogue), FP32\n");
  std::printf("  %-32s %10s %12s %9s %14s\n", "y = x W^T + b, x [N, in]", "fused ms",
              "GEMM+add ms", "speed-up", "extra MB moved");
  struct Shape {
    const char* name;
    int64_t n, in, out;
  };
  const Shape shapes[] = {
      {"char GPT c_fc  [16384,384]->1536", 16384, 384, 1536},
      {"GPT-2 c_fc     [8192,768]->3072", 8192, 768, 3072},
      {"GPT-2 c_proj   [8192,3072]->768", 8192, 3072, 768},
  };
  const int reps = options.quick ? 3 : 20;
  const zero::TensorOption cuda = zero::TensorOption().OnDevice(zero::Device::Cuda(0));
  zero::NoGradGuard no_grad;
  zero::Generator gen(5);
  int failures = 0;
  for (const Shape& s : shapes) {
    const int64_t n = options.quick ? s.n / 16 : s.n;
    const Tensor x = Tensor::Randn({n, s.in}, cuda, &gen);
    const Tensor w = Tensor::Randn({s.out, s.in}, cuda, &gen) * 0.02f;
    const Tensor b = Tensor::Randn({s.out}, cuda, &gen);
    const Tensor fused = zero::linear(x, w, b);                       // (n, out)
    const Tensor unfused = zero::matmul(x, w.Transpose(0, 1)) + b;    // (n, out)
    const double diff = relative_difference(fused, unfused);
    const bool ok = diff < 1e-5;
    failures += !ok;
    const float fused_ms = median_gpu_ms([&] { zero::linear(x, w, b); }, 2, reps);
    const float unfused_ms =
        median_gpu_ms([&] { zero::matmul(x, w.Transpose(0, 1)) + b; }, 2, reps);
    // The separate add reads y and b and writes y: 2 * n * out floats more than the GEMM.
    const double extra_mb = 2.0 * n * s.out * 4 / 1e6;
    std::printf("  %-32s %10.3f %12.3f %8.2fx %14.0f%s\n", s.name, fused_ms, unfused_ms,
                unfused_ms / fused_ms, extra_mb, ok ? "" : "  MISMATCH");
  }
  std::printf("Both ways give the same y (checked above); the fused one skips a pass over y.\n");
  return failures;
}

}  // namespace ch07
