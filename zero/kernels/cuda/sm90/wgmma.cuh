// Hopper's warpgroup matrix multiply (wgmma, sm_90a only): the instructions, the
// shared-memory descriptors they read their operands through, the 128-byte swizzled
// tile those descriptors describe, and the fences the asynchronous products need.
// Private to kernels/cuda/sm90/, whose files are compiled for sm_90a alone
// (zero/CMakeLists.txt); the kernels built on it are attention_forward_wgmma.cu and
// attention_backward_wgmma.cu, and tools/wgmma_probe.cu checks each way they use it.
//
// Note [Warpgroup products]
// mma.sync (attention_tf32.cuh) is one warp's 16 x 8 x 16 product on operands the warp
// first loads into registers. wgmma is four warps' (a warpgroup's, 128 threads) 64 x N
// x 16 product, N up to 256, issued once and run asynchronously by the Tensor Cores,
// which read B, and A too if asked, straight from shared memory. The registers a warp
// would have spent on B fragments and the instructions spent loading them are gone, and
// the products of one issue are large enough to keep the Tensor Cores busy while the
// warps do their softmax; that is where Hopper's rate beyond mma.sync's comes from.
//
//   accumulator D (64 x N, FP32): warp w of the group holds rows 16 w .. 16 w + 15, in
//       the m16n8 layout of mma.sync: thread (g, t) = (lane / 4, lane % 4) holds
//       d[4 j + e] = D(16 w + g + 8 (e / 2), 8 j + 2 t + e % 2), j < N / 8.
//   A from registers (64 x 16, 16-bit): the m16n8k16 A fragment of each warp's 16 rows,
//       so four accumulators of two neighbouring 8-column steps, packed to 16 bits, are
//       an A operand as they stand (the P V of attention, as with mma.sync).
//   A or B from shared memory: a 64-bit descriptor (below) of a tile in one of the
//       layouts the hardware knows.
//
// The one layout used here: rows of 64 16-bit values, 128 bytes, stored with the
// 128-byte swizzle. Eight rows make a 1024-byte atom; in row r the 16-byte chunk c sits
// at chunk c ^ (r % 8), so the 8 rows of any one column chunk fall in 8 different bank
// groups (a plain 128-byte row stride would put them all in the same four banks). The
// tile must start on a 1024-byte boundary. Read as an operand it is either
//   K-major  (the 64 values of a row run along the product's K): Q or K of Q K^T. The
//            descriptor's stride (SBO) is 1024 bytes, from one 8-row atom to the next
//            along M or N; the K step of 16 values is 32 bytes added to the start
//            address, the hardware applying the swizzle to the address it forms.
//   MN-major (the 64 values run along M or N, rows along K): V in P V, where the rows
//            are keys. SBO is again 1024 bytes, now from 8 rows of K to the next 8; the
//            K step of 16 rows is 2048 bytes; the transpose bit of the instruction says
//            which of the two it is.
//
// Ordering. The products run asynchronously: `fence()` (wgmma.fence) before a group of
// them orders the warpgroup's earlier register writes (accumulators rescaled, A
// operands packed) before the products read them; `commit()` closes a group; `wait<N>()`
// returns when at most N groups are in flight. The compiler does not know that an
// accumulator changes until the wait, so `operands_ready` ties each accumulator register
// to the wait (as CUTLASS's warpgroup_fence_operand does), and `hold` keeps the registers
// of an A operand from other use until then. Shared memory written by the
// threads (cp.async, st.shared) reaches the Tensor Cores through the async proxy:
// `fence_proxy_async()` after the writes and before the barrier that publishes them.
#pragma once

#include <cstdint>

#include "zero/kernels/cuda/attention_dropout_squares.cuh"

