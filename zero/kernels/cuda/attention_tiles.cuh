// The tiles of the fast attention kernels: their sizes, and the copies that bring rows of
// q, k, v and dO from global into shared memory while the block computes on the tile
// before. Part of the fast kernels (attention.cuh lists the parts); what the warps then
// read out of a tile is attention_fragments.cuh.
//
// Note [Attention tiles in shared memory]
// A block of kWarps = 4 warps owns a tile of kTile = 64 rows of one operand (16 rows a
// warp) and streams the other operand through shared memory 64 rows at a time. A warp's
// 16 x 64 scores are 32 floats a thread, which leaves registers for the output
// accumulator (up to 64 floats a thread at D = 128) and exact mode's split operands;
// exact mode's forward already uses 255 registers (docs/speed_notes.md, item 19).
//
// The head dimension D is padded up to a compiled width kD of 32, 64 or 128, with zeros
// past the real D (zeros add nothing to a dot product), so any D <= 128 works; rows past
// the operand's end are zeros as well. Rows are padded further, to kLd = kD + 4 floats.
// A warp's fragment reads (attention_fragments.cuh) touch 8 rows and 4 columns (a_rows,
// b_cols: thread (g, t) at row g, column t) or 4 rows and 8 columns (b_rows: row 2t,
// column g). With a stride of kD + 4, kD a multiple of 32, those fall in banks 4 g + t
// and 8 t + g, 32 different ones, where a stride of kD would put all 8 rows in the same
// four banks.
//
// The streamed tiles are double-buffered: while the block computes on one, cp.async
// copies the next into the other buffer, so the loads overlap the arithmetic
// (docs/speed_notes.md, item 6). cp.async moves 16 bytes per instruction without passing
// through registers, so it needs rows, strides and base 16-byte aligned (`vectors_ok` in
// attention.cuh); otherwise the threads copy float by float, and the tile is the same.
//
// BF16 and F16 operands stay 16-bit in their tiles, which the 16-bit products read
// directly (Note [16-bit fragments]): half the shared memory and half the bytes per
// product of an FP32 tile. Their rows are padded by 8 values, kD + 8, 16 bytes, so that
// cp.async's 16-byte copies stay aligned. A row is then kD / 2 + 4 words long, kD a
// multiple of 32, so 8 consecutive rows start in 8 different groups of 4 banks: the 8
// rows a fragment read or an ldmatrix phase touches (4 words of each) fall in 32
// different banks.
#pragma once

#include <cstdint>

#include "zero/kernels/cuda/attention_dropout_squares.cuh"

namespace zero::ops::cuda::flash {

constexpr int kTile = 64;                 // query rows and key rows per tile
constexpr int kWarps = 4;                 // 16 rows of the tile each
constexpr int kThreads = 32 * kWarps;
constexpr int kSteps = kTile / 8;         // 8-key steps (or 8-column tiles) of a 64 tile
// Row stride of a shared tile of elements E, in elements: kD + 4 floats, or kD + 8
// 16-bit values (16 bytes of padding either way).
template <int kD, typename E = float>
constexpr int kLd = kD + 16 / static_cast<int>(sizeof(E));

// Starts copying rows [row0, row0 + 64) of a [rows, D] matrix of elements E (float,
// bf16 or f16) whose rows are `ld` elements apart into a shared tile of the same
// elements, with zeros past the last row and past column D.
//
// With `vectors` (the caller checked that D, ld and the matrix start are multiples of
// 16 bytes) each thread issues 16-byte cp.async copies, which run while the block
// computes on the tile before; `wait_tiles` makes them visible. Otherwise the threads
// copy element by element and the tile is ready when this returns. Both paths leave the
// same tile, so the kernels are written once for either.
//
// With `paired` the rows are stored in pair order (`pair_row`, Note [Attention dropout
// squares]): the tile of an operand whose rows a warp takes as A.
template <int kD, typename E>
__device__ inline void load_tile(E* tile, const E* src, int64_t ld, int row0, int rows, int D,
                                 bool vectors, bool paired) {
  if (vectors) {
    // A fixed count of copies a thread, so that on 16-bit tiles (at most 4 copies a
    // thread) the loop unrolls and the compiler hoists each copy's row and column out of
    // it: the copies run in every tile step, where their address arithmetic is issued
    // beside the products. FP32 tiles take twice the copies, and their kernels have no
    // registers left to hold the addresses (unrolled, the TF32 forward spilled).
    constexpr int kLanes = 16 / sizeof(E);  // elements in 16 bytes
    constexpr int kCopies = kTile * kD / kLanes;
    static_assert(kCopies % kThreads == 0, "every thread copies the same number of pieces");
#pragma unroll(sizeof(E) == 2 ? kCopies / kThreads : 1)
    for (int n = 0; n < kCopies / kThreads; ++n) {
      const int c = threadIdx.x + n * kThreads;
      const int r = c / (kD / kLanes), d = c % (kD / kLanes) * kLanes;
      const bool inside = row0 + r < rows && d < D;
      const E* from = inside ? src + (row0 + r) * ld + d : src;
      E* dst = tile + (paired ? pair_row(r) : r) * kLd<kD, E> + d;
      const unsigned to = static_cast<unsigned>(__cvta_generic_to_shared(dst));
      // A source size of 0 copies nothing and fills the 16 bytes with zeros.
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(to), "l"(from),
                   "r"(inside ? 16 : 0));
    }
    return;
  }
  for (int e = threadIdx.x; e < kTile * kD; e += kThreads) {
    const int r = e / kD, d = e % kD;
    tile[(paired ? pair_row(r) : r) * kLd<kD, E> + d] =
        row0 + r < rows && d < D ? src[(row0 + r) * ld + d] : E(0.0f);
  }
}

