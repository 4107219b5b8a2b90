// The parameter gradients of a Linear layer on CUDA, two ways, on the GPT's shapes:
// cuBLASLt with the BGRADB epilogue (grad_weight and grad_bias from one GEMM) against
// a plain cuBLAS GEMM for grad_weight plus a column-sum kernel for grad_bias.
//
//   bench_linear_backward
//
// Why it exists: grad_weight = g^T x has a small output ([out, in], e.g. 1152 x 384)
// and a long reduction (k = B*T rows), and runs well below the rate of a forward GEMM of
// the same size; this asks whether the epilogue is to blame. Prints, per shape and
// precision mode, the median of each and their ratio (docs/speed_notes.md, item 7: they
// are within 3% of each other, so the epilogue stays).
#include <algorithm>
#include <cstdio>
#include <vector>

#include "zero/cuda/stream.h"
#include "zero/kernels/cuda/cuda_ops.h"
#include "zero/kernels/tensor_ops.h"

using namespace zero;

namespace {

template <typename F>
float median_ms(F&& f) {
  for (int i = 0; i < 3; ++i) f();
  std::vector<float> ms;
  cuda::EventTimer timer;
  for (int i = 0; i < 15; ++i) {
    timer.Start();
    f();
    ms.push_back(timer.Stop());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main() {
  if (!cuda_available()) {
    std::printf("[skipped] needs a CUDA device\n");
    return 0;
  }
  struct Shape { const char* name; int64_t n, in, out; };
  const Shape shapes[] = {
      {"char c_attn", 16384, 384, 1152}, {"char c_fc", 16384, 384, 1536},
      {"char mlp c_proj", 16384, 1536, 384}, {"gpt2 c_attn", 8192, 768, 2304},
      {"gpt2 c_fc", 8192, 768, 3072}, {"gpt2 mlp c_proj", 8192, 3072, 768}};
  const TensorOption gpu = TensorOption().OnDevice(Device::Cuda(0));
  std::printf("%-16s %-5s %12s %16s %8s\n", "shape", "mode", "BGRADB ms", "GEMM + sum ms",
              "ratio");
  for (const char* mode : {"0", "tf32"}) {
    ops::set_matmul_mode_override(mode);
    for (const Shape& s : shapes) {
      const Tensor g = Tensor::Randn({s.n, s.out}, gpu), x = Tensor::Randn({s.n, s.in}, gpu);
      const Tensor gw = Tensor::Empty({s.out, s.in}, gpu), gb = Tensor::Empty({s.out}, gpu);
      const Tensor gw2 = Tensor::Empty({s.out, s.in}, gpu), gb2 = Tensor::Empty({1, s.out}, gpu);
      const float lt = median_ms([&] { ops::linear_backward_params(g, x, gw, gb); });
      const float plain = median_ms([&] {
        ops::matmul(g.Transpose(0, 1), x, gw2);
        ops::sum(g, 0, gb2);
      });
      std::printf("%-16s %-5s %12.3f %16.3f %8.2f\n", s.name, mode, lt, plain, lt / plain);
    }
  }
  ops::set_matmul_mode_override(nullptr);
  return 0;
}
