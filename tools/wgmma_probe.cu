// Checks, one at a time, the three ways the attention kernels of zero/kernels/cuda/sm90/
// use Hopper's wgmma (Note [Warpgroup products] in wgmma.cuh), each on one 64 x 64 x 64
// product of small integers, exact in 16 bits and in FP32, against the CPU:
//
//   ss_k_k    D = A B^T, A and B in swizzled tiles read K-major      (S = Q K^T)
//   rs_mn     D = A B, A in registers as accumulators packed to 16 bits, B read MN-major
//                                                                     (O += P V)
//   ss_mn_mn  D = A B, A stored transposed and read MN-major, B read MN-major
//                                                                     (dQ += dS K)
//
// in BF16 and F16. When an attention test fails on an sm_90 GPU this says which layout,
// descriptor or transpose bit is wrong: a failing case prints its first mismatches and
// which simple misreading (an operand transposed) its result matches instead.
//   wgmma_probe        exit 0: all pass; 1: a case failed; 77: no sm_90 GPU (skipped)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <type_traits>
#include <vector>

#include "zero/core/cuda/cuda_check.cuh"
#include "zero/kernels/cuda/attention_tf32.cuh"
#include "zero/kernels/cuda/sm90/wgmma.cuh"

namespace {

namespace wg = zero::ops::cuda::wgmma;
constexpr int kN = 64;
enum Case { kSsKK, kRsMn, kSsMnMn };
const char* const kNames[] = {"ss_k_k", "rs_mn", "ss_mn_mn"};

template <bool kBf16>
using Half = std::conditional_t<kBf16, __nv_bfloat16, __half>;

template <bool kBf16>
__device__ uint32_t pack(float lo, float hi) {
  using zero::ops::cuda::flash::pack16;
  using zero::ops::cuda::flash::Arith;
  return pack16<kBf16 ? Arith::kBf16 : Arith::kF16>(lo, hi);
}

// One warpgroup. a and b are 64 x 64 row-major; the tiles hold them as they are (for
// kRsMn, a goes to registers instead). d is written row-major from the accumulators.
template <bool kBf16, Case kCase>
__global__ void probe_kernel(const Half<kBf16>* a, const Half<kBf16>* b, float* d) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  __shared__ __align__(1024) unsigned char tiles[2 * kN * wg::kRowBytes];
  const uint32_t at = static_cast<uint32_t>(__cvta_generic_to_shared(tiles));
  const uint32_t bt = at + kN * wg::kRowBytes;
  wg::copy_tile<kN, 128>(at, a, kN, 0, kN);
  wg::copy_tile<kN, 128>(bt, b, kN, 0, kN);
  asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;\n" ::: "memory");
  wg::fence_proxy_async();
  __syncthreads();
  const int w = threadIdx.x / 32, g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
  float acc[32] = {};
  uint32_t frag[4][4] = {};
  if constexpr (kCase == kRsMn) {  // A's rows 16 w + g (+ 8), as the forward's P
    for (int kk = 0; kk < 4; ++kk) {
      for (int h = 0; h < 4; ++h) {
        const int row = 16 * w + g + 8 * (h % 2), col = 16 * kk + 8 * (h / 2) + 2 * t;
        frag[kk][h] = pack<kBf16>(float(a[row * kN + col]), float(a[row * kN + col + 1]));
      }
    }
  }
  wg::fence();
  for (int kk = 0; kk < 4; ++kk) {
    if constexpr (kCase == kSsKK) {
      if (kk == 0) wg::scores_k64<kBf16>(acc, wg::descriptor(at), wg::descriptor(bt));
    } else if constexpr (kCase == kRsMn) {
      wg::product_n64_rs<kBf16, 1>(acc, frag[kk], wg::descriptor(bt) + kk * wg::kNextKOfMnMajor);
    } else {
      wg::product_n64_ss<kBf16, 1, 1>(acc, wg::descriptor(at) + kk * wg::kNextKOfMnMajor,
                                      wg::descriptor(bt) + kk * wg::kNextKOfMnMajor, kk > 0);
    }
  }
  wg::commit();
  wg::wait<0>();
  wg::operands_ready(acc);
  for (int kk = 0; kk < 4; ++kk) wg::hold(frag[kk]);
  for (int i = 0; i < 32; ++i) {
    d[(16 * w + g + 8 * (i % 4 / 2)) * kN + i / 4 * 8 + 2 * t + i % 2] = acc[i];
  }
#elif defined(__CUDA_ARCH__)
  __trap();  // no wgmma in this architecture's code: a launch fails loudly, not silently
#endif
}

