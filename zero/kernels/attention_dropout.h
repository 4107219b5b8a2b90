/// @file
/// The dropout mask of fused attention (Note [Attention dropout] in
/// kernels/cpu/attention_cpu.cpp), one formula shared by the CPU and the CUDA kernels
/// so that both draw the same mask, and the backward the forward's.
#pragma once

#include <cstdint>

#include "zero/core/philox.h"

namespace zero::ops {

/// The drop probability and Philox stream position of one attention call.
///
/// The probabilities of slice bh = b*H + h are cut into 2 x 2 squares: queries 2a and
/// 2a + 1 against keys 2c and 2c + 1. Square (bh, a, c) takes the four words of Philox
/// block ceil(offset / 4) + (bh * ceil(Tq / 2) + a) * ceil(Tk / 2) + c, word
/// 2 (i % 2) + j % 2 for probability (i, j). A CUDA thread holds exactly such a square
/// (Note [Attention dropout squares] in cuda/attention_dropout_squares.cuh), so one block
/// evaluation gives all four of its factors.
struct AttentionDropout {
  /// Drops with probability `p` in [0, 1), drawing from stream words `offset`.. of `seed`,
  /// for queries of length `tq` against keys of length `tk`.
  ZERO_HOST_DEVICE AttentionDropout(float p, uint64_t seed, uint64_t offset, int64_t tq,
                                    int64_t tk)
      : p(p),
        keep(1.0f / (1.0f - p)),
        seed(seed),
        first_block((offset + 3) / 4),
        half_tq((tq + 1) / 2),
        half_tk((tk + 1) / 2) {}

  /// How many stream words a call starting at `offset` uses: up to the next multiple of
  /// four, then four per square of `bh_count` slices of `tq` x `tk` probabilities.
  ZERO_HOST_DEVICE static uint64_t stream_words(uint64_t offset, int64_t bh_count, int64_t tq,
                                                int64_t tk) {
    const uint64_t squares = static_cast<uint64_t>(bh_count * ((tq + 1) / 2) * ((tk + 1) / 2));
    return (4 - offset % 4) % 4 + 4 * squares;
  }

  /// The factors of square (bh, a, c) into f[2 x + y] for query 2a + x and key 2c + y:
  /// 1/(1 - p) where the word's uniform float is >= p, else 0; all 1 when p = 0 (no
  /// draw is made).
  ZERO_HOST_DEVICE void square(int64_t bh, int64_t a, int64_t c, float f[4]) const {
    if (p == 0.0f) {
      f[0] = f[1] = f[2] = f[3] = 1.0f;
      return;
    }
    const uint32_t bits = square_bits(bh, a, c);
    for (int w = 0; w < 4; ++w) f[w] = (bits >> w & 1u) != 0 ? keep : 0.0f;
  }

  /// The same square as kept flags: bit 2 x + y is set where probability (2a + x, 2c + y)
  /// is kept (its factor 1/(1 - p)). Draws even when p = 0 (all bits then set).
  ZERO_HOST_DEVICE uint32_t square_bits(int64_t bh, int64_t a, int64_t c) const {
    const uint64_t block = first_block + static_cast<uint64_t>((bh * half_tq + a) * half_tk + c);
    const PhiloxBlock words = philox4x32(block, seed);
    uint32_t bits = 0;
    for (int w = 0; w < 4; ++w) bits |= (philox_word_to_uniform(words.x[w]) >= p ? 1u : 0u) << w;
    return bits;
  }

  /// These draws moved by `*shift` stream words, a multiple of 4 (a CUDA graph's Philox
  /// shift, core/cuda_graph.h); itself when `shift` is null. Device code only: kernels
  /// call it once at their start.
  ZERO_HOST_DEVICE AttentionDropout shifted() const {
    AttentionDropout d = *this;
    if (shift != nullptr) d.first_block += *shift / 4;
    d.shift = nullptr;
    return d;
  }

  /// The factor of probability (bh, i, j) alone: f[2 (i % 2) + j % 2] of its square.
  ZERO_HOST_DEVICE float factor(int64_t bh, int64_t i, int64_t j) const {
    float f[4];
    square(bh, i / 2, j / 2, f);
    return f[2 * (i % 2) + j % 2];
  }

  float p;               ///< Drop probability; 0 means no dropout.
  float keep;            ///< 1 / (1 - p), the factor of a kept probability.
  uint64_t seed;         ///< Philox key.
  uint64_t first_block;  ///< Philox block of square (0, 0, 0): the offset rounded up to 4 words.
  int64_t half_tq;       ///< ceil(Tq / 2): squares down a slice.
  int64_t half_tk;       ///< ceil(Tk / 2): squares across a slice.
  /// Null, or the device address of a shift added to the offset (see `shifted`).
  const uint64_t* shift = nullptr;
};

}  // namespace zero::ops
