// The three GEMMs of a Linear layer on CUDA, timed apart on the GPT's shapes in each
// exact-FP32 way and in TF32:
//   forward      y = x W^T + b          (cuBLASLt, bias in the epilogue)
//   grad_x       g W                    (cuBLAS matmul)
//   grad_w, b    g^T x and g's column sum (cuBLASLt; BGRADB unless split TF32 or, in
//                TF32, g copied K-major: Note [K-major weight gradients in TF32])
// plus, for split TF32, the passes that write the pieces of x for the forward and of g
// for the weight gradient (the latter also transposes it: split_tf32.cuh).
//
//   bench_linear [mode ...]      (ieee, 3xtf32, tf32; default: all three)
//
// Why it exists: in a training step the backward's GEMMs ran at a much lower rate than
// the forward's (docs/speed_notes.md). This says which GEMM, in which mode, and how
// much of split TF32's time is the split itself. Prints the median ms of each and its
// rate in TFLOP/s of the layer's own 2 N in out flops.
#include <cstdio>
#include <string>
#include <vector>

#include "tools/gpu_median.h"
#include "zero/kernels/precision.h"
#include "zero/kernels/cuda/split_tf32.cuh"
#include "zero/kernels/tensor_ops.h"

using namespace zero;
using tools::median_gpu_ms;

int main(int argc, char** argv) {
  if (!cuda_available()) {
    std::printf("[skipped] needs a CUDA device\n");
    return 0;
  }
  struct Shape { const char* name; int64_t n, in, out; };
  const Shape shapes[] = {
      {"char c_attn", 16384, 384, 1152},     {"char attn c_proj", 16384, 384, 384},
      {"char c_fc", 16384, 384, 1536},       {"char mlp c_proj", 16384, 1536, 384},
      {"gpt2 c_attn", 8192, 768, 2304},      {"gpt2 attn c_proj", 8192, 768, 768},
      {"gpt2 c_fc", 8192, 768, 3072},        {"gpt2 mlp c_proj", 8192, 3072, 768},
      {"gpt2 lm_head", 1280, 768, 50304}};
  const TensorOption gpu = TensorOption().OnDevice(Device::Cuda(0));
  std::printf("%-16s %-6s %18s %18s %18s %10s %10s\n", "shape", "mode", "forward ms TF/s",
              "grad_x ms TF/s", "grad_w,b ms TF/s", "split x ms", "split g ms");
  std::vector<std::string> modes(argv + 1, argv + argc);
  if (modes.empty()) modes = {"ieee", "3xtf32", "tf32"};
  for (const std::string& mode : modes) {
    set_matmul_precision(parse_matmul_precision(mode));
    for (const Shape& s : shapes) {
      const Tensor x = Tensor::Randn({s.n, s.in}, gpu), w = Tensor::Randn({s.out, s.in}, gpu);
      const Tensor b = Tensor::Randn({s.out}, gpu), g = Tensor::Randn({s.n, s.out}, gpu);
      const Tensor y = Tensor::Empty({s.n, s.out}, gpu), gx = Tensor::Empty({s.n, s.in}, gpu);
      const Tensor gw = Tensor::Empty({s.out, s.in}, gpu), gb = Tensor::Empty({s.out}, gpu);
      const double gflop = 2e-9 * s.n * s.in * s.out;
      const float fwd = median_gpu_ms([&] { ops::linear_forward(x, w, b, y); });
      const float bx = median_gpu_ms([&] { ops::matmul(g, w, gx); });
      const float bw = median_gpu_ms([&] { ops::linear_backward_params(g, x, gw, gb); });
      std::printf("%-16s %-6s %8.3f %9.1f %8.3f %9.1f %8.3f %9.1f", s.name, mode.c_str(), fwd,
                  gflop / fwd, bx, gflop / bx, bw, gflop / bw);
      if (mode == "3xtf32") {
        // x as the forward hands it to cuBLASLt (B, not transposed, in x n: already
        // K-major), and g as the weight gradient does (B, transposed: split and transposed).
        const float split_x = median_gpu_ms([&] {
          ops::cuda::split_tf32(x.data_ptr<float>(), false, true, s.n, s.in, s.in, 0);
        });
        const float split_g = median_gpu_ms([&] {
          ops::cuda::split_tf32(g.data_ptr<float>(), true, true, s.out, s.n, s.out, 0);
        });
        std::printf(" %10.3f %10.3f", split_x, split_g);
      }
      std::printf("\n");
    }
  }
  clear_matmul_precision();
  return 0;
}