// Note [Tile copies worked out once]
// The kernels' loops copy a 64-row tile of the same operand at every step, 64 rows
// further on each time. load_tile works each copy's rows, columns, bounds and addresses
// out anew from threadIdx.x, and inside a loop that is short of registers the compiler
// does so at every step: in the SASS of the BF16 forward, about 300 of the roughly 790
// instructions a warp issued per 64 x 64 tile (Nsight Compute's count, next to 64
// mma.sync) were the two tiles' address arithmetic. A TileStream works a thread's part
// out once, before the loop: where its first 16-byte piece comes from, how far apart its
// pieces are, where they go in a tile, and how many rows it has before the operand
// ends. A tile then costs per copy one compare, one address addition and the cp.async;
// the destinations are one shared address plus constants. The tile is the same as
// load_tile's, rows in plain order, so either may fill it. At kD = 128 the kernels' own
// accumulators leave no registers to keep the stream in (the backward spilled), so
// there it copies as load_tile does.
template <int kD, typename E>
class TileStream {
 public:
  // Copies of rows of the [rows, D] matrix at `src`, rows `ld` elements apart, with
  // 16-byte pieces where `vectors` (vectors_ok in attention.cuh), else load_tile's
  // element-by-element path.
  __device__ TileStream(const E* src, int64_t ld, int rows, int D, bool vectors)
      : src_(src), ld_(ld), rows_(rows), D_(D), vectors_(vectors) {
    const int row = threadIdx.x / kPieces, col = threadIdx.x % kPieces * kLanes;
    first_ = src + row * ld + col;
    offset_ = static_cast<unsigned>(sizeof(E) * (row * kLd<kD, E> + col));
    // Rows this thread may read, counted from its own first row: none past column D.
    left_ = col < D ? rows - row : INT32_MIN / 2;
  }

  // Starts copying rows [row0, row0 + 64) into `tile`, zeros past the last row and past
  // column D; wait_tiles and a __syncthreads() make them visible, as for load_tile.
  __device__ void load(E* tile, int row0) const {
    if (!kKept || !vectors_) {
      load_tile<kD>(tile, src_, ld_, row0, rows_, D_, vectors_, false);
      return;
    }
    const unsigned to = static_cast<unsigned>(__cvta_generic_to_shared(tile)) + offset_;
    const E* from = first_ + row0 * ld_;
    const int left = left_ - row0;
#pragma unroll
    for (int n = 0; n < kCopies; ++n, from += kRowStep * ld_) {
      const bool inside = n * kRowStep < left;
      // A source size of 0 copies nothing and fills the 16 bytes with zeros.
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(
                       to + static_cast<unsigned>(sizeof(E) * n * kRowStep * kLd<kD, E>)),
                   "l"(inside ? from : src_), "r"(inside ? 16 : 0));
    }
  }

 private:
  static constexpr bool kKept = kD <= 64;              // the stream's state in registers
  static constexpr int kLanes = 16 / sizeof(E);        // elements in a 16-byte piece
  static constexpr int kPieces = kD / kLanes;          // pieces in a row
  static constexpr int kRowStep = kThreads / kPieces;  // rows between a thread's pieces
  static constexpr int kCopies = kTile / kRowStep;     // pieces a thread copies a tile
  static_assert(kThreads % kPieces == 0 && kTile % kRowStep == 0, "whole rows a step");
  const E* src_;
  const E* first_;
  int64_t ld_;
  int rows_, D_, left_;
  unsigned offset_;
  bool vectors_;
};

// Closes the group of copies issued since the last call (cp.async.commit_group).
__device__ inline void commit_tiles() { asm volatile("cp.async.commit_group;\n" ::); }

// Waits until at most `kPending` groups of this thread's copies are still in flight;
// a __syncthreads() after it makes every thread's copies visible to the block.
template <int kPending>
__device__ inline void wait_tiles() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

// Note [One barrier a tile]
// The kernels' loops compute on one buffer of streamed tiles while cp.async fills the
// other. Each step needs two guarantees: the tile about to be used has arrived for every
// warp, and no warp still reads the buffer the next copy will overwrite, the one the
// step before used. One barrier gives both if the next copy is issued after it:
//
//   wait_tiles<0>(); __syncthreads();   tile i is in; every warp is done with tile i - 1
//   copy tile i + 1 into the other buffer; commit_tiles();
//   compute on tile i
//
// The copy still has a whole step to land. (Issuing it before the wait, as these
// kernels once did, needed a second barrier at the end of each step, and four warps
// that meet twice a tile wait for the slowest twice.)

}  // namespace zero::ops::cuda::flash
