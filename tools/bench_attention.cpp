// The fused causal attention kernels on CUDA, timed apart on the GPT's shapes in each
// precision mode: the forward, and the backward (delta, then the dK, dV kernel, which
// also adds dQ's shares, then the pass that rounds dQ), with and without dropout on the
// probabilities. The modes bf16 and f16 give the kernels operands of that dtype (16-bit
// Tensor-Core products on 16-bit tiles, Note [16-bit fragments]).
//
//   bench_attention [mode] [shape]     e.g. bench_attention bf16 gpt2 (default: all)
//
// Why it exists: attention is the second largest share of a GPT step after the Linear
// GEMMs (docs/speed_notes.md), and its kernels are Zero's own. Prints the median ms of
// each and its rate in TFLOP/s of the causal products: 2 for the forward (S = Q K^T and
// P V) and 5 for the backward (S again, dP, dV, dK, dQ), each 2 B H T^2 D / 2 flops.
#include <cstdio>
#include <string>

#include "tools/gpu_median.h"
#include "zero/kernels/precision.h"
#include "zero/kernels/tensor_ops.h"

using namespace zero;
using tools::median_gpu_ms;

int main(int argc, char** argv) {
  const std::string only_mode = argc > 1 ? argv[1] : "";
  const std::string only_shape = argc > 2 ? argv[2] : "";
  if (!cuda_available()) {
    std::printf("[skipped] needs a CUDA device\n");
    return 0;
  }
  struct Shape { const char* name; int64_t B, H, T, D; float dropout; };
  const Shape shapes[] = {{"char", 64, 6, 256, 64, 0.2f},
                          {"char p=0", 64, 6, 256, 64, 0.0f},
                          {"gpt2", 8, 12, 1024, 64, 0.0f}};
  const TensorOption fp32 = TensorOption().OnDevice(Device::Cuda(0));
  std::printf("%-10s %-6s %18s %18s\n", "shape", "mode", "forward ms TF/s", "backward ms TF/s");
  for (const std::string mode : {"ieee", "3xtf32", "tf32", "bf16", "f16"}) {
    if (!only_mode.empty() && only_mode != mode) continue;
    const bool half = mode == "bf16" || mode == "f16";
    set_matmul_precision(parse_matmul_precision(half ? "ieee" : mode));
    const TensorOption gpu = TensorOption().OnDevice(Device::Cuda(0)).WithDtype(
        mode == "bf16" ? DataType::BF16 : mode == "f16" ? DataType::F16 : DataType::F32);
    const auto randn = [&](const Shape& s) {
      const Tensor x = Tensor::Empty({s.B, s.H, s.T, s.D}, gpu);
      ops::convert(Tensor::Randn({s.B, s.H, s.T, s.D}, fp32), x);
      return x;
    };
    for (const Shape& s : shapes) {
      if (!only_shape.empty() && only_shape != s.name) continue;
      const Tensor q = randn(s), k = randn(s), v = randn(s), g = randn(s);
      const Tensor out = Tensor::Empty({s.B, s.H, s.T, s.D}, gpu);
      const Tensor lse = Tensor::Empty({s.B, s.H, s.T}, fp32);
      const Tensor gq = Tensor::Empty({s.B, s.H, s.T, s.D}, gpu);
      const Tensor gk = Tensor::Empty({s.B, s.H, s.T, s.D}, gpu);
      const Tensor gv = Tensor::Empty({s.B, s.H, s.T, s.D}, gpu);
      const double product_gflop = 1e-9 * s.B * s.H * s.T * s.T * s.D;  // causal: half of 2 T^2 D
      const float fwd = median_gpu_ms([&] {
        ops::attention_forward(q, k, v, true, s.dropout, 7, 0, out, lse);
      });
      const float bwd = median_gpu_ms([&] {
        ops::attention_backward(q, k, v, out, lse, g, true, s.dropout, 7, 0, gq, gk, gv);
      });
      std::printf("%-10s %-6s %8.3f %9.1f %8.3f %9.1f\n", s.name, mode.c_str(), fwd,
                  2 * product_gflop / fwd, bwd, 5 * product_gflop / bwd);
    }
  }
  clear_matmul_precision();
  return 0;
}