// The product the case should make, and the misreadings reported when it does not.
std::vector<float> reference(const std::vector<float>& a, const std::vector<float>& b,
                             bool a_transposed, bool b_transposed) {
  std::vector<float> d(kN * kN, 0.0f);
  for (int m = 0; m < kN; ++m) {
    for (int n = 0; n < kN; ++n) {
      for (int k = 0; k < kN; ++k) {
        d[m * kN + n] += (a_transposed ? a[k * kN + m] : a[m * kN + k]) *
                         (b_transposed ? b[n * kN + k] : b[k * kN + n]);
      }
    }
  }
  return d;
}

template <bool kBf16, Case kCase>
bool run(const std::vector<float>& a, const std::vector<float>& b) {
  using H = Half<kBf16>;
  std::vector<H> ah(a.begin(), a.end()), bh(b.begin(), b.end());
  H *ad, *bd;
  float* dd;
  ZERO_CUDA_CHECK(cudaMalloc(&ad, sizeof(H) * kN * kN));
  ZERO_CUDA_CHECK(cudaMalloc(&bd, sizeof(H) * kN * kN));
  ZERO_CUDA_CHECK(cudaMalloc(&dd, sizeof(float) * kN * kN));
  ZERO_CUDA_CHECK(cudaMemcpy(ad, ah.data(), sizeof(H) * kN * kN, cudaMemcpyHostToDevice));
  ZERO_CUDA_CHECK(cudaMemcpy(bd, bh.data(), sizeof(H) * kN * kN, cudaMemcpyHostToDevice));
  ZERO_CUDA_CHECK(cudaMemset(dd, 0xff, sizeof(float) * kN * kN));  // NaNs until written
  probe_kernel<kBf16, kCase><<<1, 128>>>(ad, bd, dd);
  ZERO_CUDA_CHECK(cudaGetLastError());
  std::vector<float> d(kN * kN);
  ZERO_CUDA_CHECK(cudaMemcpy(d.data(), dd, sizeof(float) * kN * kN, cudaMemcpyDeviceToHost));
  cudaFree(ad);
  cudaFree(bd);
  cudaFree(dd);
  // What each case computes: ss_k_k A B^T; rs_mn A B; ss_mn_mn A^T B (A's tile is A^T).
  const bool at = kCase == kSsMnMn, bt = kCase == kSsKK;
  const std::vector<float> want = reference(a, b, at, bt);
  int wrong = 0;
  for (int i = 0; i < kN * kN; ++i) {
    if (d[i] != want[i] && wrong++ < 4) {
      std::printf("  %s %s: D[%d][%d] = %g, expected %g\n", kNames[kCase], kBf16 ? "bf16" : "f16",
                  i / kN, i % kN, d[i], want[i]);
    }
  }
  std::printf("%-9s %-4s %s", kNames[kCase], kBf16 ? "bf16" : "f16", wrong ? "FAILED" : "ok");
  if (wrong) {
    std::printf(" (%d of %d wrong)", wrong, kN * kN);
    for (int x = 0; x < 4; ++x) {
      if (reference(a, b, x / 2 != 0, x % 2 != 0) == d) {
        std::printf("; matches A%s B%s", x / 2 ? "^T" : "", x % 2 ? "^T" : "");
      }
    }
  }
  std::printf("\n");
  return wrong == 0;
}

}  // namespace

int main() {
  int count = 0, major = 0, minor = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("wgmma_probe skipped: no CUDA device\n");
    return 77;
  }
  ZERO_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  ZERO_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0));
  if (major != 9 || minor != 0) {
    std::printf("wgmma_probe skipped: needs an sm_90 GPU, device 0 is sm_%d%d\n", major, minor);
    return 77;
  }
  // Small integers, different in every row and column, so a misplaced value shows.
  std::vector<float> a(kN * kN), b(kN * kN);
  for (int i = 0; i < kN * kN; ++i) {
    a[i] = static_cast<float>((i / kN * 7 + i % kN * 3) % 9 - 4);
    b[i] = static_cast<float>((i / kN * 5 + i % kN * 11) % 7 - 3);
  }
  bool ok = run<true, kSsKK>(a, b) & run<true, kRsMn>(a, b) & run<true, kSsMnMn>(a, b);
  ok = ok & run<false, kSsKK>(a, b) & run<false, kRsMn>(a, b) & run<false, kSsMnMn>(a, b);
  return ok ? 0 : 1;
}
