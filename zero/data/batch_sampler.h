/// @file
/// `BatchSampler`: random training windows of a token sequence, prefetched to the GPU.
///
/// Each batch holds `batch` windows of `block + 1` consecutive tokens at random
/// offsets; x is the first `block` tokens of each window and y the last `block`, so y
/// is x shifted by one: the next-token targets. The offsets come from a Philox stream,
/// so the sampler's whole state is (seed, position) and a resumed run draws exactly the
/// batches the interrupted one would have drawn. See Note [Prefetching batches] in
/// batch_sampler.cpp for how batches reach the GPU.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "zero/core/tensor.h"

namespace zero::data {

/// Draws seeded random batches (x, y) of token windows on a device.
class BatchSampler {
 public:
  /// A sampler over `tokens` making I32 [batch, block] tensors on `device`.
  /// @throws zero::Error if `batch` or `block` is not positive, or `block` is not
  /// below `tokens.size() - 1` (too few distinct windows), naming both numbers.
  BatchSampler(std::vector<int32_t> tokens, int64_t batch, int64_t block, uint64_t seed,
               Device device);
  /// Waits for copies still reading its pinned staging buffers, then frees them.
  ~BatchSampler();
  /// Move-only (it owns pinned staging memory on CUDA).
  BatchSampler(BatchSampler&& other) noexcept;
  /// Move-only (it owns pinned staging memory on CUDA).
  BatchSampler& operator=(BatchSampler&& other) noexcept;

  /// The next batch: x, y I32 [batch, block] on the sampler's device, y[b][t] = x[b][t+1]
  /// within each window. Advances `position()` by `batch` (by `batch * world` when
  /// sharded). On CUDA it also starts copying the batch after it, so the next call finds
  /// it already on its way.
  std::pair<Tensor, Tensor> Next();

  /// Makes this sampler rank `rank`'s shard of `world` samplers with the same seed: each
  /// `Next()` returns rows [rank * batch, (rank + 1) * batch) of the batch of `world *
  /// batch` windows that an unsharded sampler would draw at the same position, and
  /// advances past the whole of it. So `world` ranks with batch B together see exactly
  /// the batches of one sampler with batch world * B (data-parallel training).
  /// @throws zero::Error unless 0 <= rank < world.
  void SetShard(int64_t rank, int64_t world);

  /// The seed of the offset stream.
  uint64_t seed() const { return seed_; }
  /// Index of the next offset drawn from the stream (`batch` per call of `Next`).
  uint64_t position() const { return position_; }
  /// Continues from `position` (a value `position()` returned), for resuming a run.
  void SetPosition(uint64_t position);

  /// Offset in the token sequence of window `index` of the stream: philox_word(seed,
  /// index) scaled to [0, tokens - block - 1]. Exposed for tests and for the chapter text.
  int64_t WindowOffset(uint64_t index) const;

  /// Windows per batch.
  int64_t batch() const { return batch_; }
  /// Tokens per window row (the model's context length T).
  int64_t block() const { return block_; }
  /// Where the batches are made.
  Device device() const { return device_; }

 private:
  struct Staged {  // a batch whose copy to the GPU has been issued
    uint64_t position = 0;
    Tensor x, y;  // (B, T) each
  };
  void FillWindows(uint64_t position, int32_t* x, int32_t* y) const;
  Staged Stage(uint64_t position);

  std::vector<int32_t> tokens_;
  int64_t batch_ = 0, block_ = 0;
  uint64_t seed_ = 0, position_ = 0;
  int64_t shard_rank_ = 0, shard_world_ = 1;  // SetShard
  Device device_;
  struct StagingSlot;                        // pinned x and y buffers + an event
  std::unique_ptr<StagingSlot> staging_[2];  // CUDA only: alternating slots
  int next_slot_ = 0;
  Staged pending_;  // CUDA only: the prefetched batch (x undefined when there is none)
};

}  // namespace zero::data
