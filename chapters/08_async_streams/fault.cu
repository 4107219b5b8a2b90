// Chapter 08 · the asynchronous-error demonstration (--fault). A kernel that writes out of
// bounds fails on the GPU after its launch has returned, so the error surfaces at some
// later CUDA call; CUDA_LAUNCH_BLOCKING=1 makes each launch wait, so the error is reported
// at the launch that caused it. The context is unusable afterwards: run this on its own.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#include "gpu.h"
#include "zero/autograd/functional.h"
#include "zero/core/cuda/cuda_check.cuh"

namespace ch08 {
namespace {

// Writes 256 GiB past the start of `p`: an address no allocation covers.
__global__ void out_of_bounds_kernel(float* p) { p[threadIdx.x + (int64_t{1} << 36)] = 1.0f; }

}  // namespace

int run_fault_demo() {
  const char* blocking = std::getenv("CUDA_LAUNCH_BLOCKING");
  std::printf("\nCUDA_LAUNCH_BLOCKING=%s\n", blocking ? blocking : "(unset)");
  const zero::Tensor x =
      zero::Tensor::Ones({256}, zero::TensorOption().OnDevice(zero::Device::Cuda(0)));
  const zero::Tensor y = x * 2.0f;  // some correct work first
  std::printf("step 1: launch out_of_bounds_kernel (writes 256 GiB past a buffer)\n");
  try {
    out_of_bounds_kernel<<<1, 32>>>(x.data_ptr<float>());
    ZERO_CUDA_LAUNCH_CHECK();
    std::printf("        launch check: no error (the kernel has only been queued)\n");
    std::printf("step 2: z = y + 1, another launch\n");
    const zero::Tensor z = y + 1.0f;
    std::printf("        no error reported yet\n");
    // ToVector, not Item(): z has 256 elements, and Item() refuses any tensor but a scalar.
    std::printf("step 3: z.ToVector<float>() copies the result to the host and waits\n");
    std::printf("        got %g\n", z.ToVector<float>()[0]);
  } catch (const zero::CudaError& e) {
    std::printf("        reported HERE:\n  %s\n", e.what());
    std::printf("The context is now unusable (the error is sticky); the program must exit.\n");
    return 0;
  }
  std::printf("no error was reported: unexpected\n");
  return 1;
}

}  // namespace ch08