namespace zero::ops::cuda::wgmma {

constexpr int kRowBytes = 128;   // a swizzled row: 64 16-bit values
constexpr int kAtomBytes = 1024; // 8 rows, the swizzle's period

// Byte offset of 16-byte chunk c (values 8c .. 8c + 7) of row r in a swizzled tile.
__device__ inline uint32_t swizzled(int r, int c) {
  return static_cast<uint32_t>(r * kRowBytes + ((c ^ (r & 7)) << 4));
}

// The descriptor of a swizzled tile whose operand starts at shared address `addr`
// (a 1024-byte boundary plus the K offset within the atom): start address, leading
// offset (unused by the swizzled layouts at the sizes here; 1 by convention), stride
// offset 1024 bytes, all in units of 16 bytes, and the 128-byte swizzle mode in the top
// two bits.
__device__ inline uint64_t descriptor(uint32_t addr) {
  return static_cast<uint64_t>((addr & 0x3FFFF) >> 4) | (1ull << 16) |
         (static_cast<uint64_t>(kAtomBytes >> 4) << 32) | (1ull << 62);
}

// A descriptor plus n describes the operand n * 16 bytes further on. Taking the next 16
// values of K: 32 bytes along the rows of a K-major tile, 16 rows of an MN-major one.
constexpr uint64_t kNextKOfKMajor = 32 >> 4;
constexpr uint64_t kNextKOfMnMajor = 16 * kRowBytes >> 4;

// This thread's warpgroup, read from lane 0 so that the compiler knows it is the same in
// every thread of the warp: what is computed from it, the descriptors above all, can
// then stay in the warp's uniform registers, which is where wgmma reads them from.
__device__ inline int warpgroup() { return __shfl_sync(0xffffffffu, threadIdx.x / 128, 0); }

__device__ inline void fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ inline void commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int kPending>
__device__ inline void wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}
__device__ inline void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// Makes the compiler treat each of d's registers as written here: placed after `wait`,
// no read of an accumulator moves above it; before `fence`, no write moves below.
template <int N>
__device__ inline void operands_ready(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// Keeps the registers of x allocated to x until here; placed after the `wait` of the
// products that take x as their A operand, which read it asynchronously.
template <int N>
__device__ inline void hold(const uint32_t (&x)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" ::"r"(x[i]) : "memory");
}

// Starts copying rows [row0, row0 + kRows) of a [rows, 64] matrix of 16-bit values E,
// rows `ld` elements apart, into the swizzled tile at shared address `tile`: cp.async,
// 16 bytes a copy, 8 threads a row, over the block's kThreads threads. Rows past `rows`
// become zeros. `cp.async.wait_group` and a barrier make them visible, and
// `fence_proxy_async` visible to the products. kPairOrder puts tile row r at shared row
// flash::pair_row(r) (Note [Attention dropout squares] in attention_dropout_squares.cuh).
template <int kRows, int kThreads, bool kPairOrder = false, typename E>
__device__ inline void copy_tile(uint32_t tile, const E* src, int64_t ld, int row0, int rows) {
  static_assert(sizeof(E) == 2 && kRows * 8 % kThreads == 0, "16-bit rows, whole copies a thread");
#pragma unroll
  for (int n = 0; n < kRows * 8 / kThreads; ++n) {
    const int i = threadIdx.x + n * kThreads, r = i / 8, c = i % 8;
    const bool inside = row0 + r < rows;
    const E* from = inside ? src + (row0 + r) * ld + 8 * c : src;
    const int at = kPairOrder ? flash::pair_row(r) : r;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(tile + swizzled(at, c)),
                 "l"(from), "r"(inside ? 16 : 0));
  }
}

#define ZERO_WG_ACC8(d, i)                                                                 \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
      "+f"(d[i + 6]), "+f"(d[i + 7])
#define ZERO_WG_ACC32(d) ZERO_WG_ACC8(d, 0), ZERO_WG_ACC8(d, 8), ZERO_WG_ACC8(d, 16), ZERO_WG_ACC8(d, 24)
#define ZERO_WG_D32                                                                        \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, " \
  "%19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
// d (64 x 64) (+)= A (64 x 16) B (16 x 64), both from shared memory. kTransA, kTransB:
// 0 for a K-major operand, 1 for an MN-major one.
template <bool kBf16, int kTransA, int kTransB>
__device__ inline void product_n64_ss(float (&d)[32], uint64_t a, uint64_t b, bool accumulate) {
  const int acc = accumulate;
  if constexpr (kBf16) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " ZERO_WG_D32
        ", %32, %33, p, 1, 1, %35, %36;\n}\n"
        : ZERO_WG_ACC32(d)
        : "l"(a), "l"(b), "r"(acc), "n"(kTransA), "n"(kTransB));
  } else {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 " ZERO_WG_D32
        ", %32, %33, p, 1, 1, %35, %36;\n}\n"
        : ZERO_WG_ACC32(d)
        : "l"(a), "l"(b), "r"(acc), "n"(kTransA), "n"(kTransB));
  }
}

// d (64 x 64) += A (64 x 16, registers: an m16n8k16 A fragment per warp) B (16 x 64,
// shared memory; kTransB as above).
template <bool kBf16, int kTransB>
__device__ inline void product_n64_rs(float (&d)[32], const uint32_t (&a)[4], uint64_t b) {
  if constexpr (kBf16) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " ZERO_WG_D32
        ", {%32, %33, %34, %35}, %36, p, 1, 1, %38;\n}\n"
        : ZERO_WG_ACC32(d)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1), "n"(kTransB));
  } else {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 " ZERO_WG_D32
        ", {%32, %33, %34, %35}, %36, p, 1, 1, %38;\n}\n"
        : ZERO_WG_ACC32(d)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1), "n"(kTransB));
  }
}

// d = A B^T over K = 64, A and B both K-major 64-row tiles (a score tile: Q K^T, K Q^T
// or V dO^T): four products, the first overwriting d.
template <bool kBf16>
__device__ inline void scores_k64(float (&d)[32], uint64_t a, uint64_t b) {
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) {
    product_n64_ss<kBf16, 0, 0>(d, a + kk * kNextKOfKMajor, b + kk * kNextKOfKMajor, kk > 0);
  }
}

}  // namespace zero::ops::cuda::wgmma
