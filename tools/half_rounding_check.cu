// Checks that a CUDA kernel rounds to 16 bits exactly as the CPU does: for every one of
// the 2^32 float bit patterns, float_to_bf16_bits and float_to_f16_bits compiled for the
// GPU (its conversion instructions, Note [The GPU's own conversions] in zero/core/half.h)
// against the portable bit manipulations the CPU runs, evaluated on the same GPU; and for
// all 2^16 F16 patterns, f16_bits_to_float, compared bit for bit.
//   half_rounding_check      exit 0: identical; 1: a mismatch (the first few printed);
//                            77: no GPU of compute capability 8.0 or later (skipped)
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

#include "zero/core/half.h"

namespace {

constexpr int kShown = 4;  // mismatches a conversion records

struct Mismatches {
  unsigned long long count[3];   // to BF16, to F16, F16 to float
  uint32_t first[3][kShown];     // their inputs' bits
};

__device__ void note(Mismatches* m, int which, uint32_t input) {
  const unsigned long long n = atomicAdd(&m->count[which], 1ull);
  if (n < kShown) m->first[which][n] = input;
}

__global__ void check_kernel(Mismatches* m) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < (uint64_t{1} << 32);
       i += stride) {
    const uint32_t u = static_cast<uint32_t>(i);
    const float f = __uint_as_float(u);
    if (zero::float_to_bf16_bits(f) != zero::float_to_bf16_bits_portable(f)) note(m, 0, u);
    if (zero::float_to_f16_bits(f) != zero::float_to_f16_bits_portable(f)) note(m, 1, u);
    if (i < (uint64_t{1} << 16)) {
      const uint16_t h = static_cast<uint16_t>(u);
      if (__float_as_uint(zero::f16_bits_to_float(h)) !=
          __float_as_uint(zero::f16_bits_to_float_portable(h))) {
        note(m, 2, u);
      }
    }
  }
}

bool ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) std::fprintf(stderr, "half_rounding_check: %s: %s\n", what,
                                     cudaGetErrorString(e));
  return e == cudaSuccess;
}

}  // namespace

int main() {
  int devices = 0, major = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0 ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0) != cudaSuccess ||
      major < 8) {
    std::printf("half_rounding_check: skipped: no CUDA GPU of compute capability 8.0 or later\n");
    return 77;
  }
  Mismatches* m = nullptr;
  if (!ok(cudaMallocManaged(&m, sizeof(Mismatches)), "cudaMallocManaged")) return 1;
  *m = Mismatches{};
  check_kernel<<<1024, 256>>>(m);
  if (!ok(cudaGetLastError(), "launch") || !ok(cudaDeviceSynchronize(), "kernel")) return 1;
  const char* names[3] = {"float -> BF16 (2^32 inputs)", "float -> F16 (2^32 inputs)",
                          "F16 -> float (2^16 inputs)"};
  bool same = true;
  for (int c = 0; c < 3; ++c) {
    std::printf("%-28s %llu mismatches", names[c], m->count[c]);
    for (unsigned long long k = 0; k < m->count[c] && k < kShown; ++k) {
      std::printf(" 0x%08x", m->first[c][k]);
    }
    std::printf("\n");
    same = same && m->count[c] == 0;
  }
  cudaFree(m);
  std::printf(same ? "half_rounding_check: the GPU's conversions equal the CPU's\n"
                   : "half_rounding_check: FAILED\n");
  return same ? 0 : 1;
}
